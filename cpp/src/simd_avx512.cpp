// AVX-512 (F, BW, VL) kernels with masked tails. Compiled with those flags; called only when
// the CPU has them.
#include <immintrin.h>

#include "polarmem/simd.hpp"
#include "polarmem/simd_kernels.hpp"
#include "split_tiers_body.hpp"

namespace polarmem::avx512 {

float dot_f32(const float* q, const float* x, std::size_t n) {
  __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
  __m512 a2 = _mm512_setzero_ps(), a3 = _mm512_setzero_ps();
  std::size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    a0 = _mm512_fmadd_ps(_mm512_loadu_ps(q + i), _mm512_loadu_ps(x + i), a0);
    a1 = _mm512_fmadd_ps(_mm512_loadu_ps(q + i + 16), _mm512_loadu_ps(x + i + 16), a1);
    a2 = _mm512_fmadd_ps(_mm512_loadu_ps(q + i + 32), _mm512_loadu_ps(x + i + 32), a2);
    a3 = _mm512_fmadd_ps(_mm512_loadu_ps(q + i + 48), _mm512_loadu_ps(x + i + 48), a3);
  }
  for (; i + 16 <= n; i += 16) a0 = _mm512_fmadd_ps(_mm512_loadu_ps(q + i), _mm512_loadu_ps(x + i), a0);
  if (i < n) {
    const __mmask16 tail = static_cast<__mmask16>((1u << (n - i)) - 1u);
    a1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(tail, q + i), _mm512_maskz_loadu_ps(tail, x + i), a1);
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
}

float dot_f16(const float* q, const std::uint16_t* x, std::size_t n) {
  __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    __m512 x0 = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i)));
    __m512 x1 = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i + 16)));
    a0 = _mm512_fmadd_ps(_mm512_loadu_ps(q + i), x0, a0);
    a1 = _mm512_fmadd_ps(_mm512_loadu_ps(q + i + 16), x1, a1);
  }
  for (; i < n; i += 16) {
    const std::size_t left = n - i < 16 ? n - i : 16;
    const __mmask16 m = static_cast<__mmask16>((1u << left) - 1u);
    __m512 x0 = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, x + i));
    a0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, q + i), x0, a0);
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(a0, a1));
}

std::int32_t dot_i8(const std::int16_t* q, const std::int8_t* x, std::size_t n) {
  __m512i a0 = _mm512_setzero_si512(), a1 = _mm512_setzero_si512();
  std::size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    __m512i x0 = _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i)));
    __m512i x1 = _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i + 32)));
    a0 = _mm512_add_epi32(a0, _mm512_madd_epi16(_mm512_loadu_si512(q + i), x0));
    a1 = _mm512_add_epi32(a1, _mm512_madd_epi16(_mm512_loadu_si512(q + i + 32), x1));
  }
  for (; i < n; i += 32) {
    const std::size_t left = n - i < 32 ? n - i : 32;
    const __mmask32 m = left == 32 ? 0xFFFFFFFFu : static_cast<__mmask32>((1u << left) - 1u);
    __m512i x0 = _mm512_cvtepi8_epi16(_mm256_maskz_loadu_epi8(m, x + i));
    a0 = _mm512_add_epi32(a0, _mm512_madd_epi16(_mm512_maskz_loadu_epi16(m, q + i), x0));
  }
  return _mm512_reduce_add_epi32(_mm512_add_epi32(a0, a1));
}

std::int32_t dot_i8_i8(const std::int8_t* a, const std::int8_t* b, std::size_t n) {
  __m512i acc = _mm512_setzero_si512();
  for (std::size_t i = 0; i < n; i += 32) {
    const std::size_t left = n - i < 32 ? n - i : 32;
    const __mmask32 m = left == 32 ? 0xFFFFFFFFu : static_cast<__mmask32>((1u << left) - 1u);
    const __m512i as = _mm512_cvtepi8_epi16(_mm256_maskz_loadu_epi8(m, a + i));
    const __m512i bs = _mm512_cvtepi8_epi16(_mm256_maskz_loadu_epi8(m, b + i));
    acc = _mm512_add_epi32(acc, _mm512_madd_epi16(as, bs));
  }
  return _mm512_reduce_add_epi32(acc);
}

}  // namespace polarmem::avx512

namespace polarmem::avx512 {
namespace {

// 6 rows x G panels (G zmm columns of 16) in 6 * G accumulators: up to 24 of 32 registers.
template <int G>
inline void tile_group(const float* const* rows, const float* panels, std::size_t n, std::size_t stride, float* out) {
  __m512 c[kTileRows][G];
#pragma GCC unroll 8
  for (std::size_t r = 0; r < kTileRows; ++r) {
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) c[r][g] = _mm512_setzero_ps();
  }
  for (std::size_t i = 0; i < n; ++i) {
    __m512 b[G];
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) b[g] = _mm512_loadu_ps(panels + (g * n + i) * kPanelColumns);
#pragma GCC unroll 8
    for (std::size_t r = 0; r < kTileRows; ++r) {
      const __m512 a = _mm512_set1_ps(rows[r][i]);
#pragma GCC unroll 4
      for (int g = 0; g < G; ++g) c[r][g] = _mm512_fmadd_ps(a, b[g], c[r][g]);
    }
  }
#pragma GCC unroll 8
  for (std::size_t r = 0; r < kTileRows; ++r) {
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) _mm512_storeu_ps(out + r * stride + g * kPanelColumns, c[r][g]);
  }
}

}  // namespace

void dot_f32_tile(const float* const* rows, const float* panels, std::size_t panel_count, std::size_t n, float* out) {
  const std::size_t stride = panel_count * kPanelColumns;
  std::size_t p = 0;
  for (; p + 4 <= panel_count; p += 4)
    tile_group<4>(rows, panels + p * n * kPanelColumns, n, stride, out + p * kPanelColumns);
  const std::size_t left = panel_count - p;
  const float* rest = panels + p * n * kPanelColumns;
  float* rest_out = out + p * kPanelColumns;
  if (left == 3) tile_group<3>(rows, rest, n, stride, rest_out);
  else if (left == 2) tile_group<2>(rows, rest, n, stride, rest_out);
  else if (left == 1) tile_group<1>(rows, rest, n, stride, rest_out);
}

}  // namespace polarmem::avx512

namespace polarmem::avx512 {

void f16_to_f32(const std::uint16_t* x, float* out, std::size_t n) {
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(out + i, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i))));
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1u);
    _mm512_mask_storeu_ps(out + i, m, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, x + i)));
  }
}

void split_tiers(const std::uint64_t* eligible, const std::uint64_t* conflict_any, const std::uint64_t* entailed_any,
                 std::size_t n, std::uint64_t* const out[3], std::int64_t counts[3]) {
  split_tiers_body(eligible, conflict_any, entailed_any, n, out, counts,
                   [](std::uint64_t x) { return static_cast<std::int64_t>(__builtin_popcountll(x)); });
}

}  // namespace polarmem::avx512
