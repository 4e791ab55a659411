// A bitmap over slots, stored in 65,536-slot chunks allocated on first write. One per concept
// and polarity: a query reads only the bitmaps of the concepts it names, 64 slots per word,
// and a concept that no item in a slot range states costs no memory there.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace polarmem {

// Set bits of a word. The core is built for baseline x86-64, where std::popcount compiles to a
// call into libgcc (__popcountdi2): a tier pass counts three words per 64 slots, and that call
// was ~4 % of an exact hard search and more of a graph walk at 100,000 items. The instruction
// where the build allows it, else the branch-free SWAR count inline.
inline int popcount64(std::uint64_t x) noexcept {
#if defined(__POPCNT__)
  return __builtin_popcountll(x);
#else
  x = x - ((x >> 1) & 0x5555555555555555ULL);
  x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
  x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0FULL;
  return static_cast<int>((x * 0x0101010101010101ULL) >> 56);
#endif
}

class SlotBitmap {
 public:
  static constexpr std::size_t kWordsPerChunk = 1024;  // 65,536 slots
  static constexpr std::size_t kSlotsPerChunk = kWordsPerChunk * 64;

  std::uint64_t word(std::size_t word_index) const noexcept {
    const std::size_t chunk = word_index / kWordsPerChunk;
    if (chunk >= chunks_.size() || !chunks_[chunk]) return 0;
    return chunks_[chunk][word_index % kWordsPerChunk];
  }

  // Chunk `chunk`'s kWordsPerChunk words, or nullptr where no slot of it was ever set.
  const std::uint64_t* chunk(std::size_t chunk) const noexcept {
    return chunk < chunks_.size() ? chunks_[chunk].get() : nullptr;
  }

  bool test(std::size_t slot) const noexcept { return (word(slot / 64) >> (slot % 64)) & 1u; }

  void set(std::size_t slot) {
    std::uint64_t* w = mutable_word(slot / 64);
    *w |= std::uint64_t{1} << (slot % 64);
  }

  void reset(std::size_t slot) noexcept {
    const std::size_t chunk = slot / kSlotsPerChunk;
    if (chunk >= chunks_.size() || !chunks_[chunk]) return;
    chunks_[chunk][(slot / 64) % kWordsPerChunk] &= ~(std::uint64_t{1} << (slot % 64));
  }

  void assign(std::size_t slot, bool value) {
    if (value) set(slot);
    else reset(slot);
  }

  std::size_t memory_bytes() const noexcept {
    std::size_t allocated = 0;
    for (const auto& c : chunks_) allocated += c ? kWordsPerChunk * sizeof(std::uint64_t) : 0;
    return allocated + chunks_.capacity() * sizeof(chunks_[0]);
  }

 private:
  std::uint64_t* mutable_word(std::size_t word_index) {
    const std::size_t chunk = word_index / kWordsPerChunk;
    if (chunk >= chunks_.size()) chunks_.resize(chunk + 1);
    if (!chunks_[chunk]) chunks_[chunk] = std::make_unique<std::uint64_t[]>(kWordsPerChunk);  // zeroed
    return &chunks_[chunk][word_index % kWordsPerChunk];
  }

  std::vector<std::unique_ptr<std::uint64_t[]>> chunks_;
};

}  // namespace polarmem
