// The Int8Linear element-wise steps, one body compiled once per kernel level (each level's file
// includes it with that level's flags and -ffp-contract=off, so every level rounds alike and the
// codes, and with them the outputs, stay bit-identical across levels). Library calls (fmax,
// lrint, erf) are avoided so the loops vectorise.
#pragma once

#include <algorithm>
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

// 16 floats as one GCC vector: a zmm register at the AVX-512 level, SSE pieces at the baseline,
// the same IEEE operations per element everywhere. Loops that carry a sum from one step to the
// next use 8-float vectors (F32x8) instead: at the AVX2 level GCC keeps a 64-byte vector in memory
// between iterations, and the store-to-load chain made attention and GELU a third of a query's
// encode on an AVX2-only host (docs/performance.md, "A compiled encoder"). Per element the
// operations and their order are the same either way.
typedef float F32x16 __attribute__((vector_size(64)));
typedef float F32x8 __attribute__((vector_size(32)));
typedef float F32x4 __attribute__((vector_size(16)));
typedef std::int32_t I32x8 __attribute__((vector_size(32)));
typedef std::int8_t I8x8 __attribute__((vector_size(8)));
typedef std::int8_t I8x32 __attribute__((vector_size(32)));

inline F32x16 load16(const float* p) {
  F32x16 v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}

inline F32x8 load8(const float* p) {
  F32x8 v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}

inline void store8(float* p, F32x8 v) { __builtin_memcpy(p, &v, sizeof v); }

// Lanes summed as a fixed tree: halves, quarters, eighths, the last pair.
inline float sum_lanes(F32x16 v) {
  const F32x8 a = __builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7) +
                  __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15);
  const F32x4 b = __builtin_shufflevector(a, a, 0, 1, 2, 3) + __builtin_shufflevector(a, a, 4, 5, 6, 7);
  return (b[0] + b[2]) + (b[1] + b[3]);
}

// Row m's block b: codes round(x / scale) (half away from zero), scale = max |x| / 127, and
// 128 x the codes' sum.
inline void quantize_rows_body(const float* x, std::size_t rows, std::size_t inputs, std::int8_t* codes, float* scales,
                               std::int32_t* sums) {
  const std::size_t blocks = inputs / kQ8Block;
  for (std::size_t m = 0; m < rows; ++m) {
    for (std::size_t b = 0; b < blocks; ++b) {
      const float* in = x + m * inputs + b * kQ8Block;
      std::int8_t* out = codes + m * inputs + b * kQ8Block;
      // The block's largest magnitude: 8 lanes (magnitudes by clearing the sign bit), then the
      // lanes. 8-lane vectors: at the AVX2 level GCC compiled a 16-lane ?: to a scalar max per
      // element, 5 % of a query's encode (docs/performance.md, "A compiled encoder"). max and
      // |x| are exact, so every level finds the same largest magnitude.
      F32x8 m8 = {};
      for (std::size_t k = 0; k < kQ8Block; k += 8) {
        I32x8 bits;
        const F32x8 v = load8(in + k);
        __builtin_memcpy(&bits, &v, sizeof bits);
        bits &= 0x7fffffff;
        F32x8 magnitude;
        __builtin_memcpy(&magnitude, &bits, sizeof magnitude);
        m8 = magnitude > m8 ? magnitude : m8;
      }
      float largest = 0.0f;
      for (int l = 0; l < 8; ++l) largest = m8[l] > largest ? m8[l] : largest;
      const float inverse = largest > 0.0f ? 127.0f / largest : 0.0f;
      I32x8 sum = {};
      for (std::size_t k = 0; k < kQ8Block; k += 8) {
        const F32x8 scaled = load8(in + k) * inverse;
        // + or - one half, then truncation toward zero: rounds half away from zero
        const I32x8 code = __builtin_convertvector(scaled + (scaled < 0.0f ? F32x8{} - 0.5f : F32x8{} + 0.5f), I32x8);
        // each lane's low byte is its code (|code| <= 127); a byte shuffle, where a narrowing
        // conversion compiled to a scalar extract per lane at the AVX2 level
        I8x32 bytes;
        __builtin_memcpy(&bytes, &code, sizeof bytes);
        const I8x8 narrow = __builtin_shufflevector(bytes, bytes, 0, 4, 8, 12, 16, 20, 24, 28);
        __builtin_memcpy(out + k, &narrow, sizeof narrow);
        sum += code;
      }
      std::int32_t total = 0;  // integers: any order gives the same sum
      for (int l = 0; l < 8; ++l) total += sum[l];
      sums[m * blocks + b] = 128 * total;
      scales[m * blocks + b] = largest / 127.0f;
    }
  }
}

