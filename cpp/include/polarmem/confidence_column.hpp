// How sure the memory is that each item holds each concept, one byte per (concept, slot): the
// column a hard search reads when it ranks by confidence weights within a tier (see
// SearchRequest::present_weight). A byte b <= kConfidenceScale means P(present) = b / 254;
// kNotScored means the item has no confidence for the concept, and its stated polarity stands in
// (see ConfidenceWeights). A concept's column is allocated on its first value, so a namespace
// without confidences pays nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "polarmem/slot_bitmap.hpp"

namespace polarmem {

constexpr std::uint8_t kConfidenceScale = 254;  // b / 254: 0.5 is representable (127)
constexpr std::uint8_t kNotScored = 255;

class ConfidenceColumns {
 public:
  void ensure_concepts(std::size_t count);
  void set(std::uint32_t concept_id, std::size_t slot, std::uint8_t value);
  // Forgets every concept's value for `slot` (a replaced item's states start afresh).
  void clear_slot(std::size_t slot) noexcept;
  // Keeps the slots with new_of_old[slot] >= 0, renumbered (Index::compact).
  void compact(const std::vector<std::int64_t>& new_of_old, std::size_t new_size);
  // One concept's column (empty: no item has a value for it); read beyond its end: kNotScored.
  const std::vector<std::uint8_t>& column(std::uint32_t concept_id) const noexcept { return columns_[concept_id]; }
  std::size_t memory_bytes() const noexcept;

 private:
  std::vector<std::vector<std::uint8_t>> columns_;
};

// A query's confidence term: w_present * mean over required concepts of P(present) minus
// w_absent * mean over forbidden concepts of P(present), added to s_sem inside a tier. An item
// without a confidence for a concept counts 1 where it states HAS, 0 where it states NOT_HAS
// and 0.5 otherwise.
class ConfidenceWeights {
 public:
  struct Concept {
    const std::vector<std::uint8_t>* column;
    const SlotBitmap* has;
    const SlotBitmap* not_has;
  };
  ConfidenceWeights() = default;
  ConfidenceWeights(std::vector<Concept> required, std::vector<Concept> forbidden, float w_present, float w_absent);
  bool active() const noexcept { return present_scale_ != 0.0f || absent_scale_ != 0.0f; }
  float term(std::size_t slot) const noexcept;

 private:
  static float sum(const std::vector<Concept>& concepts, std::size_t slot) noexcept;
  std::vector<Concept> required_;
  std::vector<Concept> forbidden_;
  float present_scale_ = 0.0f;  // w_present / |required| (0 when none)
  float absent_scale_ = 0.0f;
};

}  // namespace polarmem
