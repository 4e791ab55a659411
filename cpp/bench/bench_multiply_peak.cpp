// How many AVX2 vector integer multiplies this core retires per cycle, registers only (no loads,
// eight independent chains): vpmaddubsw alone, vpmaddwd alone, and the two interleaved as the
// encoder's AVX2 kernel uses them (a product pair, then its widening). With the count of
// multiplies the encoder's products need, that is their floor on this host, against which
// bench_int8_linear's time is read (docs/performance.md, "The encoder's products"). The clock is
// taken from a chain of dependent scalar adds (one per cycle). Not a test: built with the C++
// tests so it keeps compiling, run by hand:
//
//   build/cpp/bench_multiply_peak
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

__attribute__((noinline)) std::uint64_t dependent_adds(std::uint64_t quads) {
  std::uint64_t x = 0;
  for (std::uint64_t i = 0; i < quads; ++i)
    asm volatile("add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0" : "+r"(x));
  return x;
}

enum class Kind { kMaddubs, kMadd, kPair };

template <Kind K>
__attribute__((always_inline, target("avx2"))) inline void step(__m256i& c, __m256i& a, __m256i w, __m256i ones) {
  if constexpr (K == Kind::kMaddubs) {
    c = _mm256_maddubs_epi16(c, w);
  } else if constexpr (K == Kind::kMadd) {
    c = _mm256_madd_epi16(c, w);
  } else {
    asm volatile("" : "+x"(a));  // a fresh operand each time: the product is not hoisted
    c = _mm256_add_epi32(c, _mm256_madd_epi16(_mm256_maddubs_epi16(a, w), ones));
  }
}

// `steps` rounds of eight independent multiplies (sixteen for kPair); the chains' latency is hidden.
template <Kind K>
__attribute__((noinline, target("avx2"))) __m256i multiplies(std::uint64_t steps, __m256i a, __m256i w) {
  __m256i c0 = _mm256_set1_epi16(0), c1 = _mm256_set1_epi16(1), c2 = _mm256_set1_epi16(2), c3 = _mm256_set1_epi16(3);
  __m256i c4 = _mm256_set1_epi16(4), c5 = _mm256_set1_epi16(5), c6 = _mm256_set1_epi16(6), c7 = _mm256_set1_epi16(7);
  const __m256i ones = _mm256_set1_epi16(1);
  for (std::uint64_t i = 0; i < steps; ++i) {
    step<K>(c0, a, w, ones), step<K>(c1, a, w, ones), step<K>(c2, a, w, ones), step<K>(c3, a, w, ones);
    step<K>(c4, a, w, ones), step<K>(c5, a, w, ones), step<K>(c6, a, w, ones), step<K>(c7, a, w, ones);
  }
  return _mm256_xor_si256(_mm256_xor_si256(_mm256_xor_si256(c0, c1), _mm256_xor_si256(c2, c3)),
                          _mm256_xor_si256(_mm256_xor_si256(c4, c5), _mm256_xor_si256(c6, c7)));
}

template <Kind K>
__attribute__((target("avx2"))) double best_rate(std::uint64_t steps) {
  const __m256i a = _mm256_set1_epi8(3), w = _mm256_set1_epi8(5);
  double best = 0.0;
  for (int run = 0; run < 3; ++run) {
    const auto start = std::chrono::steady_clock::now();
    volatile __m256i sink = multiplies<K>(steps, a, w);
    (void)sink;
    const double per_step = K == Kind::kPair ? 16.0 : 8.0;
    best = std::max(best, static_cast<double>(steps) * per_step / seconds_since(start));
  }
  return best;
}

}  // namespace

int main() {
  if (!__builtin_cpu_supports("avx2")) {
    std::puts("{\"error\": \"this CPU has no AVX2\"}");
    return 1;
  }
  const std::uint64_t adds = 400'000'000;
  double clock = 0.0;
  for (int run = 0; run < 3; ++run) {
    const auto start = std::chrono::steady_clock::now();
    volatile std::uint64_t sink = dependent_adds(adds / 4);
    (void)sink;
    clock = std::max(clock, static_cast<double>(adds) / seconds_since(start));
  }
  const std::uint64_t steps = 25'000'000;
  const double maddubs = best_rate<Kind::kMaddubs>(steps), madd = best_rate<Kind::kMadd>(steps);
  const double pair = best_rate<Kind::kPair>(steps / 2);
  std::printf(
      "{\"clock_ghz\": %.3f, \"vpmaddubsw_per_cycle\": %.3f, \"vpmaddwd_per_cycle\": %.3f, "
      "\"interleaved_per_cycle\": %.3f, \"interleaved_g_per_s\": %.3f}\n",
      clock / 1e9, maddubs / clock, madd / clock, pair / clock, pair / 1e9);
}
