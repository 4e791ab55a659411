#include "polarmem/vector_space.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>

#include "polarmem/error.hpp"

namespace polarmem {
namespace {

std::size_t round_up(std::size_t value, std::size_t multiple) { return (value + multiple - 1) / multiple * multiple; }

// Rounds a non-negative double up to the next float so stored bounds never understate.
float upper_float(double value) {
  float f = static_cast<float>(value);
  if (static_cast<double>(f) < value) f = std::nextafter(f, std::numeric_limits<float>::infinity());
  return f;
}

}  // namespace

void normalise_rows(const float* rows, std::size_t row_count, std::size_t dim, const std::string& argument,
                    float* out) {
  for (std::size_t r = 0; r < row_count; ++r) {
    const float* row = rows + r * dim;
    double norm_sq = 0.0;
    for (std::size_t i = 0; i < dim; ++i) {
      if (!std::isfinite(row[i])) {
        fail(ErrorCode::kInvalidArgument, argument + ": row " + std::to_string(r) +
                                              " has a NaN or infinite value at column " + std::to_string(i) +
                                              "; send finite floats");
      }
      norm_sq += static_cast<double>(row[i]) * row[i];
    }
    if (norm_sq == 0.0) {
      fail(ErrorCode::kInvalidArgument,
           argument + ": row " + std::to_string(r) + " is all zeros and has no direction; send a non-zero vector");
    }
    const double inv = 1.0 / std::sqrt(norm_sq);
    for (std::size_t i = 0; i < dim; ++i) out[r * dim + i] = static_cast<float>(row[i] * inv);
  }
}

VectorSpace::VectorSpace(SpaceConfig config) : config_(std::move(config)) {
  if (config_.dim == 0) fail(ErrorCode::kInvalidArgument, "space '" + config_.name + "': dim must be >= 1");
  if (config_.multi && config_.storage != Storage::kF32) {
    fail(ErrorCode::kInvalidArgument, "space '" + config_.name + "': multi-vector spaces are stored as fp32 only");
  }
  stride_ = round_up(config_.dim, 16);
  if (config_.storage == Storage::kF16) compact_stride_ = round_up(config_.dim, 32);
  if (config_.storage == Storage::kI8) compact_stride_ = round_up(config_.dim, 64);
  // Two float dot products of unit vectors each err by at most ~dim * FLT_EPSILON.
  rounding_slack_ = static_cast<float>(4.0 * static_cast<double>(config_.dim) * FLT_EPSILON + 1e-6);
}

void VectorSpace::reserve(std::size_t slots) {
  if (slots <= capacity_) return;
  const std::size_t grown = std::max(slots, capacity_ + capacity_ / 2);
  if (config_.multi) {
    pool_offset_.resize(grown, 0);
    pool_count_.resize(grown, 0);
  } else {
    f32_.resize(grown * stride_);
    if (config_.storage == Storage::kF16) f16_.resize(grown * compact_stride_);
    if (config_.storage == Storage::kI8) {
      i8_.resize(grown * compact_stride_);
      i8_scale_.resize(grown);
    }
    if (compact()) compact_error_.resize(grown);
  }
  capacity_ = grown;
}

void VectorSpace::assign(std::size_t slot, const float* rows, std::size_t row_count) {
  reserve(slot + 1);
  const std::size_t d = config_.dim;
  if (config_.multi) {
    // Rows are appended; the old range becomes garbage that compaction reclaims.
    pool_offset_[slot] = pool_.size() / d;
    pool_count_[slot] = static_cast<std::uint32_t>(row_count);
    pool_.insert(pool_.end(), rows, rows + row_count * d);
    present_.assign(slot, row_count > 0);
    return;
  }
  float* dst = f32_.data() + slot * stride_;
  std::copy(rows, rows + d, dst);
  double error_sq = 0.0;
  if (config_.storage == Storage::kF16) {
    std::uint16_t* codes = f16_.data() + slot * compact_stride_;
    for (std::size_t i = 0; i < d; ++i) {
      codes[i] = float_to_half(rows[i]);
      const double diff = static_cast<double>(rows[i]) - half_to_float(codes[i]);
      error_sq += diff * diff;
    }
  } else if (config_.storage == Storage::kI8) {
    float max_abs = 0.0f;
    for (std::size_t i = 0; i < d; ++i) max_abs = std::max(max_abs, std::fabs(rows[i]));
    const float scale = max_abs / 127.0f;
    std::int8_t* codes = i8_.data() + slot * compact_stride_;
    for (std::size_t i = 0; i < d; ++i) {
      const long code = std::clamp(std::lround(rows[i] / scale), -127L, 127L);
      codes[i] = static_cast<std::int8_t>(code);
      const double diff = static_cast<double>(rows[i]) - static_cast<double>(scale) * static_cast<double>(code);
      error_sq += diff * diff;
    }
    i8_scale_[slot] = scale;
  }
  if (compact()) compact_error_[slot] = upper_float(std::sqrt(error_sq));
  present_.set(slot);
}

void VectorSpace::clear(std::size_t slot) {
  present_.reset(slot);
  if (config_.multi && slot < capacity_) pool_count_[slot] = 0;
}

SpaceQuery VectorSpace::prepare(const float* normalised_query) const {
  SpaceQuery query;
  const std::size_t d = config_.dim;
  query.values.resize(d);
  std::copy(normalised_query, normalised_query + d, query.values.data());
  if (config_.storage == Storage::kI8 && !config_.multi) {
    // int16 codes as large as the int32 accumulator allows: |sum| <= 127 * max_code * dim.
    const double max_code = std::min(32767.0, std::floor(2147483647.0 / (127.0 * static_cast<double>(d))));
    float max_abs = 0.0f;
    for (std::size_t i = 0; i < d; ++i) max_abs = std::max(max_abs, std::fabs(normalised_query[i]));
    const double scale = static_cast<double>(max_abs) / max_code;
    query.quantised.resize(d);
    double error_sq = 0.0;
    for (std::size_t i = 0; i < d; ++i) {
      const long code = std::lround(normalised_query[i] / scale);
      query.quantised[i] =
          static_cast<std::int16_t>(std::clamp(code, -static_cast<long>(max_code), static_cast<long>(max_code)));
      const double diff = normalised_query[i] - scale * query.quantised[i];
      error_sq += diff * diff;
    }
    query.quantised_scale = static_cast<float>(scale);
    query.quantisation_error = upper_float(std::sqrt(error_sq));
  }
  return query;
}

float VectorSpace::exact(const SpaceQuery& query, std::size_t slot, const Kernels& kernels) const noexcept {
  const std::size_t d = config_.dim;
  if (!config_.multi) return kernels.dot_f32(query.values.data(), f32_.data() + slot * stride_, d);
  const float* rows = pool_.data() + pool_offset_[slot] * d;
  float best = -std::numeric_limits<float>::infinity();
  for (std::uint32_t r = 0; r < pool_count_[slot]; ++r)
    best = std::max(best, kernels.dot_f32(query.values.data(), rows + r * d, d));
  return best;
}

float VectorSpace::estimate(const SpaceQuery& query, std::size_t slot, const Kernels& kernels,
                            float* bound) const noexcept {
  const std::size_t d = config_.dim;
  if (config_.storage == Storage::kF16 && !config_.multi) {
    *bound = compact_error_[slot] + rounding_slack_;
    return kernels.dot_f16(query.values.data(), f16_.data() + slot * compact_stride_, d);
  }
  if (config_.storage == Storage::kI8 && !config_.multi) {
    const float item_error = compact_error_[slot];
    // |q.x - q'.x'| <= |q.(x - x')| + |(q - q').x'| <= e_x + e_q * (1 + e_x) for unit q, x.
    *bound = item_error + query.quantisation_error * (1.0f + item_error) + rounding_slack_;
    const std::int32_t dot = kernels.dot_i8(query.quantised.data(), i8_.data() + slot * compact_stride_, d);
    return static_cast<float>(static_cast<double>(dot) * query.quantised_scale * i8_scale_[slot]);
  }
  *bound = 0.0f;
  return exact(query, slot, kernels);
}

void VectorSpace::decode(std::size_t slot, float* out, const Kernels& kernels) const noexcept {
  const std::size_t d = config_.dim;
  if (config_.storage == Storage::kF16) {
    kernels.f16_to_f32(f16_.data() + slot * compact_stride_, out, d);
  } else if (config_.storage == Storage::kI8) {
    const std::int8_t* codes = i8_.data() + slot * compact_stride_;
    const float scale = i8_scale_[slot];
    for (std::size_t i = 0; i < d; ++i) out[i] = scale * static_cast<float>(codes[i]);
  } else {
    std::copy(f32_.data() + slot * stride_, f32_.data() + slot * stride_ + d, out);
  }
}

void VectorSpace::compact_slots(const std::vector<std::int64_t>& new_of_old, std::size_t new_size) {
  VectorSpace fresh(config_);
  fresh.reserve(new_size);
  const std::size_t d = config_.dim;
  std::vector<float> rows;
  for (std::size_t old = 0; old < new_of_old.size(); ++old) {
    const std::int64_t target = new_of_old[old];
    if (target < 0 || !present(old)) continue;
    const std::size_t slot = static_cast<std::size_t>(target);
    if (config_.multi) {
      const float* src = pool_.data() + pool_offset_[old] * d;
      fresh.assign(slot, src, pool_count_[old]);
      continue;
    }
    // Copy stored representations as they are, so compaction never changes a score.
    std::copy(f32_.data() + old * stride_, f32_.data() + old * stride_ + d, fresh.f32_.data() + slot * stride_);
    if (config_.storage == Storage::kF16) {
      std::copy(f16_.data() + old * compact_stride_, f16_.data() + old * compact_stride_ + d,
                fresh.f16_.data() + slot * compact_stride_);
    } else if (config_.storage == Storage::kI8) {
      std::copy(i8_.data() + old * compact_stride_, i8_.data() + old * compact_stride_ + d,
                fresh.i8_.data() + slot * compact_stride_);
      fresh.i8_scale_[slot] = i8_scale_[old];
    }
    if (compact()) fresh.compact_error_[slot] = compact_error_[old];
    fresh.present_.set(slot);
  }
  *this = std::move(fresh);
}

std::size_t VectorSpace::memory_bytes() const noexcept {
  return f32_.size() * sizeof(float) + f16_.size() * sizeof(std::uint16_t) + i8_.size() +
         i8_scale_.size() * sizeof(float) + compact_error_.size() * sizeof(float) + pool_.capacity() * sizeof(float) +
         pool_offset_.capacity() * sizeof(std::uint64_t) + pool_count_.capacity() * sizeof(std::uint32_t) +
         present_.memory_bytes();
}

}  // namespace polarmem
