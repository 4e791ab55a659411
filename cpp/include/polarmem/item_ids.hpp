// Item ids by index slot: the one map from a search's slots to the ids a response names, shared
// by the library (which writes it beside the index) and the compiled Recall front (which reads
// it without the interpreter). A generation counter works as a seqlock for renumbering: odd
// while a compaction moves slots, so a reader that saw it change searches again.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include "polarmem/rw_lock.hpp"

namespace polarmem {

class ItemIds {
 public:
  // Appends ids for the next slots (the index's add fills the same slots). Ids are never empty:
  // an empty string marks a slot without a live item.
  void append(const std::vector<std::string>& ids);
  // Drops the slots from `size` on (undoes an append whose index add failed).
  void truncate(std::size_t size);
  // The slot no longer names an item (removed; its tombstone waits for compaction).
  void clear(std::int64_t slot);
  // Renumbering: begin (generation odd), replace every slot's id, end (even again).
  void begin_renumbering();
  void replace_all(std::vector<std::string> ids);
  void end_renumbering();

  std::size_t size() const;
  // "" for a slot that names no item or lies beyond the table.
  std::string get(std::int64_t slot) const;
  // Appends one id per slot to `out` ("" as in get()), under one read lock.
  void resolve(const std::int64_t* slots, std::size_t count, std::vector<std::string>* out) const;
  std::vector<std::string> all() const;
  std::uint64_t generation() const { return generation_.load(std::memory_order_acquire); }

 private:
  mutable RwLock lock_;
  std::vector<std::string> ids_;
  std::atomic<std::uint64_t> generation_{0};
};

}  // namespace polarmem
