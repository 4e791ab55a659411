// AVX2 + FMA + F16C kernels. Compiled with those flags; called only when the CPU has them.
#include <immintrin.h>

#include "polarmem/simd_kernels.hpp"

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
}  // namespace

float dot_f32(const float* q, const float* x, std::size_t n) {
  __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
  __m256 a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
  std::size_t i = 0;
  // Four independent accumulators hide the FMA latency.
  for (; i + 32 <= n; i += 32) {
    a0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), _mm256_loadu_ps(x + i), a0);
    a1 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i + 8), _mm256_loadu_ps(x + i + 8), a1);
    a2 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i + 16), _mm256_loadu_ps(x + i + 16), a2);
    a3 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i + 24), _mm256_loadu_ps(x + i + 24), a3);
  }
  for (; i + 8 <= n; i += 8) a0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), _mm256_loadu_ps(x + i), a0);
  float sum = horizontal_sum(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
  for (; i < n; ++i) sum += q[i] * x[i];
  return sum;
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
  __m256i acc = _mm256_setzero_si256();
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m256i xs = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i)));
    __m256i qs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + i));
    acc = _mm256_add_epi32(acc, _mm256_madd_epi16(qs, xs));
  }
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(acc), _mm256_extracti128_si256(acc, 1));
  s = _mm_hadd_epi32(s, s);
  s = _mm_hadd_epi32(s, s);
  std::int32_t sum = _mm_cvtsi128_si32(s);
  for (; i < n; ++i) sum += static_cast<std::int32_t>(q[i]) * x[i];
  return sum;
}

}  // namespace polarmem::avx2
