// Machine measurements the benchmarks report alongside search timings.
#pragma once

#include <cstddef>

namespace polarmem {

// Streams `bytes` of memory `repeats` times with `threads` threads (AVX2 loads where available)
// and returns the best observed read bandwidth in bytes per second.
double measure_read_bandwidth(std::size_t bytes, std::size_t threads, std::size_t repeats);

}  // namespace polarmem
