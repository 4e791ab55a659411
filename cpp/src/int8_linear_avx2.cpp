// The Int8Linear kernel for AVX2 (and AVX-512 CPUs without VNNI). vpmaddubsw multiplies
// unsigned by signed bytes into saturating 16-bit pairs, so it gets |activation| (<= 127) and
// the weight carrying the activation's sign: a pair is at most 2 * 127 * 127 = 32,258, never
// saturated, and the sums are the same exact integers as the other levels'.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "int8_linear_body.hpp"
#include "polarmem/encoder_kernels.hpp"
#include "polarmem/int8_linear.hpp"

namespace polarmem::q8 {
namespace {

// Three rows per tile: six accumulators stay in the 16 ymm registers beside the weights, the
// constants and the temporaries; four rows' eight put three of them and a constant on the stack
// (a load and a store per quad each). Zen 2, round 42 (docs/performance.md): products 1.5-4.3 %
// faster for 7-24 tokens with the weights in cache, about 1 % read from DRAM; the same bytes.
constexpr std::size_t kMaxRows = 3;
constexpr std::size_t kPrefetchBlocks = 16;

template <std::size_t Rows>
void tile(const Q8Activations& x, std::size_t row0, const std::uint8_t* packed, const float* weight_scales,
          const float* bias, std::size_t group, std::size_t outputs, float* y) {
  const std::size_t blocks = x.inputs / kQ8Block;
  const std::size_t block_bytes = kQ8Block * kQ8Columns;
  const __m256i ones = _mm256_set1_epi16(1);
  const __m256i sign_bit = _mm256_set1_epi8(static_cast<char>(0x80));
  __m256 sums[Rows][2];
  for (std::size_t r = 0; r < Rows; ++r) sums[r][0] = sums[r][1] = _mm256_setzero_ps();
  for (std::size_t b = 0; b < blocks; ++b) {
    __m256i dots[Rows][2];
    for (std::size_t r = 0; r < Rows; ++r) dots[r][0] = dots[r][1] = _mm256_setzero_si256();
    const std::uint8_t* weights = packed + (group * blocks + b) * block_bytes;
    if (row0 == 0) {  // the weight stream ahead, as the AVX-512 kernel does (it says why)
      for (std::size_t line = 0; line < block_bytes; line += 64)
        _mm_prefetch(reinterpret_cast<const char*>(weights + kPrefetchBlocks * block_bytes + line), _MM_HINT_T0);
    }
    for (std::size_t quad = 0; quad < kQ8Block / 4; ++quad) {
      // stored + 128: back to signed codes
      const __m256i w0 =
          _mm256_xor_si256(_mm256_load_si256(reinterpret_cast<const __m256i*>(weights + quad * 64)), sign_bit);
      const __m256i w1 =
          _mm256_xor_si256(_mm256_load_si256(reinterpret_cast<const __m256i*>(weights + quad * 64 + 32)), sign_bit);
      for (std::size_t r = 0; r < Rows; ++r) {
        std::int32_t four;
        std::memcpy(&four, x.codes.data() + (row0 + r) * x.inputs + b * kQ8Block + quad * 4, 4);
        const __m256i a = _mm256_set1_epi32(four);
        const __m256i magnitude = _mm256_sign_epi8(a, a);
        const __m256i p0 = _mm256_maddubs_epi16(magnitude, _mm256_sign_epi8(w0, a));
        const __m256i p1 = _mm256_maddubs_epi16(magnitude, _mm256_sign_epi8(w1, a));
        dots[r][0] = _mm256_add_epi32(dots[r][0], _mm256_madd_epi16(p0, ones));
        dots[r][1] = _mm256_add_epi32(dots[r][1], _mm256_madd_epi16(p1, ones));
      }
    }
    const std::size_t at = (group * blocks + b) * kQ8Columns;
    const __m256 scale0 = _mm256_loadu_ps(weight_scales + at);
    const __m256 scale1 = _mm256_loadu_ps(weight_scales + at + 8);
    for (std::size_t r = 0; r < Rows; ++r) {
      const __m256 activation_scale = _mm256_set1_ps(x.scales[(row0 + r) * blocks + b]);
      sums[r][0] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dots[r][0]), _mm256_mul_ps(scale0, activation_scale), sums[r][0]);
      sums[r][1] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dots[r][1]), _mm256_mul_ps(scale1, activation_scale), sums[r][1]);
    }
  }
  for (std::size_t r = 0; r < Rows; ++r) {
    float* out = y + (row0 + r) * outputs + group * kQ8Columns;
    _mm256_storeu_ps(out, _mm256_add_ps(sums[r][0], _mm256_loadu_ps(bias + group * kQ8Columns)));
    _mm256_storeu_ps(out + 8, _mm256_add_ps(sums[r][1], _mm256_loadu_ps(bias + group * kQ8Columns + 8)));
  }
}

}  // namespace

void matmul_avx2(const Q8Activations& x, const std::uint8_t* packed, const float* weight_scales, const float* bias,
                 std::size_t outputs, float* y) {
  const std::size_t groups = outputs / kQ8Columns;
  for (std::size_t group = 0; group < groups; ++group) {
    std::size_t row = 0;
    for (; row + kMaxRows <= x.rows; row += kMaxRows)
      tile<kMaxRows>(x, row, packed, weight_scales, bias, group, outputs, y);
    switch (x.rows - row) {
      case 2: tile<2>(x, row, packed, weight_scales, bias, group, outputs, y); break;
      case 1: tile<1>(x, row, packed, weight_scales, bias, group, outputs, y); break;
      default: break;
    }
  }
}

POLARMEM_ENCODER_STEPS(avx2)

}  // namespace polarmem::q8
