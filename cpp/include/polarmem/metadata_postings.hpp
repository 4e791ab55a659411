// The slots of each metadata (key, value) pair of one namespace: what a metadata_equals filter
// turns into a search's allow-list. Kept in the core, beside ItemIds, so the library and the
// compiled Recall front filter from the same table, the front without the interpreter.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "polarmem/rw_lock.hpp"

namespace polarmem {

using MetadataPair = std::pair<std::string, std::string>;

class MetadataPostings {
 public:
  // The slot's item has these pairs (a new item, or an item's new version after remove()).
  void add(std::int64_t slot, const std::vector<MetadataPair>& pairs);
  // The slot's item no longer has these pairs (removed, or about to be replaced).
  void remove(std::int64_t slot, const std::vector<MetadataPair>& pairs);
  // A compaction moved the slots: new_of_old[slot] is the new slot, -1 for a dropped one.
  void renumber(const std::vector<std::int64_t>& new_of_old);
  // The slots holding every pair, ascending (every pair must match: none given, none match).
  std::vector<std::int64_t> matching(const std::vector<MetadataPair>& pairs) const;

 private:
  static std::string key_of(const MetadataPair& pair);

  mutable RwLock lock_;
  // key_of(pair) -> its slots, ascending. Sorted vectors, not bitmaps: a key with a value per
  // item (a session id) would cost a bitmap chunk per value.
  std::unordered_map<std::string, std::vector<std::int64_t>> slots_;
};

}  // namespace polarmem
