// Dot-product kernels per instruction set, chosen once at run time (never -march=native),
// overridable with POLARMEM_SIMD=scalar|avx2|avx512 or set_simd_level() for tests.
#pragma once

#include <cstddef>
#include <cstdint>

namespace polarmem {

enum class SimdLevel : int { kScalar = 0, kAvx2 = 1, kAvx512 = 2 };

// One table of kernels per level. All levels compute the same mathematical value; the integer
// kernel is bit-identical across levels, the float ones differ only by summation order.
struct Kernels {
  // <q, x> over n floats.
  float (*dot_f32)(const float* q, const float* x, std::size_t n);
  // <q, half(x)>: x holds IEEE binary16 bit patterns.
  float (*dot_f16)(const float* q, const std::uint16_t* x, std::size_t n);
  // Exact integer <q, x> for an int16-quantised query and int8 codes.
  std::int32_t (*dot_i8)(const std::int16_t* q, const std::int8_t* x, std::size_t n);
};

const char* simd_level_name(SimdLevel level);
bool parse_simd_level(const char* name, SimdLevel* out);
bool cpu_supports(SimdLevel level);
SimdLevel best_supported_simd_level();

// The active level: POLARMEM_SIMD if set (and supported), else the best the CPU has.
SimdLevel active_simd_level();
// Throws Error(kInvalidArgument) when the CPU lacks the level.
void set_simd_level(SimdLevel level);
const Kernels& active_kernels();
const Kernels& kernels_for(SimdLevel level);

// IEEE binary16 conversions (round to nearest even), portable scalar code.
std::uint16_t float_to_half(float value);
float half_to_float(std::uint16_t bits);

}  // namespace polarmem
