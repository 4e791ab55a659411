#include "polarmem/item_records.hpp"

#include <mutex>
#include <shared_mutex>

namespace polarmem {

namespace {
constexpr std::size_t kMaxSlot = std::size_t{1} << 40;  // a bad slot must not resize the table to it
}

void ItemRecords::set(std::int64_t slot, std::string record) {
  if (slot < 0 || static_cast<std::size_t>(slot) >= kMaxSlot) return;
  std::unique_lock guard(lock_);
  const auto at = static_cast<std::size_t>(slot);
  if (at >= records_.size()) records_.resize(at + 1);
  std::string& held = records_[at];
  count_ += held.empty() && !record.empty();
  count_ -= !held.empty() && record.empty();
  bytes_ = bytes_ - held.size() + record.size();
  held = std::move(record);
}

void ItemRecords::fill(std::int64_t slot, std::string record) {
  {
    std::shared_lock guard(lock_);
    const auto at = static_cast<std::size_t>(slot);
    if (slot >= 0 && at < records_.size() && !records_[at].empty()) return;
  }
  std::unique_lock guard(lock_);
  if (slot < 0 || static_cast<std::size_t>(slot) >= kMaxSlot) return;
  const auto at = static_cast<std::size_t>(slot);
  if (at >= records_.size()) records_.resize(at + 1);
  if (!records_[at].empty() || record.empty()) return;  // a write got there first
  count_ += 1;
  bytes_ += record.size();
  records_[at] = std::move(record);
}

void ItemRecords::clear(std::int64_t slot) { set(slot, std::string()); }

void ItemRecords::renumber(const std::vector<std::int64_t>& new_of_old) {
  std::unique_lock guard(lock_);
  std::vector<std::string> moved;
  count_ = bytes_ = 0;
  for (std::size_t old = 0; old < records_.size() && old < new_of_old.size(); ++old) {
    const std::int64_t to = new_of_old[old];
    if (to < 0 || records_[old].empty()) continue;
    if (static_cast<std::size_t>(to) >= moved.size()) moved.resize(static_cast<std::size_t>(to) + 1);
    count_ += 1;
    bytes_ += records_[old].size();
    moved[static_cast<std::size_t>(to)] = std::move(records_[old]);
  }
  records_.swap(moved);
}

bool ItemRecords::get(const std::int64_t* slots, std::size_t count, std::vector<std::string>* out) const {
  std::shared_lock guard(lock_);
  for (std::size_t i = 0; i < count; ++i) {
    const auto at = static_cast<std::size_t>(slots[i]);
    if (slots[i] < 0 || at >= records_.size() || records_[at].empty()) return false;
  }
  out->reserve(out->size() + count);
  for (std::size_t i = 0; i < count; ++i) out->push_back(records_[static_cast<std::size_t>(slots[i])]);
  return true;
}

std::size_t ItemRecords::count() const {
  std::shared_lock guard(lock_);
  return count_;
}

std::size_t ItemRecords::bytes() const {
  std::shared_lock guard(lock_);
  return bytes_;
}

}  // namespace polarmem
