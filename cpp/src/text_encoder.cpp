// TextEncoder: the transformer forward pass over Int8Linear layers.
#include "polarmem/text_encoder.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "polarmem/error.hpp"

namespace polarmem {
namespace {

struct Workspace {
  AlignedBuffer<float> x, qkv, context, wide, scratch;
  Q8Activations quantized;

  void reserve(std::size_t tokens, std::size_t hidden, std::size_t inner, std::size_t scratch_floats) {
    grow(x, tokens * hidden);
    grow(qkv, tokens * 3 * hidden);
    grow(context, tokens * hidden);
    grow(wide, tokens * inner);
    grow(scratch, scratch_floats);
  }
  static void grow(AlignedBuffer<float>& buffer, std::size_t size) {
    if (buffer.size() < size) buffer.resize(size);
  }
};

const TensorView& tensor(const TensorMap& tensors, const std::string& name, std::vector<std::size_t> shape) {
  const auto found = tensors.find(name);
  if (found == tensors.end()) fail(ErrorCode::kInvalidArgument, "the encoder's weights lack \"" + name + "\"");
  if (found->second.shape != shape) {
    std::string want, got;
    for (std::size_t d : shape) want += (want.empty() ? "" : " x ") + std::to_string(d);
    for (std::size_t d : found->second.shape) got += (got.empty() ? "" : " x ") + std::to_string(d);
    fail(ErrorCode::kInvalidArgument, "the encoder's \"" + name + "\" is " + got + ", expected " + want);
  }
  return found->second;
}

AlignedBuffer<float> copy(const TensorView& view) {
  std::size_t size = 1;
  for (std::size_t d : view.shape) size *= d;
  AlignedBuffer<float> out(size);
  std::memcpy(out.data(), view.data, size * sizeof(float));
  return out;
}

}  // namespace

TextEncoder::TextEncoder(const TransformerConfig& config, const TensorMap& tensors, const EncoderKernels* kernels)
    : config_(config), kernel_(kernels != nullptr ? kernels : &best_encoder_kernels()) {
  const std::size_t h = config.hidden, inner = config.intermediate;
  if (config.layers == 0 || h == 0 || config.heads == 0 || h % config.heads != 0 || (h / config.heads) % 16 != 0 ||
      inner == 0 || config.max_positions == 0) {
    fail(ErrorCode::kInvalidArgument,
         "the encoder's configuration is incomplete (layers, hidden, heads, intermediate, "
         "max_positions; hidden / heads a multiple of 16)");
  }
  const auto found = tensors.find("embeddings.word_embeddings.weight");
  if (found == tensors.end() || found->second.shape.size() != 2) {
    fail(ErrorCode::kInvalidArgument,
         "the encoder's weights lack \"embeddings.word_embeddings.weight\" (vocabulary x hidden)");
  }
  vocabulary_ = found->second.shape[0];
  word_embeddings_ = copy(tensor(tensors, "embeddings.word_embeddings.weight", {vocabulary_, h}));
  position_embeddings_ = copy(tensor(tensors, "embeddings.position_embeddings.weight", {config.max_positions, h}));
  // Single-text inputs carry token type 0 everywhere, as sentence-transformers sends them.
  const auto types = tensors.find("embeddings.token_type_embeddings.weight");
  if (types == tensors.end() || types->second.shape.size() != 2 || types->second.shape[0] < 1 ||
      types->second.shape[1] != h) {
    fail(ErrorCode::kInvalidArgument,
         "the encoder's weights lack \"embeddings.token_type_embeddings.weight\" (types x hidden)");
  }
  token_type_embedding_ = copy(TensorView{types->second.data, {h}});
  embedding_norm_.gain = copy(tensor(tensors, "embeddings.LayerNorm.weight", {h}));
  embedding_norm_.bias = copy(tensor(tensors, "embeddings.LayerNorm.bias", {h}));

  AlignedBuffer<float> stacked_weight(3 * h * h), stacked_bias(3 * h);
  for (std::size_t l = 0; l < config.layers; ++l) {
    const std::string prefix = "encoder.layer." + std::to_string(l) + ".";
    const char* parts[3] = {"query", "key", "value"};
    for (std::size_t p = 0; p < 3; ++p) {
      const std::string name = prefix + "attention.self." + parts[p];
      std::memcpy(stacked_weight.data() + p * h * h, tensor(tensors, name + ".weight", {h, h}).data,
                  h * h * sizeof(float));
      std::memcpy(stacked_bias.data() + p * h, tensor(tensors, name + ".bias", {h}).data, h * sizeof(float));
    }
    Layer layer;
    layer.qkv = Int8Linear(stacked_weight.data(), stacked_bias.data(), 3 * h, h);
    layer.attention_output = Int8Linear(tensor(tensors, prefix + "attention.output.dense.weight", {h, h}).data,
                                        tensor(tensors, prefix + "attention.output.dense.bias", {h}).data, h, h);
    layer.attention_norm.gain = copy(tensor(tensors, prefix + "attention.output.LayerNorm.weight", {h}));
    layer.attention_norm.bias = copy(tensor(tensors, prefix + "attention.output.LayerNorm.bias", {h}));
    layer.intermediate = Int8Linear(tensor(tensors, prefix + "intermediate.dense.weight", {inner, h}).data,
                                    tensor(tensors, prefix + "intermediate.dense.bias", {inner}).data, inner, h);
    layer.output = Int8Linear(tensor(tensors, prefix + "output.dense.weight", {h, inner}).data,
                              tensor(tensors, prefix + "output.dense.bias", {h}).data, h, inner);
    layer.output_norm.gain = copy(tensor(tensors, prefix + "output.LayerNorm.weight", {h}));
    layer.output_norm.bias = copy(tensor(tensors, prefix + "output.LayerNorm.bias", {h}));
    layers_.push_back(std::move(layer));
  }
}

void TextEncoder::encode(const std::int32_t* ids, const std::int32_t* lengths, std::size_t texts, float* out) const {
  const std::size_t h = config_.hidden, inner = config_.intermediate;
  std::size_t tokens = 0;
  for (std::size_t t = 0; t < texts; ++t) {
    if (lengths[t] < 1 || static_cast<std::size_t>(lengths[t]) > config_.max_positions) {
      fail(ErrorCode::kInvalidArgument, "text " + std::to_string(t) + " has " + std::to_string(lengths[t]) +
                                            " tokens; the encoder takes 1 to " + std::to_string(config_.max_positions));
    }
    tokens += static_cast<std::size_t>(lengths[t]);
  }
  for (std::size_t i = 0; i < tokens; ++i) {
    if (ids[i] < 0 || static_cast<std::size_t>(ids[i]) >= vocabulary_) {
      fail(ErrorCode::kInvalidArgument, "token id " + std::to_string(ids[i]) + " is outside the vocabulary (0 to " +
                                            std::to_string(vocabulary_ - 1) + ")");
    }
  }
  std::size_t longest = 0;
  for (std::size_t t = 0; t < texts; ++t) longest = std::max(longest, static_cast<std::size_t>(lengths[t]));
  // A thread keeps its buffers for calls of up to 256 tokens (queries, names): allocating,
  // zeroing and faulting in ~200 KB per query measured 2 % of its CPU. Larger calls (ingest)
  // use buffers of their own, so no thread holds megabytes.
  thread_local Workspace kept;
  Workspace own;
  Workspace& work = tokens <= 256 ? kept : own;
  work.reserve(tokens, h, inner, std::max(h, (longest + 15) / 16 * 16 * (h / config_.heads + kAttentionQueries)));
  float *x = work.x.data(), *qkv = work.qkv.data(), *context = work.context.data(), *wide = work.wide.data();
  float* scratch = work.scratch.data();
  Q8Activations& quantized = work.quantized;
  const float eps = config_.layer_norm_eps;

  std::size_t at = 0;
  for (std::size_t t = 0; t < texts; ++t) {
    for (std::size_t p = 0; p < static_cast<std::size_t>(lengths[t]); ++p, ++at) {
      const float* word = word_embeddings_.data() + static_cast<std::size_t>(ids[at]) * h;
      const float* position = position_embeddings_.data() + p * h;
      float* row = x + at * h;
      for (std::size_t i = 0; i < h; ++i) row[i] = word[i] + position[i] + token_type_embedding_[i];
    }
  }
  kernel_->layer_norm(x, tokens, h, embedding_norm_.gain.data(), embedding_norm_.bias.data(), eps, scratch);

  for (const Layer& layer : layers_) {
    quantize_activations(x, tokens, h, &quantized, *kernel_);
    layer.qkv.forward(quantized, qkv, *kernel_);
    kernel_->attention(qkv, lengths, texts, h, config_.heads, context, scratch);
    quantize_activations(context, tokens, h, &quantized, *kernel_);
    layer.attention_output.forward(quantized, context, *kernel_);
    for (std::size_t i = 0; i < tokens * h; ++i) x[i] += context[i];
    kernel_->layer_norm(x, tokens, h, layer.attention_norm.gain.data(), layer.attention_norm.bias.data(), eps, scratch);

    quantize_activations(x, tokens, h, &quantized, *kernel_);
    layer.intermediate.forward(quantized, wide, *kernel_);
    kernel_->gelu(wide, tokens * inner);
    quantize_activations(wide, tokens, inner, &quantized, *kernel_);
    layer.output.forward(quantized, context, *kernel_);
    for (std::size_t i = 0; i < tokens * h; ++i) x[i] += context[i];
    kernel_->layer_norm(x, tokens, h, layer.output_norm.gain.data(), layer.output_norm.bias.data(), eps, scratch);
  }

  // Mean over each text's tokens, then unit length (sentence-transformers' pooling + Normalize).
  at = 0;
  for (std::size_t t = 0; t < texts; ++t) {
    float* vector = out + t * h;
    std::fill(vector, vector + h, 0.0f);
    const std::size_t n = static_cast<std::size_t>(lengths[t]);
    for (std::size_t p = 0; p < n; ++p, ++at)
      for (std::size_t i = 0; i < h; ++i) vector[i] += x[at * h + i];
    float norm = 0.0f;
    for (std::size_t i = 0; i < h; ++i) {
      vector[i] /= static_cast<float>(n);
      norm += vector[i] * vector[i];
    }
    // sentence-transformers divides by max(norm, 1e-12).
    const float inverse = 1.0f / std::max(std::sqrt(norm), 1e-12f);
    for (std::size_t i = 0; i < h; ++i) vector[i] *= inverse;
  }
}

}  // namespace polarmem
