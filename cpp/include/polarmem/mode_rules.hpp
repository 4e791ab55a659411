// Two rules of the logic's modes that the library (polarmem_server/library/recall.py, with any
// backend's searches) and the compiled front (cpp/front, on the namespace's index) both run:
// adaptive's choice between hard and soft, and which items a Recall lists as suppressed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

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

// The hard top k's hits as (tier, s_sem), ranked by (tier, s_sem) alone: a surer, less similar
// item ranked first by confidence would flip the gate to soft.
using HardProbe = std::function<std::vector<std::pair<int, double>>()>;
// The best s_sem of any eligible item (a plain-similarity top 1, conflicts kept).
using BestSimilarity = std::function<double()>;

struct AdaptiveChoice {
  bool hard = false;  // false: soft
  std::string reason;  // what mode_reason says of the choice
};

// Soft when the constraints are uncertain or absent, or fewer than k items are compatible, or
// the hard top k's weakest similarity falls more than kAdaptiveMargin below the best; hard
// otherwise (and without a similarity query once k items are compatible). Probes only as needed.
AdaptiveChoice choose_adaptive(const AdaptiveQuery& query, std::size_t k, const HardProbe& hard,
                               const BestSimilarity& best);

// The positions in a plain-similarity search's hits (`ids`, `tiers`, in its order) of the first
// `n` the logic kept out: tier -1 (a conflict) and not among the Recall's `kept` hits.
std::vector<std::size_t> suppressed(const std::vector<std::string>& kept, const std::vector<std::string>& ids,
                                    const std::vector<std::int8_t>& tiers, std::size_t n);

}  // namespace polarmem::modes
