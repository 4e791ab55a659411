// Int8Linear: quantisation, packing, kernel choice and the scalar reference kernel.
#include "polarmem/int8_linear.hpp"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

#include "int8_linear_body.hpp"
#include "polarmem/encoder_kernels.hpp"
#include "polarmem/error.hpp"
#include "polarmem/simd.hpp"

namespace polarmem {
namespace q8 {
#define POLARMEM_DECLARE_ENCODER_STEPS(level)                                                                    \
  void quantize_##level(const float* x, std::size_t rows, std::size_t inputs, std::int8_t* codes, float* scales, \
                        std::int32_t* sums);                                                                     \
  void gelu_##level(float* x, std::size_t n);                                                                    \
  void layer_norm_##level(float* x, std::size_t rows, std::size_t width, const float* gain, const float* bias,   \
                          float eps, float* scratch);                                                            \
  void attention_##level(const float* qkv, const std::int32_t* lengths, std::size_t texts, std::size_t hidden,   \
                         std::size_t heads, float* context, float* scratch);
POLARMEM_DECLARE_ENCODER_STEPS(avx2)
POLARMEM_DECLARE_ENCODER_STEPS(avx512)
#undef POLARMEM_DECLARE_ENCODER_STEPS
POLARMEM_ENCODER_STEPS(scalar)  // the baseline build of the same bodies
void matmul_avx2(const Q8Activations& x, const std::uint8_t* packed, const float* weight_scales, const float* bias,
                 std::size_t outputs, float* y);
void matmul_avx512_vnni(const Q8Activations& x, const std::uint8_t* packed, const float* weight_scales,
                        const float* bias, std::size_t outputs, float* y);
}  // namespace q8

namespace {

void matmul_scalar(const Q8Activations& x, const std::uint8_t* packed, const float* weight_scales, const float* bias,
                   std::size_t outputs, float* y) {
  const std::size_t blocks = x.inputs / kQ8Block;
  for (std::size_t m = 0; m < x.rows; ++m) {
    const std::int8_t* row = x.codes.data() + m * x.inputs;
    for (std::size_t n = 0; n < outputs; ++n) {
      const std::size_t group = n / kQ8Columns, column = n % kQ8Columns;
      float sum = 0.0f;
      for (std::size_t b = 0; b < blocks; ++b) {
        const std::uint8_t* block = packed + ((group * blocks + b) * kQ8Block) * kQ8Columns;
        std::int32_t dot = 0;
        for (std::size_t quad = 0; quad < kQ8Block / 4; ++quad) {
          for (std::size_t j = 0; j < 4; ++j) {
            const std::int32_t weight = static_cast<std::int32_t>(block[(quad * kQ8Columns + column) * 4 + j]) - 128;
            dot += row[b * kQ8Block + quad * 4 + j] * weight;
          }
        }
        const std::size_t at = (group * blocks + b) * kQ8Columns + column;
        sum = std::fma(static_cast<float>(dot), weight_scales[at] * x.scales[m * blocks + b], sum);
      }
      y[m * outputs + n] = sum + bias[n];
    }
  }
}

constexpr EncoderKernels kScalar{"scalar",        matmul_scalar,         q8::quantize_scalar,
                                 q8::gelu_scalar, q8::layer_norm_scalar, q8::attention_scalar};
constexpr EncoderKernels kAvx2{"avx2",        q8::matmul_avx2,     q8::quantize_avx2,
                               q8::gelu_avx2, q8::layer_norm_avx2, q8::attention_avx2};
constexpr EncoderKernels kAvx512Vnni{"avx512_vnni",   q8::matmul_avx512_vnni, q8::quantize_avx512,
                                     q8::gelu_avx512, q8::layer_norm_avx512,  q8::attention_avx512};

bool supports_vnni512() {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
}

}  // namespace

