// Int8Linear and TextEncoder: every kernel level bit-identical to the scalar reference, the
// quantised product close to the fp32 one, a batch equal to its texts one by one, bad input
// refused. (Agreement with the real model is tested in Python against torch.)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "../src/int8_linear_body.hpp"
#include "check.hpp"
#include "polarmem/encoder_kernels.hpp"
#include "polarmem/error.hpp"
#include "polarmem/int8_linear.hpp"
#include "polarmem/text_encoder.hpp"

using namespace polarmem;

namespace {

std::vector<float> random_floats(std::size_t n, unsigned seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> g(0.0f, scale);
  std::vector<float> out(n);
  for (float& v : out) v = g(rng);
  return out;
}

std::vector<const EncoderKernels*> available_kernels() {
  std::vector<const EncoderKernels*> out;
  for (const char* name : {"scalar", "avx2", "avx512_vnni"}) {
    if (const EncoderKernels* k = encoder_kernels(name)) out.push_back(k);
    else std::printf("  (kernel %s not supported here)\n", name);
  }
  return out;
}

}  // namespace

POLARMEM_TEST(activation_codes_round_trip_within_half_a_step) {
  const std::size_t rows = 3, inputs = 96;
  auto x = random_floats(rows * inputs, 1);
  x[5] = 40.0f;  // an outlier channel only moves its own block's scale
  for (std::size_t k = 64; k < 96; ++k) x[2 * inputs + k] = 0.0f;  // an all-zero block
  Q8Activations q;
  quantize_activations(x.data(), rows, inputs, &q, *encoder_kernels("scalar"));
  for (std::size_t m = 0; m < rows; ++m) {
    for (std::size_t k = 0; k < inputs; ++k) {
      const float scale = q.scales[m * 3 + k / 32];
      const float back = static_cast<float>(q.codes[m * inputs + k]) * scale;
      CHECK(std::fabs(back - x[m * inputs + k]) <= 0.5f * scale + 1e-6f);
    }
  }
  CHECK(q.scales[2 * 3 + 2] == 0.0f);
  CHECK(q.scales[0] > 0.3f && q.scales[1] < 0.1f);
}

POLARMEM_TEST(every_kernel_level_is_bit_identical_to_scalar) {
  const auto kernels = available_kernels();
  for (std::size_t outputs : {16, 48, 64, 1152 / 8}) {
    for (std::size_t inputs : {32, 96, 384}) {
      const auto w = random_floats(outputs * inputs, 7 + outputs, 0.05f);
      const auto b = random_floats(outputs, 9);
      Int8Linear linear(w.data(), b.data(), outputs, inputs);
      for (std::size_t rows = 1; rows <= 13; rows += 3) {
        const auto x = random_floats(rows * inputs, 11 + rows);
        Q8Activations q;
        quantize_activations(x.data(), rows, inputs, &q, *encoder_kernels("scalar"));
        std::vector<float> reference(rows * outputs);
        linear.forward(q, reference.data(), *encoder_kernels("scalar"));
        for (const EncoderKernels* kernel : kernels) {
          std::vector<float> y(rows * outputs, -1.0f);
          linear.forward(q, y.data(), *kernel);
          bool same = true;
          for (std::size_t i = 0; i < y.size(); ++i) same = same && y[i] == reference[i];
          if (!same) std::printf("  %s differs: %zu x %zu, %zu rows\n", kernel->name, outputs, inputs, rows);
          CHECK(same);
        }
      }
    }
  }
}

POLARMEM_TEST(every_level_quantises_and_applies_gelu_alike) {
  const std::size_t rows = 7, inputs = 1536;
  auto x = random_floats(rows * inputs, 21, 3.0f);
  x[3] = 0.5f / 127.0f * 4.0f;  // values near a rounding tie
  Q8Activations reference;
  quantize_activations(x.data(), rows, inputs, &reference, *encoder_kernels("scalar"));
  std::vector<float> gelu_reference(x);
  encoder_kernels("scalar")->gelu(gelu_reference.data(), gelu_reference.size());
  for (const EncoderKernels* kernel : available_kernels()) {
    Q8Activations q;
    quantize_activations(x.data(), rows, inputs, &q, *kernel);
    CHECK(std::memcmp(q.codes.data(), reference.codes.data(), rows * inputs) == 0);
    CHECK(std::memcmp(q.scales.data(), reference.scales.data(), rows * inputs / 32 * sizeof(float)) == 0);
    CHECK(std::memcmp(q.sums.data(), reference.sums.data(), rows * inputs / 32 * sizeof(std::int32_t)) == 0);
    std::vector<float> y(x);
    kernel->gelu(y.data(), y.size());
    CHECK(std::memcmp(y.data(), gelu_reference.data(), y.size() * sizeof(float)) == 0);
  }
  // GELU itself: 0.5 x (1 + erf(x / sqrt 2)) within float rounding.
  double worst = 0.0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double exact = 0.5 * x[i] * (1.0 + std::erf(x[i] / std::sqrt(2.0)));
    worst = std::max(worst, std::fabs(exact - gelu_reference[i]) / std::max(1.0, std::fabs(exact)));
  }
  CHECK(worst < 1e-5);
}

