// The logic tiers of one query over every slot, computed from the concept bitmaps in one pass
// a chunk of 1,024 words at a time: each tier's size and, when kept, each tier's words (slot s
// is bit s % 64 of word s / 64). The approximate search walks a tier with these words as its
// filter, so one pass serves the counts, the filter and the tier of every hit.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "polarmem/simd.hpp"
#include "polarmem/slot_bitmap.hpp"

namespace polarmem {

class TierTable {
 public:
  // Tier indices into counts() and words(): the order of SearchResult::tier_counts.
  static constexpr int kConflictIndex = 0, kNeutralIndex = 1, kEntailedIndex = 2;

  struct Sources {
    const SlotBitmap* live = nullptr;
    const SlotBitmap* kind = nullptr;  // eligible: in it (kind_negated: not in it); nullptr: any
    bool kind_negated = false;
    const std::uint64_t* allow = nullptr;  // word_count words; nullptr: every slot
    std::vector<const SlotBitmap*> conflict;  // an eligible slot in any of these is in conflict
    std::vector<const SlotBitmap*> entailed;  // else in any of these: entailed; else neutral
    std::size_t word_count = 0;
  };

  // One word's tiers, read straight from the bitmaps (for scans that visit words in their own
  // order); the same split as the table's.
  struct Word {
    std::uint64_t conflict;
    std::uint64_t neutral;
    std::uint64_t entailed;
  };
  static Word word_at(const Sources& sources, std::size_t word) noexcept {
    std::uint64_t eligible = sources.live->word(word);
    if (sources.kind) eligible &= sources.kind_negated ? ~sources.kind->word(word) : sources.kind->word(word);
    if (sources.allow) eligible &= sources.allow[word];
    std::uint64_t conflict = 0;
    std::uint64_t entailed = 0;
    for (const SlotBitmap* b : sources.conflict) conflict |= b->word(word);
    for (const SlotBitmap* b : sources.entailed) entailed |= b->word(word);
    conflict &= eligible;
    entailed &= eligible & ~conflict;
    return {conflict, eligible & ~conflict & ~entailed, entailed};
  }

  TierTable(const Sources& sources, bool keep_words, const Kernels& kernels);

  const std::array<std::int64_t, 3>& counts() const noexcept { return counts_; }
  // A tier's words (kept tables only), word_count of them.
  const std::uint64_t* words(int tier_index) const noexcept { return words_.get() + tier_index * word_count_; }
  // Word w of the three tiers (kept tables only).
  Word word(std::size_t w) const noexcept {
    return {words(kConflictIndex)[w], words(kNeutralIndex)[w], words(kEntailedIndex)[w]};
  }
  // The tier index of an eligible slot (kept tables only); the tier itself is index - 1
  // (kConflict -1, kNeutral 0, kEntailed 1).
  int tier_index(std::size_t slot) const noexcept {
    const std::size_t w = slot / 64;
    const std::uint64_t bit = std::uint64_t{1} << (slot % 64);
    return (words(kEntailedIndex)[w] & bit)   ? kEntailedIndex
           : (words(kConflictIndex)[w] & bit) ? kConflictIndex
                                              : kNeutralIndex;
  }

 private:
  std::size_t word_count_;
  std::array<std::int64_t, 3> counts_{0, 0, 0};
  std::unique_ptr<std::uint64_t[]> words_;  // conflict, neutral, entailed; each word_count words
};

}  // namespace polarmem
