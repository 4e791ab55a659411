// AVX2 + FMA + F16C kernels. Compiled with those flags; called only when the CPU has them.
#include <immintrin.h>

#include "polarmem/simd.hpp"
#include "polarmem/simd_kernels.hpp"
#include "split_tiers_body.hpp"

namespace polarmem::avx2 {
namespace {
inline float horizontal_sum(__m256 v) {
  __m128 lo = _mm256_castps256_ps128(v);
  __m128 hi = _mm256_extractf128_ps(v, 1);
  lo = _mm_add_ps(lo, hi);
  lo = _mm_hadd_ps(lo, lo);
  lo = _mm_hadd_ps(lo, lo);
  return _mm_cvtss_f32(lo);
}

// <a, b> over n elements that `load` widens eight at a time (and `widen` one at a time for the
// tail). Four independent accumulators hide the FMA latency and keep four row loads in flight.
template <typename T, typename Load, typename Widen>
inline float dot_four_accumulators(const T* a, const T* b, std::size_t n, Load load, Widen widen) {
  __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
  __m256 a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    a0 = _mm256_fmadd_ps(load(a + i), load(b + i), a0);
    a1 = _mm256_fmadd_ps(load(a + i + 8), load(b + i + 8), a1);
    a2 = _mm256_fmadd_ps(load(a + i + 16), load(b + i + 16), a2);
    a3 = _mm256_fmadd_ps(load(a + i + 24), load(b + i + 24), a3);
  }
  for (; i + 8 <= n; i += 8) a0 = _mm256_fmadd_ps(load(a + i), load(b + i), a0);
  float sum = horizontal_sum(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
  for (; i < n; ++i) sum += widen(a[i]) * widen(b[i]);
  return sum;
}

// Sixteen int8 codes as int16 lanes.
inline __m256i widen_i8x16(const std::int8_t* p) {
  return _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// Exact integer <a, x> for int8 codes x and values a that `load` brings in as sixteen int16 lanes
// (an int16 query, or int8 codes widened): madd pairs into int32 lanes, one horizontal sum.
template <typename T, typename Load>
inline std::int32_t dot_int16_lanes(const T* a, const std::int8_t* x, std::size_t n, Load load) {
  __m256i acc = _mm256_setzero_si256();
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) acc = _mm256_add_epi32(acc, _mm256_madd_epi16(load(a + i), widen_i8x16(x + i)));
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(acc), _mm256_extracti128_si256(acc, 1));
  s = _mm_hadd_epi32(s, s);
  s = _mm_hadd_epi32(s, s);
  std::int32_t sum = _mm_cvtsi128_si32(s);
  for (; i < n; ++i) sum += static_cast<std::int32_t>(a[i]) * x[i];
  return sum;
}

inline __m256 load_half8(const std::uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
}  // namespace

float dot_f32(const float* q, const float* x, std::size_t n) {
  return dot_four_accumulators(q, x, n, [](const float* p) { return _mm256_loadu_ps(p); }, [](float v) { return v; });
}

float dot_f16(const float* q, const std::uint16_t* x, std::size_t n) {
  __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m256 x0 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i)));
    __m256 x1 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i + 8)));
    a0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), x0, a0);
    a1 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i + 8), x1, a1);
  }
  for (; i + 8 <= n; i += 8) {
    __m256 x0 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i)));
    a0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), x0, a0);
  }
  float sum = horizontal_sum(_mm256_add_ps(a0, a1));
  for (; i < n; ++i) sum += q[i] * _cvtsh_ss(x[i]);
  return sum;
}

std::int32_t dot_i8(const std::int16_t* q, const std::int8_t* x, std::size_t n) {
  return dot_int16_lanes(q, x, n,
                         [](const std::int16_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); });
}

}  // namespace polarmem::avx2

