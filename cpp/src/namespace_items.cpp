// NamespaceItems (namespace_items.hpp): one call per write keeps the index, ids, metadata
// postings, records, slot map and counts of a namespace in step.
#include "polarmem/namespace_items.hpp"

#include <mutex>

#include "polarmem/error.hpp"

namespace polarmem {
namespace {

constexpr std::uint8_t kStorageVisual = 1;  // common/v1 ItemKind
constexpr std::uint8_t kIndexVisual = 1, kIndexText = 2;
constexpr double kCompactAtTombstoneShare = 0.25;

// One item's concept ids as the index's one-item CSR.
struct OneItem {
  std::int64_t has_indptr[2], not_indptr[2];
  explicit OneItem(const layout::IndexFields& f)
      : has_indptr{0, static_cast<std::int64_t>(f.has.size())},
        not_indptr{0, static_cast<std::int64_t>(f.not_has.size())} {}
};

}  // namespace

NamespaceItems::NamespaceItems(std::string name, std::shared_ptr<Index> index, std::shared_ptr<ItemIds> ids,
                               std::shared_ptr<MetadataPostings> metadata)
    : name_(std::move(name)), index_(std::move(index)), ids_(std::move(ids)), metadata_(std::move(metadata)) {}

void NamespaceItems::keep_records() {
  std::unique_lock guard(lock_);
  if (!records_) records_ = std::make_shared<ItemRecords>();
}

std::shared_ptr<ItemRecords> NamespaceItems::records() const {
  std::shared_lock guard(lock_);
  return records_;
}

std::optional<std::int64_t> NamespaceItems::slot(std::string_view id) const {
  std::shared_lock guard(lock_);
  const auto found = slot_of_.find(std::string(id));
  if (found == slot_of_.end()) return std::nullopt;
  return found->second;
}

std::vector<std::pair<std::string, std::int64_t>> NamespaceItems::slots() const {
  std::shared_lock guard(lock_);
  return {slot_of_.begin(), slot_of_.end()};
}

NamespaceItems::Counts NamespaceItems::counts() const {
  std::shared_lock guard(lock_);
  return counts_;
}

void NamespaceItems::count(const layout::IndexFields& item, std::int64_t sign) {
  counts_.kinds[item.kind] += sign;
  for (const auto c : item.has) counts_.has[c] += sign;
  for (const auto c : item.not_has) counts_.not_has[c] += sign;
  for (const auto c : item.align) counts_.align[c] += sign;
  counts_.scored += sign * static_cast<std::int64_t>(item.scored);
}

void NamespaceItems::add(const std::vector<std::string>& ids, const std::vector<std::string_view>& index_records,
                         const std::vector<VectorInput>& vectors, const ConceptGrades& grades,
                         const std::vector<std::string_view>& records) {
  if (index_records.size() != ids.size() || (!records.empty() && records.size() != ids.size()))
    fail(ErrorCode::kInvalidArgument, "one index record (and one record, where given) per id expected");
  std::vector<layout::IndexFields> items;
  items.reserve(ids.size());
  for (const auto record : index_records) items.push_back(layout::decode_index_record(record));
  std::vector<std::uint8_t> kinds;
  std::vector<std::int64_t> has_indptr{0}, not_indptr{0};
  std::vector<std::uint32_t> has, not_has;
  for (const auto& item : items) {
    kinds.push_back(item.kind == kStorageVisual ? kIndexVisual : kIndexText);
    has.insert(has.end(), item.has.begin(), item.has.end());
    not_has.insert(not_has.end(), item.not_has.begin(), item.not_has.end());
    has_indptr.push_back(static_cast<std::int64_t>(has.size()));
    not_indptr.push_back(static_cast<std::int64_t>(not_has.size()));
  }
  ItemBatch batch;
  batch.count = ids.size();
  batch.kinds = kinds.data();
  batch.vectors = vectors;
  batch.has = {has_indptr.data(), has.data()};
  batch.not_has = {not_indptr.data(), not_has.data()};
  batch.grades = grades;

  const auto first = static_cast<std::int64_t>(index_->size());
  {
    std::unique_lock guard(lock_);
    if (index_->size() != ids_->size())
      fail(ErrorCode::kFailedPrecondition, "namespace '" + name_ + "': index slots out of step with item ids");
    ids_->append(ids);
    for (std::size_t row = 0; row < ids.size(); ++row) slot_of_[ids[row]] = first + static_cast<std::int64_t>(row);
  }
  try {
    index_->add(batch);
  } catch (...) {
    std::unique_lock guard(lock_);
    ids_->truncate(static_cast<std::size_t>(first));
    for (const auto& id : ids) slot_of_.erase(id);
    // A read-back fill may have reached the named slots meanwhile; they go back empty.
    if (records_)
      for (std::size_t row = 0; row < ids.size(); ++row) records_->clear(first + static_cast<std::int64_t>(row));
    throw;
  }
  std::unique_lock guard(lock_);
  for (std::size_t row = 0; row < items.size(); ++row) {
    const auto slot = first + static_cast<std::int64_t>(row);
    count(items[row], +1);
    if (!items[row].metadata.empty()) metadata_->add(slot, items[row].metadata);
    if (records_ && !records.empty()) records_->set(slot, std::string(records[row]));
  }
}

void NamespaceItems::replace(std::string_view previous, std::string_view record,
                             const std::vector<VectorInput>& vectors, const ConceptGrades& grades) {
  const layout::ItemFields before = layout::read_item(previous);
  const layout::ItemFields after = layout::read_item(record);
  const auto at = slot(after.id);
  if (!at) fail(ErrorCode::kFailedPrecondition, "item '" + after.id + "' is not stored in namespace '" + name_ + "'");
  const std::int64_t slot = *at;
  {
    std::unique_lock guard(lock_);
    count(before.index, -1);
  }
  if (!before.index.metadata.empty()) metadata_->remove(slot, before.index.metadata);
  const OneItem lists(after.index);
  index_->set_concepts(&slot, 1, {lists.has_indptr, after.index.has.data()},
                       {lists.not_indptr, after.index.not_has.data()}, grades);
  for (const VectorInput& input : vectors) index_->set_vectors(&slot, 1, input);
  std::unique_lock guard(lock_);
  count(after.index, +1);
  if (!after.index.metadata.empty()) metadata_->add(slot, after.index.metadata);
  if (records_) records_->set(slot, std::string(record));
}

bool NamespaceItems::remove(std::string_view record) {
  const layout::ItemFields item = layout::read_item(record);
  std::int64_t slot;
  {
    std::unique_lock guard(lock_);
    const auto found = slot_of_.find(item.id);
    if (found == slot_of_.end())
      fail(ErrorCode::kFailedPrecondition, "item '" + item.id + "' is not stored in namespace '" + name_ + "'");
    slot = found->second;
    slot_of_.erase(found);
  }
  index_->remove(&slot, 1);
  ids_->clear(slot);
  {
    std::unique_lock guard(lock_);
    if (records_) records_->clear(slot);
    count(item.index, -1);
  }
  if (!item.index.metadata.empty()) metadata_->remove(slot, item.index.metadata);
  const std::size_t size = index_->size(), tombstones = size - index_->live_count();
  if (tombstones < compact_min_tombstones || static_cast<double>(tombstones) < kCompactAtTombstoneShare * size)
    return false;
  compact();
  return true;
}

std::vector<std::int64_t> NamespaceItems::compact() {
  ids_->begin_renumbering();
  std::vector<std::int64_t> new_of_old;
  try {
    new_of_old = index_->compact();
    const std::vector<std::string> old_ids = ids_->all();
    std::vector<std::string> id_of(index_->size());
    for (std::size_t old = 0; old < new_of_old.size() && old < old_ids.size(); ++old)
      if (new_of_old[old] >= 0) id_of[static_cast<std::size_t>(new_of_old[old])] = old_ids[old];
    std::unique_lock guard(lock_);
    slot_of_.clear();
    for (std::size_t slot = 0; slot < id_of.size(); ++slot)
      if (!id_of[slot].empty()) slot_of_[id_of[slot]] = static_cast<std::int64_t>(slot);
    ids_->replace_all(std::move(id_of));
    metadata_->renumber(new_of_old);
    if (records_) records_->renumber(new_of_old);
  } catch (...) {
    ids_->end_renumbering();
    throw;
  }
  ids_->end_renumbering();
  return new_of_old;
}

void NamespaceItems::fill_records(const std::vector<std::string>& ids,
                                  const std::vector<std::optional<std::string>>& records) {
  const std::uint64_t generation = ids_->generation();
  const std::shared_ptr<ItemRecords> held = this->records();
  if (!held || generation % 2) return;
  std::vector<std::int64_t> filled;
  for (std::size_t i = 0; i < ids.size() && i < records.size(); ++i) {
    const auto at = slot(ids[i]);
    if (at && records[i]) {
      held->fill(*at, *records[i]);
      filled.push_back(*at);
    }
  }
  if (ids_->generation() != generation)
    for (const auto slot : filled) held->clear(slot);
}

}  // namespace polarmem
