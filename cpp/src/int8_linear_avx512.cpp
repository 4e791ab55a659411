// The Int8Linear kernel for AVX-512 VNNI: vpdpbusd multiplies 64 unsigned weight bytes (codes
// + 128) by 64 signed activation bytes and adds each 4 neighbours into 16 int32 lanes, one lane
// per output column; the + 128 is taken back per row and block (Q8Activations::sums). Rows are register-blocked (up to
// 6) against two column groups (32 columns), so each weight load serves every row of the tile.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "int8_linear_body.hpp"
#include "polarmem/encoder_kernels.hpp"
#include "polarmem/int8_linear.hpp"

namespace polarmem::q8 {
namespace {

constexpr std::size_t kMaxRows = 6;
// How far ahead the weight stream is fetched, in blocks of 512 bytes per column group: far
// ahead into L2 (whose miss queue holds more lines in flight than L1's, so more of DRAM's
// latency overlaps) and near ahead into L1. Measured on a Zen 4 VM (2 vCPUs; MiniLM's 24
// layers, 12 tokens, 64 MB read between passes so the weights come from DRAM), mean per pass:
// L1 only at 16 blocks (the setting before) 1.41-1.75 ms, at 8 1.68; L2 at 48 + L1 at 4
// 1.11-1.23, at 32 + 8 1.28, at 64 + 8 1.26, at 96 + 8 1.32 (weights in cache: 0.84-0.91
// either way). At 84 tokens (compute-bound) 5.92-6.01 against 6.12-6.35.
constexpr std::size_t kPrefetchNearBlocks = 4;
constexpr std::size_t kPrefetchFarBlocks = 48;

template <std::size_t Rows, std::size_t Groups>
void tile(const Q8Activations& x, std::size_t row0, const std::uint8_t* packed, const float* weight_scales,
          const float* bias, std::size_t group0, std::size_t outputs, float* y) {
  const std::size_t blocks = x.inputs / kQ8Block;
  const std::size_t block_bytes = kQ8Block * kQ8Columns;
  __m512 sums[Rows][Groups];
  for (std::size_t r = 0; r < Rows; ++r)
    for (std::size_t g = 0; g < Groups; ++g) sums[r][g] = _mm512_setzero_ps();
  const std::int8_t* rows[Rows];
  for (std::size_t r = 0; r < Rows; ++r) rows[r] = x.codes.data() + (row0 + r) * x.inputs;

  for (std::size_t b = 0; b < blocks; ++b) {
    __m512i dots[Rows][Groups];
    for (std::size_t r = 0; r < Rows; ++r)
      for (std::size_t g = 0; g < Groups; ++g) dots[r][g] = _mm512_setzero_si512();
    const std::uint8_t* weights[Groups];
    for (std::size_t g = 0; g < Groups; ++g) weights[g] = packed + ((group0 + g) * blocks + b) * block_bytes;
    if (row0 == 0) {
      // A model's weights (13 MB for MiniLM) do not stay in cache between queries, and the
      // hardware prefetcher alone left a fifth of the layer time waiting on them: the first
      // row tile asks for the stream ahead (later tiles find it in L1/L2). Past a group's last
      // block the lines are the next groups' (or, at a matrix's end, ones a prefetch may name
      // without faulting).
      for (std::size_t g = 0; g < Groups; ++g)
        for (std::size_t line = 0; line < block_bytes; line += 64) {
          _mm_prefetch(reinterpret_cast<const char*>(weights[g] + kPrefetchNearBlocks * block_bytes + line),
                       _MM_HINT_T0);
          _mm_prefetch(reinterpret_cast<const char*>(weights[g] + kPrefetchFarBlocks * block_bytes + line),
                       _MM_HINT_T1);
        }
    }
    for (std::size_t quad = 0; quad < kQ8Block / 4; ++quad) {
      __m512i w[Groups];
      for (std::size_t g = 0; g < Groups; ++g) w[g] = _mm512_load_si512(weights[g] + quad * 64);
      for (std::size_t r = 0; r < Rows; ++r) {
        std::int32_t four;
        std::memcpy(&four, rows[r] + b * kQ8Block + quad * 4, 4);
        const __m512i a = _mm512_set1_epi32(four);
        for (std::size_t g = 0; g < Groups; ++g) dots[r][g] = _mm512_dpbusd_epi32(dots[r][g], w[g], a);
      }
    }
    __m512 scale[Groups];
    for (std::size_t g = 0; g < Groups; ++g)
      scale[g] = _mm512_loadu_ps(weight_scales + ((group0 + g) * blocks + b) * kQ8Columns);
    for (std::size_t r = 0; r < Rows; ++r) {
      const __m512i extra = _mm512_set1_epi32(x.sums[(row0 + r) * blocks + b]);
      const __m512 activation_scale = _mm512_set1_ps(x.scales[(row0 + r) * blocks + b]);
      for (std::size_t g = 0; g < Groups; ++g) {
        const __m512 dot = _mm512_cvtepi32_ps(_mm512_sub_epi32(dots[r][g], extra));
        sums[r][g] = _mm512_fmadd_ps(dot, _mm512_mul_ps(scale[g], activation_scale), sums[r][g]);
      }
    }
  }
  for (std::size_t g = 0; g < Groups; ++g) {
    const __m512 b = _mm512_loadu_ps(bias + (group0 + g) * kQ8Columns);
    for (std::size_t r = 0; r < Rows; ++r)
      _mm512_storeu_ps(y + (row0 + r) * outputs + (group0 + g) * kQ8Columns, _mm512_add_ps(sums[r][g], b));
  }
}

template <std::size_t Groups>
void tiles(const Q8Activations& x, const std::uint8_t* packed, const float* weight_scales, const float* bias,
           std::size_t group0, std::size_t outputs, float* y) {
  std::size_t row = 0;
  for (; row + kMaxRows <= x.rows; row += kMaxRows)
    tile<kMaxRows, Groups>(x, row, packed, weight_scales, bias, group0, outputs, y);
  switch (x.rows - row) {
    case 5: tile<5, Groups>(x, row, packed, weight_scales, bias, group0, outputs, y); break;
    case 4: tile<4, Groups>(x, row, packed, weight_scales, bias, group0, outputs, y); break;
    case 3: tile<3, Groups>(x, row, packed, weight_scales, bias, group0, outputs, y); break;
    case 2: tile<2, Groups>(x, row, packed, weight_scales, bias, group0, outputs, y); break;
    case 1: tile<1, Groups>(x, row, packed, weight_scales, bias, group0, outputs, y); break;
    default: break;
  }
}

}  // namespace

void matmul_avx512_vnni(const Q8Activations& x, const std::uint8_t* packed, const float* weight_scales,
                        const float* bias, std::size_t outputs, float* y) {
  const std::size_t groups = outputs / kQ8Columns;
  // Column groups outermost: a pair's weights (32 x inputs bytes) stay in L1/L2 across all rows.
  std::size_t group = 0;
  for (; group + 2 <= groups; group += 2) tiles<2>(x, packed, weight_scales, bias, group, outputs, y);
  if (group < groups) tiles<1>(x, packed, weight_scales, bias, group, outputs, y);
}

POLARMEM_ENCODER_STEPS(avx512)

}  // namespace polarmem::q8
