// Recent short texts' vectors, by their token ids: what a text encoder's callers share, so an
// agent's repeated question or a namespace's concept names, encoded over and over, cost a look-up
// (a hit ~1 µs against ~2-3 ms for a short query's pass on AVX2). Least recently used first out;
// thread-safe. Used by SharedTextRuns for every door: the compiled front and the library.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace polarmem {

class EncodingCache {
 public:
  // capacity: texts kept (at least 1); dim: floats per vector.
  EncodingCache(std::size_t capacity, std::size_t dim);

  // Copies the vector of `ids` to out (dim floats) and returns true when it is cached.
  bool find(const std::vector<std::int32_t>& ids, float* out);
  void put(const std::vector<std::int32_t>& ids, const float* vector);

  std::size_t dim() const { return dim_; }
  std::uint64_t hits() const;
  std::uint64_t misses() const;
  std::size_t size() const;

 private:
  using Entry = std::pair<std::string, std::vector<float>>;  // key (the ids' bytes), vector
  const std::size_t capacity_, dim_;
  mutable std::mutex mutex_;
  std::list<Entry> entries_;  // most recently used first
  std::unordered_map<std::string, std::list<Entry>::iterator> by_key_;
  std::uint64_t hits_ = 0, misses_ = 0;
};

}  // namespace polarmem
