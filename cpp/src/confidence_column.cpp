#include "polarmem/confidence_column.hpp"

#include <algorithm>

namespace polarmem {

void ConfidenceColumns::ensure_concepts(std::size_t count) {
  if (count > columns_.size()) columns_.resize(count);
}

void ConfidenceColumns::set(std::uint32_t concept_id, std::size_t slot, std::uint8_t value) {
  std::vector<std::uint8_t>& column = columns_[concept_id];
  // Grown geometrically past the slot, so appending items in slot order stays amortised O(1).
  if (column.size() <= slot) column.resize(std::max(slot + 1, column.size() * 2), kNotScored);
  column[slot] = value;
}

void ConfidenceColumns::clear_slot(std::size_t slot) noexcept {
  for (auto& column : columns_) {
    if (slot < column.size()) column[slot] = kNotScored;
  }
}

void ConfidenceColumns::compact(const std::vector<std::int64_t>& new_of_old, std::size_t new_size) {
  for (auto& column : columns_) {
    if (column.empty()) continue;
    std::vector<std::uint8_t> fresh(new_size, kNotScored);
    for (std::size_t slot = 0; slot < column.size() && slot < new_of_old.size(); ++slot) {
      if (new_of_old[slot] >= 0) fresh[static_cast<std::size_t>(new_of_old[slot])] = column[slot];
    }
    column.swap(fresh);
  }
}

std::size_t ConfidenceColumns::memory_bytes() const noexcept {
  std::size_t total = columns_.capacity() * sizeof(std::vector<std::uint8_t>);
  for (const auto& column : columns_) total += column.capacity();
  return total;
}

ConfidenceWeights::ConfidenceWeights(std::vector<Concept> required, std::vector<Concept> forbidden, float w_present,
                                     float w_absent)
    : required_(std::move(required)), forbidden_(std::move(forbidden)) {
  if (!required_.empty()) present_scale_ = w_present / static_cast<float>(required_.size());
  if (!forbidden_.empty()) absent_scale_ = w_absent / static_cast<float>(forbidden_.size());
}

float ConfidenceWeights::sum(const std::vector<Concept>& concepts, std::size_t slot) noexcept {
  // Bytes are summed as integers (exact), then scaled once: the same value whatever the order.
  int total = 0;
  for (const Concept& c : concepts) {
    const std::uint8_t byte = slot < c.column->size() ? (*c.column)[slot] : kNotScored;
    if (byte != kNotScored) total += byte;
    else if (c.has->test(slot)) total += kConfidenceScale;
    else if (!c.not_has->test(slot)) total += kConfidenceScale / 2;
  }
  return static_cast<float>(total) / static_cast<float>(kConfidenceScale);
}

float ConfidenceWeights::term(std::size_t slot) const noexcept {
  float value = 0.0f;
  if (present_scale_ != 0.0f) value += present_scale_ * sum(required_, slot);
  if (absent_scale_ != 0.0f) value -= absent_scale_ * sum(forbidden_, slot);
  return value;
}

}  // namespace polarmem