namespace polarmem::avx2 {

// 6 rows x 16 columns in 12 accumulators (of 16 ymm registers): per element of the rows, two
// panel loads and six broadcasts feed twelve FMAs, so the loop is bound by FMA throughput.
void dot_f32_tile(const float* const* rows, const float* panels, std::size_t panel_count, std::size_t n, float* out) {
  const std::size_t stride = panel_count * kPanelColumns;
  const float* r0 = rows[0];
  const float* r1 = rows[1];
  const float* r2 = rows[2];
  const float* r3 = rows[3];
  const float* r4 = rows[4];
  const float* r5 = rows[5];
  for (std::size_t p = 0; p < panel_count; ++p) {
    const float* b = panels + p * n * kPanelColumns;
    __m256 c00 = _mm256_setzero_ps(), c01 = _mm256_setzero_ps(), c10 = _mm256_setzero_ps(), c11 = _mm256_setzero_ps();
    __m256 c20 = _mm256_setzero_ps(), c21 = _mm256_setzero_ps(), c30 = _mm256_setzero_ps(), c31 = _mm256_setzero_ps();
    __m256 c40 = _mm256_setzero_ps(), c41 = _mm256_setzero_ps(), c50 = _mm256_setzero_ps(), c51 = _mm256_setzero_ps();
#pragma GCC unroll 2
    for (std::size_t i = 0; i < n; ++i) {
      const __m256 b0 = _mm256_loadu_ps(b + i * kPanelColumns);
      const __m256 b1 = _mm256_loadu_ps(b + i * kPanelColumns + 8);
      __m256 a = _mm256_broadcast_ss(r0 + i);
      c00 = _mm256_fmadd_ps(a, b0, c00);
      c01 = _mm256_fmadd_ps(a, b1, c01);
      a = _mm256_broadcast_ss(r1 + i);
      c10 = _mm256_fmadd_ps(a, b0, c10);
      c11 = _mm256_fmadd_ps(a, b1, c11);
      a = _mm256_broadcast_ss(r2 + i);
      c20 = _mm256_fmadd_ps(a, b0, c20);
      c21 = _mm256_fmadd_ps(a, b1, c21);
      a = _mm256_broadcast_ss(r3 + i);
      c30 = _mm256_fmadd_ps(a, b0, c30);
      c31 = _mm256_fmadd_ps(a, b1, c31);
      a = _mm256_broadcast_ss(r4 + i);
      c40 = _mm256_fmadd_ps(a, b0, c40);
      c41 = _mm256_fmadd_ps(a, b1, c41);
      a = _mm256_broadcast_ss(r5 + i);
      c50 = _mm256_fmadd_ps(a, b0, c50);
      c51 = _mm256_fmadd_ps(a, b1, c51);
    }
    float* o = out + p * kPanelColumns;
    _mm256_storeu_ps(o, c00);
    _mm256_storeu_ps(o + 8, c01);
    _mm256_storeu_ps(o + stride, c10);
    _mm256_storeu_ps(o + stride + 8, c11);
    _mm256_storeu_ps(o + 2 * stride, c20);
    _mm256_storeu_ps(o + 2 * stride + 8, c21);
    _mm256_storeu_ps(o + 3 * stride, c30);
    _mm256_storeu_ps(o + 3 * stride + 8, c31);
    _mm256_storeu_ps(o + 4 * stride, c40);
    _mm256_storeu_ps(o + 4 * stride + 8, c41);
    _mm256_storeu_ps(o + 5 * stride, c50);
    _mm256_storeu_ps(o + 5 * stride + 8, c51);
  }
}

}  // namespace polarmem::avx2

namespace polarmem::avx2 {

void f16_to_f32(const std::uint16_t* x, float* out, std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, load_half8(x + i));
  for (; i < n; ++i) out[i] = _cvtsh_ss(x[i]);
}

std::int32_t dot_i8_i8(const std::int8_t* a, const std::int8_t* b, std::size_t n) {
  return dot_int16_lanes(a, b, n, widen_i8x16);
}

void split_tiers(const std::uint64_t* eligible, const std::uint64_t* conflict_any, const std::uint64_t* entailed_any,
                 std::size_t n, std::uint64_t* const out[3], std::int64_t counts[3]) {
  split_tiers_body(eligible, conflict_any, entailed_any, n, out, counts,
                   [](std::uint64_t x) { return static_cast<std::int64_t>(__builtin_popcountll(x)); });
}

}  // namespace polarmem::avx2
