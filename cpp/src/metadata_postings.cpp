#include "polarmem/metadata_postings.hpp"

#include <algorithm>
#include <iterator>
#include <mutex>
#include <shared_mutex>

namespace polarmem {

std::string MetadataPostings::key_of(const MetadataPair& pair) {
  // The key's length first: keys and values may hold any byte, so no separator is safe.
  std::string key = std::to_string(pair.first.size());
  key.push_back(':');
  key.append(pair.first).append(pair.second);
  return key;
}

void MetadataPostings::add(std::int64_t slot, const std::vector<MetadataPair>& pairs) {
  std::unique_lock lock(lock_);
  for (const MetadataPair& pair : pairs) {
    std::vector<std::int64_t>& slots = slots_[key_of(pair)];
    // New items take the next slots, so this is an append but for replaced items.
    const auto at = std::lower_bound(slots.begin(), slots.end(), slot);
    if (at == slots.end() || *at != slot) slots.insert(at, slot);
  }
}

void MetadataPostings::remove(std::int64_t slot, const std::vector<MetadataPair>& pairs) {
  std::unique_lock lock(lock_);
  for (const MetadataPair& pair : pairs) {
    const auto found = slots_.find(key_of(pair));
    if (found == slots_.end()) continue;
    std::vector<std::int64_t>& slots = found->second;
    const auto at = std::lower_bound(slots.begin(), slots.end(), slot);
    if (at != slots.end() && *at == slot) slots.erase(at);
    if (slots.empty()) slots_.erase(found);
  }
}

void MetadataPostings::renumber(const std::vector<std::int64_t>& new_of_old) {
  std::unique_lock lock(lock_);
  for (auto entry = slots_.begin(); entry != slots_.end();) {
    std::vector<std::int64_t> moved;
    moved.reserve(entry->second.size());
    for (const std::int64_t slot : entry->second) {
      const auto old = static_cast<std::size_t>(slot);
      if (old < new_of_old.size() && new_of_old[old] >= 0) moved.push_back(new_of_old[old]);
    }
    std::sort(moved.begin(), moved.end());  // compaction keeps the order; sorting costs nothing then
    if (moved.empty()) {
      entry = slots_.erase(entry);
    } else {
      entry->second = std::move(moved);
      ++entry;
    }
  }
}

std::vector<std::int64_t> MetadataPostings::matching(const std::vector<MetadataPair>& pairs) const {
  std::shared_lock lock(lock_);
  std::vector<const std::vector<std::int64_t>*> lists;
  for (const MetadataPair& pair : pairs) {
    const auto found = slots_.find(key_of(pair));
    if (found == slots_.end()) return {};
    lists.push_back(&found->second);
  }
  if (lists.empty()) return {};
  // Intersect from the shortest list up.
  std::sort(lists.begin(), lists.end(), [](const auto* a, const auto* b) { return a->size() < b->size(); });
  std::vector<std::int64_t> out = *lists[0];
  for (std::size_t i = 1; i < lists.size() && !out.empty(); ++i) {
    std::vector<std::int64_t> kept;
    std::set_intersection(out.begin(), out.end(), lists[i]->begin(), lists[i]->end(), std::back_inserter(kept));
    out.swap(kept);
  }
  return out;
}

}  // namespace polarmem
