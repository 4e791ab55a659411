// Stored item records by index slot (serialised polarmem.storage.v1.ItemRecord, as the store
// holds them), so the compiled Recall front can explain hits — reasons, text, uri, metadata —
// without the interpreter. The library sets a slot's record when it writes the item, clears it
// when the item goes, and fills a slot it finds empty from the records it reads for its own
// answers (items stored before a start-up arrive that way: start-up reads only index records).
// The core never parses the bytes; the front does.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "polarmem/rw_lock.hpp"

namespace polarmem {

class ItemRecords {
 public:
  // The item's current record (a write: always replaces what the slot held).
  void set(std::int64_t slot, std::string record);
  // A record read back: kept only where the slot holds none, so a read that raced a write never
  // puts the older version back.
  void fill(std::int64_t slot, std::string record);
  void clear(std::int64_t slot);
  // A compaction moved the slots: new_of_old[slot] is the new slot, -1 for a dropped one.
  void renumber(const std::vector<std::int64_t>& new_of_old);
  // Appends each slot's record to `out` under one read lock; false (out unchanged) when a slot
  // holds none.
  bool get(const std::int64_t* slots, std::size_t count, std::vector<std::string>* out) const;
  std::size_t count() const;
  std::size_t bytes() const;

 private:
  mutable RwLock lock_;
  std::vector<std::string> records_;  // by slot; "" = none held
  std::size_t count_ = 0, bytes_ = 0;
};

}  // namespace polarmem
