// The body of Kernels::split_tiers, included by each kernel level's translation unit so it is
// compiled with that level's flags (popcount is one instruction from the AVX2 level up, a
// branch-free bit count below it). Internal linkage: no level's copy can stand in for another's.
#pragma once

#include <cstddef>
#include <cstdint>

namespace polarmem {
namespace {

template <typename Popcount>
inline void split_tiers_body(const std::uint64_t* eligible, const std::uint64_t* conflict_any,
                             const std::uint64_t* entailed_any, std::size_t n, std::uint64_t* const out[3],
                             std::int64_t counts[3], Popcount popcount) {
  std::int64_t conflicts = 0, neutrals = 0, entaileds = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t conflict = conflict_any[i] & eligible[i];
    const std::uint64_t entailed = entailed_any[i] & eligible[i] & ~conflict;
    const std::uint64_t neutral = eligible[i] & ~conflict & ~entailed;
    out[0][i] = conflict;
    out[1][i] = neutral;
    out[2][i] = entailed;
    conflicts += popcount(conflict);
    neutrals += popcount(neutral);
    entaileds += popcount(entailed);
  }
  counts[0] += conflicts;
  counts[1] += neutrals;
  counts[2] += entaileds;
}

}  // namespace
}  // namespace polarmem
