// Strict mode's order (the paper's hard ranking, then, within each tier, the items on which every
// forbidden concept is verified NOT_HAS first) from two hard searches: the hard top k, and, when
// some of it is not verified, the hard top k among verified items. Any item of the strict top k is
// in one of them (everything ranked above it in the hard order is above it here too), so merging
// them is exact. The one implementation of that merge: the index runs it under its read lock
// (Index::search_strict), and the Recall run (recall_run.hpp) runs it for a store that cannot
// search strict in one call (Milvus, storage/milvus/backend.py) with the store's two searches.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace polarmem::strict {

struct Row {
  std::int64_t key = 0;  // the item: a slot, or the caller's own number for it
  std::int8_t tier = 0;
  bool verified = false;  // every forbidden concept is NOT_HAS on it
  std::int8_t flags = 0;  // confidence flags within the tier (0 without)
  float score = 0.0f;     // s_sem
  float rank_value = 0.0f;  // what the hard order ranked by within (tier, flags): s_sem without weights
};

// Whether the second search is needed: there are forbidden concepts and some hard hit is not
// verified (otherwise the hard top k is already the strict top k).
bool needs_verified_search(bool has_forbidden, const std::vector<Row>& hard);

// The strict top k: the hard rows, then the verified search's rows not among them (by key),
// stably ordered by (tier, verified, flags, rank_value), all descending: equal keys keep the hard
// list's order first, then the verified search's.
std::vector<Row> merge(std::vector<Row> hard, const std::vector<Row>& verified, std::size_t k);

}  // namespace polarmem::strict
