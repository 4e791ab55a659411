// The Int8Linear element-wise steps, one body compiled once per kernel level (each level's file
// includes it with that level's flags and -ffp-contract=off, so every level rounds alike and the
// codes, and with them the outputs, stay bit-identical across levels). Library calls (fmax,
// lrint, erf) are avoided so the loops vectorise.
#pragma once

#include <cstddef>
#include <cstdint>

#include "polarmem/encoder_kernels.hpp"
#include "polarmem/int8_linear.hpp"

#pragma GCC diagnostic ignored "-Wpsabi"  // the vector types never cross a call between files

namespace polarmem::q8 {
// Internal linkage: each level's file gets its own copies, so the linker can never hand a
// caller on a lesser CPU a copy compiled for AVX-512 (the reason simd_kernels.hpp's levels
// live in files of their own).
namespace {

// 16 floats as one GCC vector: a zmm register at the AVX-512 level, two ymm at AVX2, SSE pieces at
// the baseline, the same IEEE operations per element everywhere.
typedef float F32x16 __attribute__((vector_size(64)));
typedef float F32x8 __attribute__((vector_size(32)));
typedef float F32x4 __attribute__((vector_size(16)));

inline F32x16 load16(const float* p) {
  F32x16 v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}

inline void store16(float* p, F32x16 v) { __builtin_memcpy(p, &v, sizeof v); }

// Lanes summed as a fixed tree: halves, quarters, eighths, the last pair.
inline float sum_lanes(F32x16 v) {
  const F32x8 a = __builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7) +
                  __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15);
  const F32x4 b = __builtin_shufflevector(a, a, 0, 1, 2, 3) + __builtin_shufflevector(a, a, 4, 5, 6, 7);
  return (b[0] + b[2]) + (b[1] + b[3]);
}

// Row m's block b: codes round(x / scale) (half away from zero), scale = max |x| / 127, and
// 128 x the codes' sum.
inline void quantize_rows_body(const float* x, std::size_t rows, std::size_t inputs, std::int8_t* codes,
                               float* scales, std::int32_t* sums) {
  const std::size_t blocks = inputs / kQ8Block;
  for (std::size_t m = 0; m < rows; ++m) {
    for (std::size_t b = 0; b < blocks; ++b) {
      const float* in = x + m * inputs + b * kQ8Block;
      std::int8_t* out = codes + m * inputs + b * kQ8Block;
      // The block's largest magnitude: 16 lanes, then halves (a running max does not vectorise).
      F32x16 low = load16(in), high = load16(in + 16);
      low = low > -low ? low : -low;
      high = high > -high ? high : -high;
      const F32x16 m16 = low > high ? low : high;
      const F32x8 half_low = __builtin_shufflevector(m16, m16, 0, 1, 2, 3, 4, 5, 6, 7),
                  half_high = __builtin_shufflevector(m16, m16, 8, 9, 10, 11, 12, 13, 14, 15);
      const F32x8 m8 = half_low > half_high ? half_low : half_high;
      float largest = 0.0f;
      for (int l = 0; l < 8; ++l) largest = m8[l] > largest ? m8[l] : largest;
      const float inverse = largest > 0.0f ? 127.0f / largest : 0.0f;
      std::int32_t sum = 0;
      for (std::size_t k = 0; k < kQ8Block; ++k) {
        const float scaled = in[k] * inverse;
        out[k] = static_cast<std::int8_t>(static_cast<int>(scaled + (scaled < 0.0f ? -0.5f : 0.5f)));
        sum += out[k];
      }
      sums[m * blocks + b] = 128 * sum;
      scales[m * blocks + b] = largest / 127.0f;
    }
  }
}

// erf as a rational function of x on [-4, 4] (beyond, erf is +-1 in float): the approximation
// Eigen and XLA use for float, within a few ulp of std::erf. Unlike std::erf (a library call,
// 18 % of a query's CPU) the loop over a layer's activations vectorises.
inline float erf_rational(float a) {
  const float x = a < -4.0f ? -4.0f : (a > 4.0f ? 4.0f : a);
  const float x2 = x * x;
  float p = -2.72614225801306e-10f;
  p = p * x2 + 2.77068142495902e-08f;
  p = p * x2 + -2.10102402082508e-06f;
  p = p * x2 + -5.69250639462346e-05f;
  p = p * x2 + -7.34990630326855e-04f;
  p = p * x2 + -2.95459980854025e-03f;
  p = p * x2 + -1.60960333262415e-02f;
  float q = -1.45660718464996e-05f;
  q = q * x2 + -2.13374055278905e-04f;
  q = q * x2 + -1.68282697438203e-03f;
  q = q * x2 + -7.37332916720468e-03f;
  q = q * x2 + -1.42647390514189e-02f;
  return x * p / q;
}

// BERT's exact GELU, 0.5 x (1 + erf(x / sqrt 2)), in place.
inline void gelu_body(float* x, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) x[i] = 0.5f * x[i] * (1.0f + erf_rational(x[i] * 0.70710678118654752f));
}

// e^x for x <= 0 (softmax after subtracting the row's maximum): Cephes' expf, range reduction
// by ln 2 and a degree-6 polynomial, within 2 ulp; vectorises where std::exp is a call.
typedef std::int32_t I32x16 __attribute__((vector_size(64)));

