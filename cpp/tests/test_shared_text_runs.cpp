// SharedTextRuns: concurrent calls share passes and get exactly what encoding each text alone
// gives; a bad call fails alone. A tiny random BERT (the test's own weights), as test_text_encoder.
#include <atomic>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "check.hpp"
#include "polarmem/error.hpp"
#include "polarmem/shared_text_runs.hpp"

using namespace polarmem;

namespace {

struct Weights {
  std::map<std::string, std::vector<float>> arrays;
  TensorMap map;
  void add(const std::string& name, std::vector<std::size_t> shape, std::mt19937& rng, float scale = 0.2f) {
    std::size_t size = 1;
    for (std::size_t d : shape) size *= d;
    std::normal_distribution<float> normal(0.0f, scale);
    auto& values = arrays[name];
    values.resize(size);
    for (auto& v : values) v = normal(rng);
    map[name] = TensorView{values.data(), shape};
  }
};

std::shared_ptr<const TextEncoder> tiny_encoder() {
  const std::size_t h = 32, inner = 64, vocabulary = 50, positions = 64;
  std::mt19937 rng(7);
  static Weights w;
  w.add("embeddings.word_embeddings.weight", {vocabulary, h}, rng);
  w.add("embeddings.position_embeddings.weight", {positions, h}, rng);
  w.add("embeddings.token_type_embeddings.weight", {2, h}, rng);
  w.add("embeddings.LayerNorm.weight", {h}, rng, 1.0f);
  w.add("embeddings.LayerNorm.bias", {h}, rng);
  for (int l = 0; l < 2; ++l) {
    const std::string p = "encoder.layer." + std::to_string(l) + ".";
    for (const char* part : {"query", "key", "value"}) {
      w.add(p + "attention.self." + part + ".weight", {h, h}, rng);
      w.add(p + "attention.self." + part + ".bias", {h}, rng);
    }
    w.add(p + "attention.output.dense.weight", {h, h}, rng);
    w.add(p + "attention.output.dense.bias", {h}, rng);
    w.add(p + "attention.output.LayerNorm.weight", {h}, rng, 1.0f);
    w.add(p + "attention.output.LayerNorm.bias", {h}, rng);
    w.add(p + "intermediate.dense.weight", {inner, h}, rng);
    w.add(p + "intermediate.dense.bias", {inner}, rng);
    w.add(p + "output.dense.weight", {h, inner}, rng);
    w.add(p + "output.dense.bias", {h}, rng);
    w.add(p + "output.LayerNorm.weight", {h}, rng, 1.0f);
    w.add(p + "output.LayerNorm.bias", {h}, rng);
  }
  return std::make_shared<TextEncoder>(TransformerConfig{2, h, 2, inner, positions, 1e-12f}, w.map);
}

std::vector<std::vector<std::int32_t>> texts(std::size_t count) {
  std::mt19937 rng(11);
  std::vector<std::vector<std::int32_t>> out(count);
  for (auto& ids : out) {
    ids.resize(2 + rng() % 20);
    for (auto& id : ids) id = static_cast<std::int32_t>(rng() % 50);
  }
  return out;
}
struct Fixture {
  std::shared_ptr<const TextEncoder> encoder = tiny_encoder();
  std::vector<std::vector<std::int32_t>> inputs = texts(64);
  std::vector<std::vector<float>> alone;
  Fixture() {
    for (const auto& ids : inputs) {
      alone.emplace_back(encoder->dim());
      const auto length = static_cast<std::int32_t>(ids.size());
      encoder->encode(ids.data(), &length, 1, alone.back().data());
    }
  }
};

const Fixture& fixture() {
  static const Fixture f;
  return f;
}

}  // namespace

POLARMEM_TEST(one_caller_at_a_time_gets_the_vector_of_its_text_alone) {
  const auto& f = fixture();
  SharedTextRuns runs(f.encoder, 1);
  std::vector<float> out(f.encoder->dim());
  for (std::size_t i = 0; i < f.inputs.size(); ++i) {
    runs.encode(f.inputs[i], out.data());
    CHECK(out == f.alone[i]);
  }
}