// The element-wise steps run 8 lanes at a time with a scalar tail: both must give the same
// float for the same input, and the codes must follow the rounding rule written out here.
POLARMEM_TEST(vector_lanes_and_scalar_tails_compute_alike) {
  auto x = random_floats(16, 31, 3.0f);
  for (const EncoderKernels* kernel : available_kernels()) {
    std::vector<float> whole(x), head(x);
    kernel->gelu(whole.data(), 16);
    kernel->gelu(head.data(), 13);  // lanes 8-12 take the scalar tail
    CHECK(std::memcmp(whole.data(), head.data(), 13 * sizeof(float)) == 0);
  }
  const std::size_t inputs = 64;
  auto row = random_floats(inputs, 32, 5.0f);
  for (const EncoderKernels* kernel : available_kernels()) {
    Q8Activations q;
    quantize_activations(row.data(), 1, inputs, &q, *kernel);
    for (std::size_t b = 0; b < inputs / 32; ++b) {
      float largest = 0.0f;
      for (std::size_t k = 0; k < 32; ++k) largest = std::max(largest, std::fabs(row[b * 32 + k]));
      const float inverse = 127.0f / largest;
      std::int32_t sum = 0;
      for (std::size_t k = 0; k < 32; ++k) {
        const float scaled = row[b * 32 + k] * inverse;
        const int code = static_cast<int>(scaled + (scaled < 0.0f ? -0.5f : 0.5f));
        CHECK(q.codes[b * 32 + k] == code);
        sum += code;
      }
      CHECK(q.sums[b] == 128 * sum);
    }
  }
}

POLARMEM_TEST(quantised_product_is_close_to_fp32) {
  const std::size_t rows = 12, outputs = 64, inputs = 384;
  const auto w = random_floats(outputs * inputs, 3, 0.05f);
  const auto x = random_floats(rows * inputs, 4);
  Int8Linear linear(w.data(), nullptr, outputs, inputs);
  Q8Activations q;
  quantize_activations(x.data(), rows, inputs, &q, *encoder_kernels("scalar"));
  std::vector<float> y(rows * outputs);
  linear.forward(q, y.data(), best_encoder_kernels());
  double error = 0.0, norm = 0.0;
  for (std::size_t m = 0; m < rows; ++m) {
    for (std::size_t n = 0; n < outputs; ++n) {
      double exact = 0.0;
      for (std::size_t k = 0; k < inputs; ++k) exact += static_cast<double>(x[m * inputs + k]) * w[n * inputs + k];
      error += (y[m * outputs + n] - exact) * (y[m * outputs + n] - exact);
      norm += exact * exact;
    }
  }
  CHECK(std::sqrt(error / norm) < 0.01);
}

POLARMEM_TEST(linear_refuses_shapes_the_kernels_cannot_tile) {
  std::vector<float> w(40 * 32);
  CHECK_THROWS(Int8Linear(w.data(), nullptr, 40, 32));
  CHECK_THROWS(Int8Linear(w.data(), nullptr, 16, 40));
  Int8Linear linear(w.data(), nullptr, 16, 32);
  Q8Activations q;
  std::vector<float> x(64), y(32);
  quantize_activations(x.data(), 1, 64, &q, best_encoder_kernels());
  CHECK_THROWS(linear.forward(q, y.data(), best_encoder_kernels()));
}

namespace {

struct TinyModel {
  TransformerConfig config{2, 64, 4, 128, 16, 1e-12f};
  std::size_t vocab = 50;
  std::map<std::string, std::vector<float>> storage;
  TensorMap tensors;

  void add(const std::string& name, std::vector<std::size_t> shape, unsigned seed, float scale, float offset = 0.0f) {
    std::size_t size = 1;
    for (std::size_t d : shape) size *= d;
    auto values = random_floats(size, seed, scale);
    for (float& v : values) v += offset;
    storage[name] = std::move(values);
    tensors[name] = TensorView{storage[name].data(), shape};
  }

  TinyModel() {
    const std::size_t h = config.hidden, inner = config.intermediate;
    unsigned seed = 100;
    add("embeddings.word_embeddings.weight", {vocab, h}, seed++, 0.5f);
    add("embeddings.position_embeddings.weight", {config.max_positions, h}, seed++, 0.1f);
    add("embeddings.token_type_embeddings.weight", {2, h}, seed++, 0.1f);
    add("embeddings.LayerNorm.weight", {h}, seed++, 0.05f, 1.0f);
    add("embeddings.LayerNorm.bias", {h}, seed++, 0.05f);
    for (std::size_t l = 0; l < config.layers; ++l) {
      const std::string p = "encoder.layer." + std::to_string(l) + ".";
      for (const char* part : {"query", "key", "value"}) {
        add(p + "attention.self." + part + ".weight", {h, h}, seed++, 0.1f);
        add(p + "attention.self." + part + ".bias", {h}, seed++, 0.02f);
      }
      add(p + "attention.output.dense.weight", {h, h}, seed++, 0.1f);
      add(p + "attention.output.dense.bias", {h}, seed++, 0.02f);
      add(p + "attention.output.LayerNorm.weight", {h}, seed++, 0.05f, 1.0f);
      add(p + "attention.output.LayerNorm.bias", {h}, seed++, 0.05f);
      add(p + "intermediate.dense.weight", {inner, h}, seed++, 0.1f);
      add(p + "intermediate.dense.bias", {inner}, seed++, 0.02f);
      add(p + "output.dense.weight", {h, inner}, seed++, 0.1f);
      add(p + "output.dense.bias", {h}, seed++, 0.02f);
      add(p + "output.LayerNorm.weight", {h}, seed++, 0.05f, 1.0f);
      add(p + "output.LayerNorm.bias", {h}, seed++, 0.05f);
    }
  }
};

}  // namespace

