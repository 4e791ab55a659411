// The opt-in recency term within logic tiers (a Recall that sets recency_half_life_s): the one
// implementation, which the Recall run (recall_run.hpp) calls with its store's searches and
// record reads, for the library and the compiled front alike.
//
// Within each tier an item ranks by s_sem + weight * 2^(-age / half_life), where age is now minus
// the item's updated_ms (created_ms when never updated), never negative. The tier still comes
// first (hard; off has one tier), so a recent contradicting note never passes an older consistent
// one. Ties keep the search's order (tier, s_sem, then the lower slot).
//
// Exact, not a re-sort of the search's top k: the search returns candidates ordered by (tier,
// s_sem); with the top c of them (first c = 4k) and their stamps read at once, the k-th best final
// value is final when its tier is exhausted among the candidates, or when the last candidate's
// s_sem + weight is at most that value (an item not retrieved has s_sem at most the last one's and
// a recency factor at most 1, so it cannot pass). Otherwise c doubles, up to the eligible items
// (the tier counts) and kMaxTopK.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace polarmem::recency {

inline constexpr std::size_t kFirstCandidatesPerHit = 4;

struct Candidate {
  std::string id;
  int tier = 0;
  double score = 0.0;  // s_sem (as the backend gave it)
};

struct Searched {
  std::vector<Candidate> hits;  // in the search's order
  std::array<std::int64_t, 3> tier_counts{0, 0, 0};
};

// The search's top `c` by (tier, s_sem) (by s_sem alone where the order has one tier).
using RunSearch = std::function<Searched(std::size_t c)>;
// Per id, its updated_ms (created_ms when never updated); nullopt: forgotten since the search.
using ReadStamps = std::function<std::vector<std::optional<std::int64_t>>(const std::vector<std::string>& ids)>;

struct Ranked {
  std::vector<Candidate> rows;  // the top k in rank order
  std::array<std::int64_t, 3> tier_counts{0, 0, 0};  // the first search's
  std::size_t candidates = 0;  // how many the last search asked for
  bool exact = true;           // false only when kMaxTopK candidates could not prove it
};

struct Term {
  double half_life_s = 0.0;
  double weight = 0.0;
};

// 2^(-age / half_life), age in seconds from `stamp_ms` to `now_ms`, never negative.
double factor(std::int64_t stamp_ms, std::int64_t now_ms, double half_life_s);

// The exact top k by (tier, s_sem + weight * factor) (the file comment); `tiered` false: one tier.
Ranked rank(std::size_t k, bool tiered, const Term& term, std::int64_t now_ms, std::size_t max_candidates,
            const RunSearch& search, const ReadStamps& read);

// What mode_reason says of a recency recall.
std::string describe(const Ranked& ranked, const Term& term);

}  // namespace polarmem::recency
