// Reference kernels: the definition every SIMD level is tested against.
#include <cstring>

#include "polarmem/simd.hpp"
#include "polarmem/simd_kernels.hpp"
#include "polarmem/slot_bitmap.hpp"
#include "split_tiers_body.hpp"

namespace polarmem::scalar {

float dot_f32(const float* q, const float* x, std::size_t n) {
  float sum = 0.0f;
  for (std::size_t i = 0; i < n; ++i) sum += q[i] * x[i];
  return sum;
}

float dot_f16(const float* q, const std::uint16_t* x, std::size_t n) {
  float sum = 0.0f;
  for (std::size_t i = 0; i < n; ++i) sum += q[i] * half_to_float(x[i]);
  return sum;
}

std::int32_t dot_i8(const std::int16_t* q, const std::int8_t* x, std::size_t n) {
  std::int32_t sum = 0;
  for (std::size_t i = 0; i < n; ++i) sum += static_cast<std::int32_t>(q[i]) * x[i];
  return sum;
}

}  // namespace polarmem::scalar

namespace polarmem::scalar {

void dot_f32_tile(const float* const* rows, const float* panels, std::size_t panel_count, std::size_t n, float* out) {
  const std::size_t stride = panel_count * kPanelColumns;
  for (std::size_t r = 0; r < kTileRows; ++r) {
    for (std::size_t p = 0; p < panel_count; ++p) {
      const float* panel = panels + p * n * kPanelColumns;
      for (std::size_t j = 0; j < kPanelColumns; ++j) {
        float sum = 0.0f;
        for (std::size_t i = 0; i < n; ++i) sum += rows[r][i] * panel[i * kPanelColumns + j];
        out[r * stride + p * kPanelColumns + j] = sum;
      }
    }
  }
}

}  // namespace polarmem::scalar

namespace polarmem::scalar {

void f16_to_f32(const std::uint16_t* x, float* out, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = half_to_float(x[i]);
}

std::int32_t dot_i8_i8(const std::int8_t* a, const std::int8_t* b, std::size_t n) {
  std::int32_t sum = 0;
  for (std::size_t i = 0; i < n; ++i) sum += static_cast<std::int32_t>(a[i]) * b[i];
  return sum;
}

void split_tiers(const std::uint64_t* eligible, const std::uint64_t* conflict_any, const std::uint64_t* entailed_any,
                 std::size_t n, std::uint64_t* const out[3], std::int64_t counts[3]) {
  split_tiers_body(eligible, conflict_any, entailed_any, n, out, counts, popcount64);
}

}  // namespace polarmem::scalar
