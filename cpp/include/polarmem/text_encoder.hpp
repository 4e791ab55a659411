// A BERT-style sentence encoder (all-MiniLM-L6-v2's architecture): token ids in, the
// L2-normalised mean of the last layer's token states out, as sentence-transformers computes it.
// Every linear layer runs on Int8Linear (8-bit weights and activations, scaled per block of 32);
// embeddings, layer norms, attention and GELU stay in fp32.
//
// Texts are encoded back to back without padding: the linear layers see the tokens of every
// text of a call as one matrix (each weight is read once per call), attention runs per text.
// No state changes after construction, so any number of threads may encode at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "polarmem/aligned_buffer.hpp"
#include "polarmem/encoder_kernels.hpp"
#include "polarmem/int8_linear.hpp"

namespace polarmem {

struct TransformerConfig {
  std::size_t layers = 0;
  std::size_t hidden = 0;
  std::size_t heads = 0;
  std::size_t intermediate = 0;
  std::size_t max_positions = 0;
  float layer_norm_eps = 1e-12f;
};

// A borrowed fp32 tensor, row-major. The encoder copies what it keeps.
struct TensorView {
  const float* data = nullptr;
  std::vector<std::size_t> shape;
};

// Named as in the Hugging Face checkpoint ("embeddings.word_embeddings.weight",
// "encoder.layer.0.attention.self.query.weight", ...).
using TensorMap = std::map<std::string, TensorView>;

class TextEncoder {
 public:
  // `kernels`: a level to pin (tests); by default the best this CPU runs.
  TextEncoder(const TransformerConfig& config, const TensorMap& tensors, const EncoderKernels* kernels = nullptr);

  // ids: the token ids of `texts` texts back to back (lengths[i] of them for text i, each
  // 1..max_positions); out: texts x hidden floats.
  void encode(const std::int32_t* ids, const std::int32_t* lengths, std::size_t texts, float* out) const;

  std::size_t dim() const { return config_.hidden; }
  const char* kernel_name() const { return kernel_->name; }

 private:
  struct Norm {
    AlignedBuffer<float> gain, bias;
  };
  struct Layer {
    Int8Linear qkv;  // query, key and value stacked: one pass over the input for all three
    Int8Linear attention_output;
    Norm attention_norm;
    Int8Linear intermediate;
    Int8Linear output;
    Norm output_norm;
  };

  TransformerConfig config_;
  std::size_t vocabulary_ = 0;
  AlignedBuffer<float> word_embeddings_, position_embeddings_, token_type_embedding_;
  Norm embedding_norm_;
  std::vector<Layer> layers_;
  const EncoderKernels* kernel_;
};

}  // namespace polarmem
