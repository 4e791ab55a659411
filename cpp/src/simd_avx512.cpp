// AVX-512 (F, BW, VL) kernels with masked tails. Compiled with those flags; called only when
// the CPU has them.
#include <immintrin.h>

#include "polarmem/simd_kernels.hpp"

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

}  // namespace polarmem::avx512