// erf as a rational function of x on [-4, 4] (beyond, erf is +-1 in float): the approximation
// Eigen and XLA use for float, within a few ulp of std::erf. Unlike std::erf (a library call,
// 18 % of a query's CPU) it runs on 8 lanes at once: a template over float and F32x8, the same
// operations (GCC left the plain float loop scalar at the AVX2 level).
template <typename T>
inline T erf_rational(T a) {
  const T x = a < -4.0f ? T{} - 4.0f : (a > 4.0f ? T{} + 4.0f : a);
  const T x2 = x * x;
  T p = T{} + -2.72614225801306e-10f;
  p = p * x2 + 2.77068142495902e-08f;
  p = p * x2 + -2.10102402082508e-06f;
  p = p * x2 + -5.69250639462346e-05f;
  p = p * x2 + -7.34990630326855e-04f;
  p = p * x2 + -2.95459980854025e-03f;
  p = p * x2 + -1.60960333262415e-02f;
  T q = T{} + -1.45660718464996e-05f;
  q = q * x2 + -2.13374055278905e-04f;
  q = q * x2 + -1.68282697438203e-03f;
  q = q * x2 + -7.37332916720468e-03f;
  q = q * x2 + -1.42647390514189e-02f;
  return x * p / q;
}

// BERT's exact GELU, 0.5 x (1 + erf(x / sqrt 2)), in place.
inline void gelu_body(float* x, std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const F32x8 v = load8(x + i);
    store8(x + i, 0.5f * v * (1.0f + erf_rational(v * 0.70710678118654752f)));
  }
  for (; i < n; ++i) x[i] = 0.5f * x[i] * (1.0f + erf_rational(x[i] * 0.70710678118654752f));
}

// e^x for x <= 0 (softmax after subtracting the row's maximum): Cephes' expf, range reduction
// by ln 2 and a degree-6 polynomial, within 2 ulp; vectorises where std::exp is a call.
inline F32x8 exp8(F32x8 x) {
  x = x < -87.0f ? F32x8{} - 87.0f : x;
  // round to nearest (x <= 0): truncation of x log2(e) - 0.5
  const F32x8 n = __builtin_convertvector(__builtin_convertvector(x * 1.44269504088896341f - 0.5f, I32x8), F32x8);
  const F32x8 r = (x - n * 0.693359375f) - n * -2.12194440e-4f;
  F32x8 p = F32x8{} + 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const F32x8 y = p * r * r + r + 1.0f;
  const I32x8 bits = (__builtin_convertvector(n, I32x8) + 127) << 23;
  F32x8 scale;
  __builtin_memcpy(&scale, &bits, sizeof scale);
  return y * scale;
}

inline float exp_nonpositive(float x) { return exp8(F32x8{} + x)[0]; }

