// The compiled encoder's linear layers alone: MiniLM-L6's 24 (6 x qkv 1152x384, output 384x384,
// intermediate 1536x384, output 384x1536; random weights), one pass over M tokens, time per pass
// with the weights in cache and with 64 MB read between passes (as a search between two text
// queries does: the weights then come from DRAM). What chose the weight stream's prefetch
// distances in cpp/src/int8_linear_avx512.cpp (docs/performance.md, "A realistic mix", round 11).
// Not a test: built with the C++ tests (so it keeps compiling), never run by them. After `make test`:
//
//   build/cpp-tests/bench_int8_linear 12 1     # tokens, evict (0/1); POLARMEM_SIMD=avx2 for the AVX2 kernel
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "polarmem/encoder_kernels.hpp"
#include "polarmem/int8_linear.hpp"

using namespace polarmem;

int main(int argc, char** argv) {
  const std::size_t tokens = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 12;
  const bool evict = argc > 2 && std::atoi(argv[2]) != 0;
  const int passes = 300;
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 0.05f);
  const auto layer = [&](std::size_t outputs, std::size_t inputs) {
    std::vector<float> weight(outputs * inputs), bias(outputs);
    for (float& w : weight) w = normal(rng);
    return Int8Linear(weight.data(), bias.data(), outputs, inputs);
  };
  struct Block {
    Int8Linear qkv, attention_output, intermediate, output;
  };
  std::vector<Block> blocks;
  for (int l = 0; l < 6; ++l) blocks.push_back({layer(1152, 384), layer(384, 384), layer(1536, 384), layer(384, 1536)});
  const EncoderKernels& kernel = best_encoder_kernels();
  std::vector<float> x(tokens * 1536);
  for (float& v : x) v = normal(rng) * 20.0f;
  Q8Activations narrow, wide;
  quantize_activations(x.data(), tokens, 384, &narrow, kernel);
  quantize_activations(x.data(), tokens, 1536, &wide, kernel);
  std::vector<float> y(tokens * 1536);
  std::vector<unsigned char> other(64 << 20, 1);
  volatile unsigned sink = 0;
  double best = 1e9, total = 0.0;
  for (int p = 0; p < passes; ++p) {
    if (evict)
      for (std::size_t i = 0; i < other.size(); i += 64) sink = sink + other[i]++;
    const auto start = std::chrono::steady_clock::now();
    for (const Block& b : blocks) {
      b.qkv.forward(narrow, y.data(), kernel);
      b.attention_output.forward(narrow, y.data(), kernel);
      b.intermediate.forward(narrow, y.data(), kernel);
      b.output.forward(wide, y.data(), kernel);
    }
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    best = std::min(best, ms);
    total += ms;
  }
  std::printf("{\"kernel\": \"%s\", \"tokens\": %zu, \"evict\": %d, \"best_ms\": %.3f, \"mean_ms\": %.3f}\n",
              kernel.name, tokens, evict ? 1 : 0, best, total / passes);
}
