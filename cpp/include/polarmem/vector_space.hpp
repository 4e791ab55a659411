// Named vector spaces of an index: one L2-normalised fp32 vector per item (optionally with a
// compact fp16 / int8 copy scanned first), or several vectors per item scored by their maximum.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "polarmem/aligned_buffer.hpp"
#include "polarmem/ann_graph.hpp"
#include "polarmem/prefetch.hpp"
#include "polarmem/simd.hpp"
#include "polarmem/slot_bitmap.hpp"

namespace polarmem {

enum class Storage : int { kF32 = 0, kF16 = 1, kI8 = 2 };

struct SpaceConfig {
  std::string name;
  std::size_t dim = 0;
  bool multi = false;               // several vectors per item, scored by max-sim
  Storage storage = Storage::kF32;  // compact copy for single-vector spaces
  AnnConfig ann;                    // opt-in approximate index (single-vector spaces only)
};

// A query prepared for one space: normalised, and quantised when the space is compact.
struct SpaceQuery {
  AlignedBuffer<float> values;
  AlignedBuffer<std::int16_t> quantised;  // int8 spaces only
  float quantised_scale = 0.0f;           // value = quantised * scale
  float quantisation_error = 0.0f;        // || q - quantised * scale ||_2
};

class VectorSpace {
 public:
  explicit VectorSpace(SpaceConfig config);

  const SpaceConfig& config() const noexcept { return config_; }
  std::size_t dim() const noexcept { return config_.dim; }
  bool compact() const noexcept { return !config_.multi && config_.storage != Storage::kF32; }

  // Makes room for `slots` items (existing data kept).
  void reserve(std::size_t slots);
  // Stores one item's vectors (already normalised and validated); replaces what it had.
  void assign(std::size_t slot, const float* rows, std::size_t row_count);
  void clear(std::size_t slot);
  bool present(std::size_t slot) const noexcept { return present_.test(slot); }
  // Slots 64 * w .. 64 * w + 63 that hold a vector, one bit each.
  std::uint64_t present_word(std::size_t w) const noexcept { return present_.word(w); }

  SpaceQuery prepare(const float* normalised_query) const;

  // Exact cosine (max-sim for multi spaces). Only for present slots.
  float exact(const SpaceQuery& query, std::size_t slot, const Kernels& kernels) const noexcept;
  // Compact-copy estimate; |exact - estimate| <= *bound. Exact (bound 0) for fp32 spaces.
  float estimate(const SpaceQuery& query, std::size_t slot, const Kernels& kernels, float* bound) const noexcept;

  // Keeps the slots whose new_of_old >= 0, at their new positions.
  void compact_slots(const std::vector<std::int64_t>& new_of_old, std::size_t new_size);

  // Asks the cache for the row a search of this slot will read (compact copy if any).
  void prefetch(std::size_t slot) const noexcept {
    if (config_.multi) return;
    const char* row;
    std::size_t bytes;
    // A compact estimate also reads the row's error bound (and an int8 row its scale) from
    // arrays of their own: scattered rows would otherwise pay one more memory latency each.
    if (config_.storage == Storage::kF16) {
      row = reinterpret_cast<const char*>(f16_.data() + slot * compact_stride_);
      bytes = config_.dim * sizeof(std::uint16_t);
      prefetch_line(compact_error_.data() + slot);
    } else if (config_.storage == Storage::kI8) {
      row = reinterpret_cast<const char*>(i8_.data() + slot * compact_stride_);
      bytes = config_.dim;
      prefetch_line(compact_error_.data() + slot);
      prefetch_line(i8_scale_.data() + slot);
    } else {
      row = reinterpret_cast<const char*>(f32_.data() + slot * stride_);
      bytes = config_.dim * sizeof(float);
    }
    for (std::size_t offset = 0; offset < bytes; offset += 64) prefetch_line(row + offset);
  }

  // Asks the cache for the fp32 row exact() will read (single-vector spaces).
  void prefetch_exact(std::size_t slot) const noexcept {
    if (config_.multi) return;
    const char* row = reinterpret_cast<const char*>(f32_.data() + slot * stride_);
    for (std::size_t offset = 0; offset < config_.dim * sizeof(float); offset += 64) prefetch_line(row + offset);
  }

  // For batch search: the fp32 row of a single-vector space.
  const float* row(std::size_t slot) const noexcept { return f32_.data() + slot * stride_; }
  // For batch search of a compact space: writes the dequantised compact row (dim floats).
  void decode(std::size_t slot, float* out, const Kernels& kernels) const noexcept;
  // For batch search: how far a batch product over this slot's scanned row (the compact copy
  // of a compact space, else the fp32 row) may be from exact(): storage error plus float
  // summation slack, for a unit query.
  float batch_bound(std::size_t slot) const noexcept {
    return (compact() ? compact_error_[slot] : 0.0f) + rounding_slack_;
  }
  std::size_t memory_bytes() const noexcept;

 private:
  SpaceConfig config_;
  std::size_t stride_;  // floats per row, a multiple of 16 (64 bytes)
  std::size_t capacity_ = 0;
  SlotBitmap present_;
  // Single-vector spaces.
  AlignedBuffer<float> f32_;
  AlignedBuffer<std::uint16_t> f16_;
  AlignedBuffer<std::int8_t> i8_;
  std::size_t compact_stride_ = 0;  // elements per compact row, 64-byte multiple
  AlignedBuffer<float> i8_scale_;
  AlignedBuffer<float> compact_error_;  // || x - dequantised(x) ||_2, rounded up
  // Multi-vector spaces: rows appended to a pool; a slot points at its range.
  std::vector<float> pool_;
  std::vector<std::uint64_t> pool_offset_;
  std::vector<std::uint32_t> pool_count_;
  float rounding_slack_;  // float summation error allowance for compact estimates
};

// Validates and L2-normalises `rows` x `dim` floats into `out`; names `argument` in errors.
void normalise_rows(const float* rows, std::size_t row_count, std::size_t dim, const std::string& argument, float* out);

}  // namespace polarmem