POLARMEM_TEST(a_batch_equals_its_texts_one_by_one) {
  TinyModel model;
  TextEncoder encoder(model.config, model.tensors);
  const std::vector<std::int32_t> ids{1, 7, 9, 2, 1, 30, 2, 1, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 2};
  const std::vector<std::int32_t> lengths{4, 3, 13};
  std::vector<float> batch(3 * 64);
  encoder.encode(ids.data(), lengths.data(), 3, batch.data());
  std::size_t start = 0;
  for (std::size_t t = 0; t < 3; ++t) {
    std::vector<float> one(64);
    encoder.encode(ids.data() + start, lengths.data() + t, 1, one.data());
    bool same = true;
    double norm = 0.0;
    for (std::size_t i = 0; i < 64; ++i) {
      same = same && one[i] == batch[t * 64 + i];
      norm += one[i] * one[i];
    }
    CHECK(same);
    CHECK(std::fabs(norm - 1.0) < 1e-5);
    start += lengths[t];
  }
  // Different texts, different vectors.
  double dot = 0.0;
  for (std::size_t i = 0; i < 64; ++i) dot += batch[i] * batch[64 + i];
  CHECK(dot < 0.999);
}

POLARMEM_TEST(every_level_encodes_the_same_bytes) {
  TinyModel model;
  const std::vector<std::int32_t> ids{1, 7, 9, 2, 1, 30, 2, 1, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 2};
  const std::vector<std::int32_t> lengths{4, 3, 13};
  std::vector<float> reference(3 * 64);
  TextEncoder(model.config, model.tensors, encoder_kernels("scalar"))
      .encode(ids.data(), lengths.data(), 3, reference.data());
  for (const EncoderKernels* kernel : available_kernels()) {
    std::vector<float> out(3 * 64);
    TextEncoder(model.config, model.tensors, kernel).encode(ids.data(), lengths.data(), 3, out.data());
    CHECK(std::memcmp(out.data(), reference.data(), out.size() * sizeof(float)) == 0);
  }
}

POLARMEM_TEST(softmax_exponential_matches_the_library_exp) {
  double worst = 0.0;
  for (int i = 0; i <= 87000; ++i) {
    const float x = -static_cast<float>(i) / 1000.0f;  // 0 .. -87
    const double exact = std::exp(static_cast<double>(x));
    worst = std::max(worst, std::fabs(q8::exp_nonpositive(x) - exact) / exact);
  }
  std::printf("  largest relative error of exp_nonpositive on [-87, 0]: %.2e\n", worst);
  CHECK(worst < 1e-6);
  CHECK(q8::exp_nonpositive(-200.0f) < 2e-38f);  // below float's normal range: as good as zero
}

POLARMEM_TEST(encoder_refuses_bad_ids_lengths_and_weights) {
  TinyModel model;
  TextEncoder encoder(model.config, model.tensors);
  std::vector<float> out(64);
  const std::int32_t bad_id[] = {1, 50};
  const std::int32_t two[] = {2};
  CHECK_THROWS(encoder.encode(bad_id, two, 1, out.data()));
  const std::int32_t negative[] = {1, -1};
  CHECK_THROWS(encoder.encode(negative, two, 1, out.data()));
  const std::int32_t ids[17] = {};
  const std::int32_t zero[] = {0}, too_long[] = {17};
  CHECK_THROWS(encoder.encode(ids, zero, 1, out.data()));
  CHECK_THROWS(encoder.encode(ids, too_long, 1, out.data()));

  TinyModel missing;
  missing.tensors.erase("encoder.layer.1.output.dense.bias");
  CHECK_THROWS(TextEncoder(missing.config, missing.tensors));
  TinyModel wrong;
  wrong.tensors["encoder.layer.0.attention.self.key.weight"].shape = {32, 128};
  CHECK_THROWS(TextEncoder(wrong.config, wrong.tensors));
}

POLARMEM_TEST(rational_erf_matches_the_library_erf) {
  double worst = 0.0;
  for (int i = -6000; i <= 6000; ++i) {
    const float x = static_cast<float>(i) / 1000.0f;
    worst = std::max(worst, std::fabs(static_cast<double>(q8::erf_rational(x)) - std::erf(static_cast<double>(x))));
  }
  std::printf("  largest |erf_rational - erf| on [-6, 6]: %.2e\n", worst);
  CHECK(worst < 2e-6);
}

int main() { return polarmem::testing::run_all(); }
