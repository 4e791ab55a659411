// A linear layer y = x W^T + b with 8-bit weights and 8-bit activations, each scaled per block
// of 32 along the input dimension: the numerics of ONNX Runtime's MatMulNBits at accuracy
// level 4, which keep all-MiniLM-L6-v2's vectors at cosine >= 0.999 to fp32 (docs/performance.md,
// "Toward 2 ms per query"). Per-block scales matter: BERT's activations have outlier channels,
// and one scale per row or matrix moves every vector (cosine 0.990-0.996).
//
// The products are exact integers per block (sum of 32 int8 x int8 terms); the blocks are then
// summed in float in one fixed order, so every kernel level gives bit-identical outputs.
#pragma once

#include <cstddef>
#include <cstdint>

#include "polarmem/aligned_buffer.hpp"
#include "polarmem/encoder_kernels.hpp"

namespace polarmem {

// Weights are packed for kernels that compute 16 output columns at once: for each group of 16
// columns, each block of 32 inputs, each quad of 4 inputs: 16 columns x 4 bytes (64 bytes).
constexpr std::size_t kQ8Block = 32;
constexpr std::size_t kQ8Columns = 16;

// Quantised activations: row m's block b holds round(x / scale), scale = max |x| of the block /
// 127, and 128 x the sum of those codes (VNNI multiplies unsigned by signed bytes, so weights are
// stored + 128 and each block's product carries 128 x sum(codes) extra: subtracting it per row
// costs a 2.5 KB table instead of a per-weight-block offset streamed with the weights).
struct Q8Activations {
  AlignedBuffer<std::int8_t> codes;   // rows x inputs
  AlignedBuffer<float> scales;        // rows x (inputs / 32)
  AlignedBuffer<std::int32_t> sums;   // rows x (inputs / 32): 128 x sum of the block's codes
  std::size_t rows = 0;
  std::size_t inputs = 0;
};

void quantize_activations(const float* x, std::size_t rows, std::size_t inputs, Q8Activations* out,
                          const EncoderKernels& kernel);

class Int8Linear {
 public:
  Int8Linear() = default;
  // weight: outputs x inputs, row-major (torch's Linear layout); bias: outputs (may be null).
  // outputs must be a multiple of 16 and inputs of 32.
  Int8Linear(const float* weight, const float* bias, std::size_t outputs, std::size_t inputs);

  // y (rows x outputs) = x W^T + b for already quantised x.
  void forward(const Q8Activations& x, float* y, const EncoderKernels& kernel) const;

 private:
  std::size_t outputs_ = 0;
  std::size_t inputs_ = 0;
  AlignedBuffer<std::uint8_t> packed_;  // codes + 128
  AlignedBuffer<float> scales_;
  AlignedBuffer<float> bias_;
};

}  // namespace polarmem
