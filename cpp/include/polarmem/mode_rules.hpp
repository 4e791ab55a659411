// Two rules of the logic's modes, which the Recall run (recall_run.hpp) applies for every door:
// adaptive's choice between hard and soft, and which items a Recall lists as suppressed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "polarmem/index.hpp"

namespace polarmem::modes {

// Adaptive settles on hard only when the hard top k's weakest similarity is within this margin
// of the best similarity of any eligible item (the library's ADAPTIVE_MARGIN).
inline constexpr double kAdaptiveMargin = 0.15;

// What adaptive reads of a query before it searches.
struct AdaptiveQuery {
  // Words of the text that bound to no concept, and those a closed vocabulary mapped to one by
  // similarity: either makes the constraints uncertain. Empty when the names were explicit.
  std::vector<std::string> unknown;
  std::vector<std::string> mapped;
  bool constrained = false;  // required or forbidden concepts
  bool similarity = false;   // the query has vectors (or a text to embed)
};

// A search a mode's rule asks for: the Recall's own vectors, concepts and filters (kinds,
// metadata, exactness) in `mode`, its top `k`, conflicts excluded or not, ranked by (tier, s_sem)
// alone (no confidence ranking: a surer, less similar item ranked first would flip adaptive's
// gate to soft).
struct RuleSearch {
  SearchMode mode = SearchMode::kOff;
  std::size_t k = 1;
  bool exclude_conflicts = false;
};
// The caller runs it on its backend: its hits as (tier, s_sem), in order.
using RunRuleSearch = std::function<std::vector<std::pair<int, double>>(const RuleSearch&)>;

struct AdaptiveChoice {
  bool hard = false;  // false: soft
  std::string reason;  // what mode_reason says of the choice
};

// Soft when the constraints are uncertain or absent, or fewer than k items are compatible, or
// the hard top k's weakest similarity falls more than kAdaptiveMargin below the best of any
// eligible item; hard otherwise (and without a similarity query once k items are compatible).
// Searches only as needed: the hard top k (conflicts excluded as the Recall asks), then the
// plain-similarity top 1 (conflicts kept).
AdaptiveChoice choose_adaptive(const AdaptiveQuery& query, std::size_t k, bool exclude_conflicts,
                               const RunRuleSearch& run);

// The search suppressed hits are picked from: plain similarity, the Recall's k, conflicts kept.
RuleSearch suppressed_search(std::size_t k);

// The positions in a plain-similarity search's hits (`ids`, `tiers`, in its order) of the first
// `n` the logic kept out: tier -1 (a conflict) and not among the Recall's `kept` hits.
std::vector<std::size_t> suppressed(const std::vector<std::string>& kept, const std::vector<std::string>& ids,
                                    const std::vector<std::int8_t>& tiers, std::size_t n);

}  // namespace polarmem::modes
