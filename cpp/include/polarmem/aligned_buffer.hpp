// A growable, 64-byte aligned array of trivially copyable elements (vector rows start on cache
// lines, so the SIMD kernels never split a load across two of them). Buffers of 2 MiB and more
// start on a 2 MiB boundary and ask for transparent huge pages (huge_pages.hpp says why).
#pragma once

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

#include "polarmem/huge_pages.hpp"

namespace polarmem {

template <typename T>
class AlignedBuffer {
 public:
  static constexpr std::size_t kAlignment = 64;

  AlignedBuffer() = default;
  explicit AlignedBuffer(std::size_t size) { resize(size); }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  AlignedBuffer(AlignedBuffer&& other) noexcept { swap(other); }
  AlignedBuffer& operator=(AlignedBuffer&& other) noexcept {
    AlignedBuffer(std::move(other)).swap(*this);
    return *this;
  }
  ~AlignedBuffer() { std::free(data_); }

  void swap(AlignedBuffer& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
  }

  // Keeps the first min(old, new) elements; new elements are zero.
  void resize(std::size_t size) {
    if (size == size_) return;
    T* fresh = nullptr;
    if (size > 0) {
      const std::size_t alignment = size * sizeof(T) >= kHugePageBytes ? kHugePageBytes : kAlignment;
      std::size_t bytes = (size * sizeof(T) + alignment - 1) / alignment * alignment;
      fresh = static_cast<T*>(std::aligned_alloc(alignment, bytes));
      if (fresh == nullptr) throw std::bad_alloc();
      // Advised before the memset faults the pages in, so they arrive as huge pages.
      if (alignment == kHugePageBytes) advise_huge_pages(fresh, bytes);
      std::memset(static_cast<void*>(fresh), 0, bytes);
      if (data_ != nullptr) std::memcpy(static_cast<void*>(fresh), data_, (size < size_ ? size : size_) * sizeof(T));
    }
    std::free(data_);
    data_ = fresh;
    size_ = size;
  }

  T* data() noexcept { return data_; }
  const T* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }
  T& operator[](std::size_t i) noexcept { return data_[i]; }
  const T& operator[](std::size_t i) const noexcept { return data_[i]; }

 private:
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace polarmem