void quantize_activations(const float* x, std::size_t rows, std::size_t inputs, Q8Activations* out,
                          const EncoderKernels& kernel) {
  if (inputs % kQ8Block != 0) fail(ErrorCode::kInvalidArgument, "activation width must be a multiple of 32");
  const std::size_t blocks = inputs / kQ8Block;
  if (out->codes.size() < rows * inputs) out->codes.resize(rows * inputs);
  if (out->scales.size() < rows * blocks) out->scales.resize(rows * blocks);
  if (out->sums.size() < rows * blocks) out->sums.resize(rows * blocks);
  out->rows = rows;
  out->inputs = inputs;
  kernel.quantize(x, rows, inputs, out->codes.data(), out->scales.data(), out->sums.data());
}

const EncoderKernels* encoder_kernels(const char* name) {
  const std::string wanted(name);
  if (wanted == "scalar") return &kScalar;
  if (wanted == "avx2") return cpu_supports(SimdLevel::kAvx2) ? &kAvx2 : nullptr;
  if (wanted == "avx512_vnni") return supports_vnni512() ? &kAvx512Vnni : nullptr;
  return nullptr;
}

const EncoderKernels& best_encoder_kernels() {
  // The core's level (POLARMEM_SIMD or the CPU's best) caps this one too, so one setting
  // pins every kernel for a comparison.
  switch (active_simd_level()) {
    case SimdLevel::kAvx512:
      if (supports_vnni512()) return kAvx512Vnni;
      [[fallthrough]];  // AVX-512 without VNNI: the AVX2 kernel's 16-bit products are exact too
    case SimdLevel::kAvx2: return kAvx2;
    case SimdLevel::kScalar: break;
  }
  return kScalar;
}

Int8Linear::Int8Linear(const float* weight, const float* bias, std::size_t outputs, std::size_t inputs)
    : outputs_(outputs), inputs_(inputs) {
  if (outputs == 0 || outputs % kQ8Columns != 0 || inputs == 0 || inputs % kQ8Block != 0) {
    fail(ErrorCode::kInvalidArgument, "Int8Linear needs outputs a multiple of 16 and inputs a multiple of 32, got " +
                                          std::to_string(outputs) + " x " + std::to_string(inputs));
  }
  const std::size_t blocks = inputs / kQ8Block;
  packed_.resize(outputs * inputs);
  scales_.resize(outputs * blocks);
  bias_.resize(outputs);
  // Weights take the activations' rounding rule (one implementation), stored + 128.
  AlignedBuffer<std::int8_t> codes(inputs);
  AlignedBuffer<float> row_scales(blocks);
  AlignedBuffer<std::int32_t> row_sums(blocks);
  for (std::size_t n = 0; n < outputs; ++n) {
    const std::size_t group = n / kQ8Columns, column = n % kQ8Columns;
    q8::quantize_rows_body(weight + n * inputs, 1, inputs, codes.data(), row_scales.data(), row_sums.data());
    for (std::size_t b = 0; b < blocks; ++b) {
      const std::size_t at = (group * blocks + b) * kQ8Columns + column;
      scales_[at] = row_scales[b];
      std::uint8_t* block = packed_.data() + ((group * blocks + b) * kQ8Block) * kQ8Columns;
      for (std::size_t k = 0; k < kQ8Block; ++k) {
        block[((k / 4) * kQ8Columns + column) * 4 + k % 4] =
            static_cast<std::uint8_t>(static_cast<int>(codes[b * kQ8Block + k]) + 128);
      }
    }
    bias_[n] = bias != nullptr ? bias[n] : 0.0f;
  }
}

void Int8Linear::forward(const Q8Activations& x, float* y, const EncoderKernels& kernel) const {
  if (x.inputs != inputs_) {
    fail(ErrorCode::kInvalidArgument,
         "Int8Linear expects " + std::to_string(inputs_) + " inputs, got " + std::to_string(x.inputs));
  }
  kernel.matmul(x, packed_.data(), scales_.data(), bias_.data(), outputs_, y);
}

}  // namespace polarmem