// Sum of n floats in 16 partial sums, then the fixed tree (a plain running sum cannot be
// reordered, so it would not vectorise).
inline float sum16(const float* x, std::size_t n) {
  F32x8 low = {}, high = {};  // lanes 0-7 and 8-15
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    low += load8(x + i);
    high += load8(x + i + 8);
  }
  for (std::size_t l = 0; i < n; ++i, ++l) (l < 8 ? low[l] : high[l - 8]) += x[i];
  const F32x16 sums = __builtin_shufflevector(low, high, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
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
// one vector sum over the head's dimensions (no horizontal sums). Up to kAttentionQueries queries
// go through the keys and values together: each query's sums run in the same order as alone,
// but the queries' chains are independent, so one's adds no longer wait on the previous add's
// latency (alone, the per-query chains made attention 100 us of a 12-token encode on Zen 2,
// ~30x its arithmetic). The head width must be a multiple of 16; `scratch` holds
// (head width + kAttentionQueries) x (longest text rounded up to 16) floats.
inline std::size_t padded16(std::size_t n) { return (n + 15) / 16 * 16; }

inline void attention_body(const float* qkv, const std::int32_t* lengths, std::size_t texts, std::size_t hidden,
                           std::size_t heads, float* context, float* scratch) {
  constexpr std::size_t Q = kAttentionQueries;
  const std::size_t d = hidden / heads, stride = 3 * hidden;
  const float scale = 1.0f / __builtin_sqrtf(static_cast<float>(d));
  std::size_t start = 0;
  for (std::size_t t = 0; t < texts; ++t) {
    const std::size_t n = static_cast<std::size_t>(lengths[t]), width = padded16(n);
    const float* text = qkv + start * stride;
    float* keys = scratch;               // d x width, the head's keys transposed, zero-padded
    float* weights = scratch + d * width;  // Q x width, one row per query of the group
    for (std::size_t head = 0; head < heads; ++head) {
      for (std::size_t c = 0; c < d; ++c) {
        for (std::size_t j = 0; j < n; ++j) keys[c * width + j] = text[j * stride + hidden + head * d + c];
        for (std::size_t j = n; j < width; ++j) keys[c * width + j] = 0.0f;
      }
      for (std::size_t first = 0; first < n; first += Q) {
        // a group of up to Q queries; a short last group repeats its last query (computed, not stored)
        const float* query[Q];
        for (std::size_t q = 0; q < Q; ++q) query[q] = text + std::min(first + q, n - 1) * stride + head * d;
        const std::size_t group = std::min(Q, n - first);
        for (std::size_t j = 0; j < width; j += 16) {
          F32x8 low[Q] = {}, high[Q] = {};
          for (std::size_t c = 0; c < d; ++c) {
            const F32x8 key_low = load8(keys + c * width + j), key_high = load8(keys + c * width + j + 8);
            for (std::size_t q = 0; q < Q; ++q) {
              low[q] += query[q][c] * key_low;
              high[q] += query[q][c] * key_high;
            }
          }
          for (std::size_t q = 0; q < Q; ++q) {
            store8(weights + q * width + j, low[q] * scale);
            store8(weights + q * width + j + 8, high[q] * scale);
          }
        }
        // softmax per query, the queries' scalar chains side by side
        float largest[Q], total[Q], inverse[Q];
        for (std::size_t q = 0; q < Q; ++q) largest[q] = weights[q * width];
        for (std::size_t j = 1; j < n; ++j)
          for (std::size_t q = 0; q < Q; ++q) {
            const float score = weights[q * width + j];
            largest[q] = score > largest[q] ? score : largest[q];
          }
        for (std::size_t q = 0; q < Q; ++q) {
          float* row = weights + q * width;
          for (std::size_t j = 0; j < width; j += 8) store8(row + j, exp8(load8(row + j) - largest[q]));
          total[q] = 0.0f;
        }
        for (std::size_t j = 0; j < n; ++j)  // a text's few tokens: in-order sums, the same at every level
          for (std::size_t q = 0; q < Q; ++q) total[q] += weights[q * width + j];
        for (std::size_t q = 0; q < Q; ++q) inverse[q] = 1.0f / total[q];
        for (std::size_t c = 0; c < d; c += 16) {  // 16 outputs per query in registers across the tokens
          F32x8 low[Q] = {}, high[Q] = {};
          for (std::size_t j = 0; j < n; ++j) {
            const float* value = text + j * stride + 2 * hidden + head * d + c;
            const F32x8 value_low = load8(value), value_high = load8(value + 8);
            for (std::size_t q = 0; q < Q; ++q) {
              const float weight = weights[q * width + j] * inverse[q];
              low[q] += weight * value_low;
              high[q] += weight * value_high;
            }
          }
          for (std::size_t q = 0; q < group; ++q) {
            float* out = context + (start + first + q) * hidden + head * d + c;
            store8(out, low[q]);
            store8(out + 8, high[q]);
          }
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
#define POLARMEM_ENCODER_STEPS(level)                                                                            \
  void quantize_##level(const float* x, std::size_t rows, std::size_t inputs, std::int8_t* codes, float* scales, \
                        std::int32_t* sums) {                                                                    \
    quantize_rows_body(x, rows, inputs, codes, scales, sums);                                                    \
  }                                                                                                              \
  void gelu_##level(float* x, std::size_t n) { gelu_body(x, n); }                                                \
  void layer_norm_##level(float* x, std::size_t rows, std::size_t width, const float* gain, const float* bias,   \
                          float eps, float* scratch) {                                                           \
    layer_norm_body(x, rows, width, gain, bias, eps, scratch);                                                   \
  }                                                                                                              \
  void attention_##level(const float* qkv, const std::int32_t* lengths, std::size_t texts, std::size_t hidden,   \
                         std::size_t heads, float* context, float* scratch) {                                    \
    attention_body(qkv, lengths, texts, hidden, heads, context, scratch);                                        \
  }
