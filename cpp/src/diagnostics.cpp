#include "polarmem/diagnostics.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "polarmem/aligned_buffer.hpp"

namespace polarmem {
namespace {

// Eight independent 64-bit accumulators: the loop is load-bound, not add-bound, so it measures
// how fast the memory system delivers bytes rather than how fast one core adds.
std::uint64_t read_range(const std::uint64_t* data, std::size_t words) {
  std::uint64_t a[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  std::size_t i = 0;
  for (; i + 8 <= words; i += 8) {
    __builtin_prefetch(data + i + 128);  // 1 KiB ahead, as the search scan does
    for (int j = 0; j < 8; ++j) a[j] ^= data[i + j];
  }
  for (; i < words; ++i) a[0] ^= data[i];
  return a[0] ^ a[1] ^ a[2] ^ a[3] ^ a[4] ^ a[5] ^ a[6] ^ a[7];
}

}  // namespace

double measure_read_bandwidth(std::size_t bytes, std::size_t threads, std::size_t repeats) {
  const std::size_t words = bytes / sizeof(std::uint64_t);
  AlignedBuffer<std::uint64_t> buffer(words);
  for (std::size_t i = 0; i < words; ++i) buffer[i] = i * 0x9E3779B97F4A7C15ull;
  if (threads == 0) threads = 1;
  double best = 0.0;
  std::vector<std::uint64_t> sinks(threads, 0);
  for (std::size_t r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    const std::size_t share = (words + threads - 1) / threads;
    for (std::size_t t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        const std::size_t begin = t * share;
        const std::size_t end = begin + share < words ? begin + share : words;
        if (begin < end) sinks[t] ^= read_range(buffer.data() + begin, end - begin);
      });
    }
    for (auto& th : pool) th.join();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best = std::max(best, static_cast<double>(words * sizeof(std::uint64_t)) / seconds);
  }
  volatile std::uint64_t keep = 0;
  for (auto s : sinks) keep = keep ^ s;
  (void)keep;
  return best;
}

}  // namespace polarmem