inline F32x16 exp16(F32x16 x) {
  x = x < -87.0f ? F32x16{} - 87.0f : x;
  // round to nearest (x <= 0): truncation of x log2(e) - 0.5
  const F32x16 n = __builtin_convertvector(__builtin_convertvector(x * 1.44269504088896341f - 0.5f, I32x16), F32x16);
  const F32x16 r = (x - n * 0.693359375f) - n * -2.12194440e-4f;
  F32x16 p = F32x16{} + 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const F32x16 y = p * r * r + r + 1.0f;
  const I32x16 bits = (__builtin_convertvector(n, I32x16) + 127) << 23;
  F32x16 scale;
  __builtin_memcpy(&scale, &bits, sizeof scale);
  return y * scale;
}

inline float exp_nonpositive(float x) { return exp16(F32x16{} + x)[0]; }

// Sum of n floats in 16 partial sums, then the fixed tree (a plain running sum cannot be
// reordered, so it would not vectorise).
inline float sum16(const float* x, std::size_t n) {
  F32x16 sums = {};
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) sums += load16(x + i);
  for (std::size_t l = 0; i < n; ++i, ++l) sums[l] += x[i];
  return sum_lanes(sums);
}

// Each row of x (rows x width): (x - mean) / sqrt(variance + eps) * gain + bias, in place.
// `scratch` holds width floats.
inline void layer_norm_body(float* x, std::size_t rows, std::size_t width, const float* gain, const float* bias,
                            float eps, float* scratch) {
  for (std::size_t m = 0; m < rows; ++m) {
    float* row = x + m * width;
    const float mean = sum16(row, width) / static_cast<float>(width);
    for (std::size_t i = 0; i < width; ++i) scratch[i] = (row[i] - mean) * (row[i] - mean);
    const float variance = sum16(scratch, width) / static_cast<float>(width);
    const float inverse = 1.0f / __builtin_sqrtf(variance + eps);
    for (std::size_t i = 0; i < width; ++i) row[i] = (row[i] - mean) * inverse * gain[i] + bias[i];
  }
}

// Multi-head self-attention over texts back to back (lengths[t] tokens each, every token real:
// no padding, no mask). qkv rows hold query, key, value (3 x hidden); context gets hidden per
// token. Per head the keys are copied transposed, so a query's scores for 16 tokens at once are
// one vector sum over the head's dimensions (no horizontal sums). The head width must be a
// multiple of 16; `scratch` holds (head width + 1) x (longest text rounded up to 16) floats.
inline std::size_t padded16(std::size_t n) { return (n + 15) / 16 * 16; }

inline void attention_body(const float* qkv, const std::int32_t* lengths, std::size_t texts, std::size_t hidden,
                           std::size_t heads, float* context, float* scratch) {
  const std::size_t d = hidden / heads, stride = 3 * hidden;
  const float scale = 1.0f / __builtin_sqrtf(static_cast<float>(d));
  std::size_t start = 0;
  for (std::size_t t = 0; t < texts; ++t) {
    const std::size_t n = static_cast<std::size_t>(lengths[t]), width = padded16(n);
    const float* text = qkv + start * stride;
    float* keys = scratch;               // d x width, the head's keys transposed, zero-padded
    float* weights = scratch + d * width;  // width
    for (std::size_t head = 0; head < heads; ++head) {
      for (std::size_t c = 0; c < d; ++c) {
        for (std::size_t j = 0; j < n; ++j) keys[c * width + j] = text[j * stride + hidden + head * d + c];
        for (std::size_t j = n; j < width; ++j) keys[c * width + j] = 0.0f;
      }
      for (std::size_t i = 0; i < n; ++i) {
        const float* query = text + i * stride + head * d;
        for (std::size_t j = 0; j < width; j += 16) {
          F32x16 dots = {};
          for (std::size_t c = 0; c < d; ++c) dots += query[c] * load16(keys + c * width + j);
          store16(weights + j, dots * scale);
        }
        float largest = weights[0];
        for (std::size_t j = 1; j < n; ++j) largest = weights[j] > largest ? weights[j] : largest;
        for (std::size_t j = 0; j < width; j += 16) store16(weights + j, exp16(load16(weights + j) - largest));
        float total = 0.0f;  // a text's few tokens: an in-order sum, the same at every level
        for (std::size_t j = 0; j < n; ++j) total += weights[j];
        const float inverse = 1.0f / total;
        float* out = context + (start + i) * hidden + head * d;
        for (std::size_t c = 0; c < d; c += 16) {  // 16 outputs in a register across the text's tokens
          F32x16 sums = {};
          for (std::size_t j = 0; j < n; ++j) sums += (weights[j] * inverse) * load16(text + j * stride + 2 * hidden + head * d + c);
          store16(out + c, sums);
        }
      }
    }
    start += n;
  }
}

}  // namespace
}  // namespace polarmem::q8

// The level's entry points for its EncoderKernels table (int8_linear.cpp), defined in namespace
// polarmem::q8 by the file compiled with that level's flags.
#define POLARMEM_ENCODER_STEPS(level)                                                                          \
  void quantize_##level(const float* x, std::size_t rows, std::size_t inputs, std::int8_t* codes, float* scales,   \
                        std::int32_t* sums) {                                                                  \
    quantize_rows_body(x, rows, inputs, codes, scales, sums);                                                  \
  }                                                                                                            \
  void gelu_##level(float* x, std::size_t n) { gelu_body(x, n); }                                              \
  void layer_norm_##level(float* x, std::size_t rows, std::size_t width, const float* gain, const float* bias,  \
                          float eps, float* scratch) {                                                         \
    layer_norm_body(x, rows, width, gain, bias, eps, scratch);                                                 \
  }                                                                                                            \
  void attention_##level(const float* qkv, const std::int32_t* lengths, std::size_t texts, std::size_t hidden,  \
                         std::size_t heads, float* context, float* scratch) {                                  \
    attention_body(qkv, lengths, texts, hidden, heads, context, scratch);                                      \
  }
