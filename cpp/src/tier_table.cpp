#include "polarmem/tier_table.hpp"

#include <algorithm>
#include <cstring>

namespace polarmem {

TierTable::TierTable(const Sources& sources, bool keep_words, const Kernels& kernels)
    : word_count_(sources.word_count) {
  constexpr std::size_t kChunk = SlotBitmap::kWordsPerChunk;
  if (keep_words) words_.reset(new std::uint64_t[3 * word_count_]);  // every word is written below
  // Per chunk: the eligible, any-conflict and any-entailed words gathered with plain loops the
  // compiler vectorises, then split and counted by the dispatched kernel (hardware popcount).
  alignas(64) std::uint64_t eligible[kChunk];
  alignas(64) std::uint64_t conflict[kChunk];
  alignas(64) std::uint64_t entailed[kChunk];
  alignas(64) std::uint64_t scratch[3][kChunk];
  for (std::size_t first = 0; first < word_count_; first += kChunk) {
    const std::size_t c = first / kChunk;
    const std::size_t n = std::min(kChunk, word_count_ - first);
    std::uint64_t* out[3];
    for (int t = 0; t < 3; ++t) out[t] = keep_words ? words_.get() + t * word_count_ + first : scratch[t];
    const std::uint64_t* live = sources.live->chunk(c);
    const std::uint64_t* kind = sources.kind ? sources.kind->chunk(c) : nullptr;
    if (live == nullptr || (sources.kind && !sources.kind_negated && kind == nullptr)) {
      if (keep_words)
        for (auto* o : out) std::memset(o, 0, n * sizeof(std::uint64_t));
      continue;
    }
    std::memcpy(eligible, live, n * sizeof(std::uint64_t));
    if (kind != nullptr) {
      if (sources.kind_negated)
        for (std::size_t i = 0; i < n; ++i) eligible[i] &= ~kind[i];
      else
        for (std::size_t i = 0; i < n; ++i) eligible[i] &= kind[i];
    }
    if (sources.allow) {
      const std::uint64_t* allow = sources.allow + first;
      for (std::size_t i = 0; i < n; ++i) eligible[i] &= allow[i];
    }
    auto any_of = [&](const std::vector<const SlotBitmap*>& bitmaps, std::uint64_t* into) {
      std::memset(into, 0, n * sizeof(std::uint64_t));
      for (const SlotBitmap* b : bitmaps) {
        if (const std::uint64_t* words = b->chunk(c)) {
          for (std::size_t i = 0; i < n; ++i) into[i] |= words[i];
        }
      }
    };
    any_of(sources.conflict, conflict);
    any_of(sources.entailed, entailed);
    kernels.split_tiers(eligible, conflict, entailed, n, out, counts_.data());
  }
}

}  // namespace polarmem
