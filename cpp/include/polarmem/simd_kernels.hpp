// Per-level kernel entry points. Each level lives in its own translation unit compiled with
// that level's flags and containing no inline library code, so nothing compiled for AVX-512
// can be picked by the linker for a caller on a lesser CPU.
#pragma once

#include <cstddef>
#include <cstdint>

namespace polarmem {
#define POLARMEM_DECLARE_KERNELS(ns)                                                                       \
  namespace ns {                                                                                           \
  float dot_f32(const float* q, const float* x, std::size_t n);                                            \
  float dot_f16(const float* q, const std::uint16_t* x, std::size_t n);                                    \
  std::int32_t dot_i8(const std::int16_t* q, const std::int8_t* x, std::size_t n);                         \
  void dot_f32_tile(const float* const* rows, const float* panels, std::size_t panel_count, std::size_t n, \
                    float* out);                                                                           \
  void f16_to_f32(const std::uint16_t* x, float* out, std::size_t n);                                      \
  std::int32_t dot_i8_i8(const std::int8_t* a, const std::int8_t* b, std::size_t n);                       \
  void split_tiers(const std::uint64_t* eligible, const std::uint64_t* conflict_any,                       \
                   const std::uint64_t* entailed_any, std::size_t n, std::uint64_t* const out[3],          \
                   std::int64_t counts[3]);                                                                \
  }
POLARMEM_DECLARE_KERNELS(scalar)
POLARMEM_DECLARE_KERNELS(avx2)
POLARMEM_DECLARE_KERNELS(avx512)
#undef POLARMEM_DECLARE_KERNELS
}  // namespace polarmem