POLARMEM_TEST(eight_threads_share_passes_and_get_bit_identical_vectors) {
  const auto& f = fixture();
  SharedTextRuns runs(f.encoder, 1, 64);  // a small token cap: passes of several calls, cut by it
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      std::vector<float> out(f.encoder->dim());
      for (int round = 0; round < 50; ++round) {
        const std::size_t i = (static_cast<std::size_t>(t) * 7 + static_cast<std::size_t>(round)) % f.inputs.size();
        runs.encode(f.inputs[i], out.data());
        if (out != f.alone[i]) ++mismatches;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  CHECK(mismatches.load() == 0);
}

POLARMEM_TEST(a_call_with_a_bad_id_fails_alone) {
  const auto& f = fixture();
  SharedTextRuns runs(f.encoder, 2);
  std::atomic<int> failures{0}, mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&, t] {
      std::vector<float> out(f.encoder->dim());
      for (int round = 0; round < 30; ++round) {
        if (t == 0 && round % 3 == 0) {
          try {
            runs.encode({1, 999, 2}, out.data());
          } catch (const Error&) {
            ++failures;
          }
          continue;
        }
        const std::size_t i = static_cast<std::size_t>(t + round) % f.inputs.size();
        runs.encode(f.inputs[i], out.data());
        if (out != f.alone[i]) ++mismatches;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  CHECK(failures.load() == 10);
  CHECK(mismatches.load() == 0);
}

POLARMEM_TEST(several_texts_of_one_caller_share_a_pass_and_the_cache) {
  const auto& f = fixture();
  const auto cache = std::make_shared<EncodingCache>(4, f.encoder->dim());
  SharedTextRuns runs(f.encoder, 1, 1024, cache);
  const std::size_t dim = f.encoder->dim();
  const std::vector<std::vector<std::int32_t>> batch{f.inputs[0], f.inputs[1], f.inputs[2]};
  std::vector<float> out(batch.size() * dim);
  runs.encode_many(batch, out.data());
  for (std::size_t i = 0; i < batch.size(); ++i)
    CHECK(std::vector<float>(out.begin() + i * dim, out.begin() + (i + 1) * dim) == f.alone[i]);
  CHECK(cache->hits() == 0 && cache->misses() == 3 && cache->size() == 3);
  std::vector<float> one(dim);
  runs.encode(f.inputs[1], one.data());  // a hit, bit for bit what was encoded
  CHECK(one == f.alone[1] && cache->hits() == 1);
  for (std::size_t i = 3; i < 6; ++i) runs.encode(f.inputs[i], one.data());  // 4 kept: 0 and 2 go first
  CHECK(cache->size() == 4);
  runs.encode(f.inputs[1], one.data());
  runs.encode(f.inputs[0], one.data());
  CHECK(cache->hits() == 2 && one == f.alone[0]);  // 1 was kept (recently used), 0 was not
  std::vector<float> bad(2 * dim);
  CHECK_THROWS(runs.encode_many({f.inputs[7], {1, 999, 2}}, bad.data()));
  CHECK_THROWS(SharedTextRuns(f.encoder, 1, 1024, std::make_shared<EncodingCache>(4, dim + 1)));
}

POLARMEM_TEST(callers_of_several_texts_share_split_passes_bit_for_bit_and_alone_mode_too) {
  const auto& f = fixture();
  const std::size_t dim = f.encoder->dim();
  for (const bool share : {true, false}) {
    SharedTextRuns runs(f.encoder, 1, 48, nullptr, share);  // a small cap: a caller's texts split across passes
    std::atomic<int> mismatches{0}, failures{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t) {
      threads.emplace_back([&, t] {
        for (int round = 0; round < 40; ++round) {
          std::vector<std::size_t> picked;
          std::vector<std::vector<std::int32_t>> batch;
          for (std::size_t k = 0; k < 1 + static_cast<std::size_t>(round % 5); ++k) {
            picked.push_back((static_cast<std::size_t>(t) * 13 + static_cast<std::size_t>(round) * 5 + k) %
                             f.inputs.size());
            batch.push_back(f.inputs[picked.back()]);
          }
          const bool bad = t == 3 && round % 7 == 0;
          if (bad) batch.push_back({1, 999, 2});
          std::vector<float> out(batch.size() * dim);
          try {
            runs.encode_many(batch, out.data());
            if (bad) ++failures;  // (should have thrown)
          } catch (const Error&) {
            if (!bad) ++failures;
            continue;
          }
          for (std::size_t k = 0; k < picked.size(); ++k)
            if (std::vector<float>(out.begin() + k * dim, out.begin() + (k + 1) * dim) != f.alone[picked[k]])
              ++mismatches;
        }
      });
    }
    for (auto& thread : threads) thread.join();
    CHECK(mismatches.load() == 0 && failures.load() == 0);
  }
}

POLARMEM_TEST(no_runs_is_refused) { CHECK_THROWS(SharedTextRuns(fixture().encoder, 0)); }

int main() { return polarmem::testing::run_all(); }
