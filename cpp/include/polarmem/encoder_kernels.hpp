// The text encoder's kernels, one table per instruction-set level, chosen at run time: the
// 8-bit matrix product (int8_linear.hpp) and the element-wise steps around it. Every level
// computes the same bytes: integer products are exact, and the float steps are one body
// (cpp/src/int8_linear_body.hpp) compiled per level with -ffp-contract=off and fixed
// summation orders, so a level changes speed, never a vector.
#pragma once

#include <cstddef>
#include <cstdint>

namespace polarmem {

struct Q8Activations;

// Queries the attention kernel takes through a head's keys and values together (their sums are
// independent chains; each query's own order is unchanged).
inline constexpr std::size_t kAttentionQueries = 4;

// The per-level kernels: y[m * outputs + n] = sum over blocks b of
// (float)dot_b(m, n) * (weight_scale[n, b] * activation_scale[m, b]), accumulated with one fused
// multiply-add per block, in block order, then + bias[n]. `packed` holds weight codes + 128 (int8_linear.hpp's
// layout); `weight_scales` is laid out [group][block][16].
struct EncoderKernels {
  const char* name;
  void (*matmul)(const Q8Activations& x, const std::uint8_t* packed, const float* weight_scales, const float* bias,
                 std::size_t outputs, float* y);
  // codes and scales of quantize_activations (all levels give the same bytes)
  void (*quantize)(const float* x, std::size_t rows, std::size_t inputs, std::int8_t* codes, float* scales,
                   std::int32_t* sums);
  // x = GELU(x) in place
  void (*gelu)(float* x, std::size_t n);
  // each row of x normalised and scaled, in place; scratch: width floats
  void (*layer_norm)(float* x, std::size_t rows, std::size_t width, const float* gain, const float* bias, float eps,
                     float* scratch);
  // multi-head self-attention per text, no padding; scratch: (head width + kAttentionQueries) x
  // (longest text rounded up to 16) floats
  void (*attention)(const float* qkv, const std::int32_t* lengths, std::size_t texts, std::size_t hidden,
                    std::size_t heads, float* context, float* scratch);
};

// "avx512_vnni", "avx2" or "scalar": the best this CPU runs, capped by POLARMEM_SIMD (avx2 /
// scalar) as the core's other kernels are.
const EncoderKernels& best_encoder_kernels();
// nullptr when the CPU lacks it.
const EncoderKernels* encoder_kernels(const char* name);

}  // namespace polarmem
