// One namespace's items in the local backend's memory: the compiled index, the ids by slot, the
// metadata postings and the serialised records by slot, kept in step by one call per write, with
// the slot of each item id and the live counts GetNamespace reports. Every door's writes go
// through it (storage/local/namespace_index.py calls it; a native Remember is the next caller),
// and it reads what it needs of an item from its index record or its serialised ItemRecord
// (item_layout.hpp).
//
// Writers are serialised by the caller (the namespace's write lock); readers (slot, counts,
// the index's searches, the ids' resolves) run beside them. A compaction renumbers the slots with
// the ids' generation odd, as ItemIds documents.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "polarmem/index.hpp"
#include "polarmem/item_ids.hpp"
#include "polarmem/item_layout.hpp"
#include "polarmem/item_records.hpp"
#include "polarmem/metadata_postings.hpp"

namespace polarmem {

class NamespaceItems {
 public:
  // Live items by storage ItemKind and by concept per polarity (a count that falls to zero stays
  // listed), and the scored-concept total.
  struct Counts {
    std::unordered_map<std::uint8_t, std::int64_t> kinds;
    std::unordered_map<std::uint32_t, std::int64_t> has, not_has, align;
    std::int64_t scored = 0;
  };

  NamespaceItems(std::string name, std::shared_ptr<Index> index, std::shared_ptr<ItemIds> ids,
                 std::shared_ptr<MetadataPostings> metadata);

  // From now on hold the items' serialised records by slot (what the compiled front explains
  // from): those written from now on and those read back (fill_records).
  void keep_records();
  std::shared_ptr<ItemRecords> records() const;  // null until keep_records

  std::optional<std::int64_t> slot(std::string_view id) const;
  std::vector<std::pair<std::string, std::int64_t>> slots() const;
  Counts counts() const;

  // Appends new items: their ids, index records, vectors and grades as Index::add takes them
  // (one row per item; kinds and concepts come from the index records) and, where given, their
  // serialised records. The slots are named before the index holds them, so a search resolves
  // every slot it sees; a failed add unnames them. kFailedPrecondition when the index and the
  // ids are out of step.
  void add(const std::vector<std::string>& ids, const std::vector<std::string_view>& index_records,
           const std::vector<VectorInput>& vectors, const ConceptGrades& grades,
           const std::vector<std::string_view>& records);
  // A stored item's new version (its serialised records before and after): concepts and grades
  // set, each space's vectors set from `vectors` (one row, as Index::set_vectors takes it), the
  // counts and metadata moved. kFailedPrecondition when the item is not stored.
  void replace(std::string_view previous, std::string_view record, const std::vector<VectorInput>& vectors,
               const ConceptGrades& grades);
  // Removes a stored item (its serialised record); compacts once tombstones are a quarter of
  // the slots and at least compact_min_tombstones (tests lower it). Returns whether it compacted.
  bool remove(std::string_view record);
  // Drops the index's tombstones and renumbers ids, metadata and records; returns new_of_old.
  std::vector<std::int64_t> compact();
  // Records read back for items that hold none yet. Fills that a compaction overtook are undone
  // (the front then hands such hits over once more, and they are filled again).
  void fill_records(const std::vector<std::string>& ids, const std::vector<std::optional<std::string>>& records);

 private:
  void count(const layout::IndexFields& item, std::int64_t sign);

  std::string name_;
  std::shared_ptr<Index> index_;
  std::shared_ptr<ItemIds> ids_;
  std::shared_ptr<MetadataPostings> metadata_;
  std::shared_ptr<ItemRecords> records_;

 public:
  std::size_t compact_min_tombstones = 1024;

 private:
  mutable std::shared_mutex lock_;  // slot_of_, counts_, records_ (the pointer)
  std::unordered_map<std::string, std::int64_t> slot_of_;
  Counts counts_;
};

}  // namespace polarmem
