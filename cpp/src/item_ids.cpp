#include "polarmem/item_ids.hpp"

#include "polarmem/error.hpp"

namespace polarmem {

void ItemIds::append(const std::vector<std::string>& ids) {
  for (const auto& id : ids) {
    if (id.empty()) fail(ErrorCode::kInvalidArgument, "ids: an item id is never empty");
  }
  std::unique_lock guard(lock_);
  ids_.insert(ids_.end(), ids.begin(), ids.end());
}

void ItemIds::truncate(std::size_t size) {
  std::unique_lock guard(lock_);
  if (size < ids_.size()) ids_.resize(size);
}

void ItemIds::clear(std::int64_t slot) {
  std::unique_lock guard(lock_);
  if (slot >= 0 && static_cast<std::size_t>(slot) < ids_.size()) ids_[static_cast<std::size_t>(slot)].clear();
}

void ItemIds::begin_renumbering() { generation_.fetch_add(1, std::memory_order_acq_rel); }

void ItemIds::replace_all(std::vector<std::string> ids) {
  std::unique_lock guard(lock_);
  ids_ = std::move(ids);
}

void ItemIds::end_renumbering() { generation_.fetch_add(1, std::memory_order_acq_rel); }

std::size_t ItemIds::size() const {
  std::shared_lock guard(lock_);
  return ids_.size();
}

std::string ItemIds::get(std::int64_t slot) const {
  std::shared_lock guard(lock_);
  if (slot < 0 || static_cast<std::size_t>(slot) >= ids_.size()) return {};
  return ids_[static_cast<std::size_t>(slot)];
}

void ItemIds::resolve(const std::int64_t* slots, std::size_t count, std::vector<std::string>* out) const {
  std::shared_lock guard(lock_);
  out->reserve(out->size() + count);
  for (std::size_t i = 0; i < count; ++i) {
    const auto slot = slots[i];
    out->push_back(slot >= 0 && static_cast<std::size_t>(slot) < ids_.size() ? ids_[static_cast<std::size_t>(slot)]
                                                                             : std::string());
  }
}

std::vector<std::string> ItemIds::all() const {
  std::shared_lock guard(lock_);
  return ids_;
}

}  // namespace polarmem
