#include "polarmem/encoding_cache.hpp"

#include <algorithm>

#include "polarmem/error.hpp"

namespace polarmem {

namespace {

std::string key_of(const std::vector<std::int32_t>& ids) {
  return {reinterpret_cast<const char*>(ids.data()), ids.size() * sizeof(std::int32_t)};
}

}  // namespace

EncodingCache::EncodingCache(std::size_t capacity, std::size_t dim) : capacity_(capacity), dim_(dim) {
  if (capacity_ < 1 || dim_ < 1) fail(ErrorCode::kInvalidArgument, "an encoding cache holds at least one vector");
}

bool EncodingCache::find(const std::vector<std::int32_t>& ids, float* out) {
  const std::string key = key_of(ids);
  std::lock_guard guard(mutex_);
  const auto found = by_key_.find(key);
  if (found == by_key_.end()) {
    ++misses_;
    return false;
  }
  ++hits_;
  entries_.splice(entries_.begin(), entries_, found->second);
  std::copy(found->second->second.begin(), found->second->second.end(), out);
  return true;
}

void EncodingCache::put(const std::vector<std::int32_t>& ids, const float* vector) {
  std::string key = key_of(ids);
  std::lock_guard guard(mutex_);
  if (const auto found = by_key_.find(key); found != by_key_.end()) {
    entries_.splice(entries_.begin(), entries_, found->second);
    return;
  }
  entries_.emplace_front(key, std::vector<float>(vector, vector + dim_));
  try {
    by_key_.emplace(std::move(key), entries_.begin());
  } catch (...) {  // (out of memory) no entry the map does not know
    entries_.pop_front();
    throw;
  }
  if (entries_.size() > capacity_) {
    by_key_.erase(entries_.back().first);
    entries_.pop_back();
  }
}

std::uint64_t EncodingCache::hits() const {
  std::lock_guard guard(mutex_);
  return hits_;
}

std::uint64_t EncodingCache::misses() const {
  std::lock_guard guard(mutex_);
  return misses_;
}

std::size_t EncodingCache::size() const {
  std::lock_guard guard(mutex_);
  return entries_.size();
}

}  // namespace polarmem
