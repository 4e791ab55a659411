// Run-time kernel selection and the portable half-precision conversions.
#include "polarmem/simd.hpp"

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

#include "polarmem/error.hpp"
#include "polarmem/simd_kernels.hpp"

namespace polarmem {
namespace {

constexpr Kernels kScalarKernels{scalar::dot_f32,    scalar::dot_f16,   scalar::dot_i8,     scalar::dot_f32_tile,
                                 scalar::f16_to_f32, scalar::dot_i8_i8, scalar::split_tiers};
constexpr Kernels kAvx2Kernels{avx2::dot_f32,    avx2::dot_f16,   avx2::dot_i8,     avx2::dot_f32_tile,
                               avx2::f16_to_f32, avx2::dot_i8_i8, avx2::split_tiers};
constexpr Kernels kAvx512Kernels{avx512::dot_f32,    avx512::dot_f16,   avx512::dot_i8,     avx512::dot_f32_tile,
                                 avx512::f16_to_f32, avx512::dot_i8_i8, avx512::split_tiers};

SimdLevel initial_level() {
  const char* requested = std::getenv("POLARMEM_SIMD");
  SimdLevel level;
  if (requested != nullptr && *requested != '\0' && parse_simd_level(requested, &level) && cpu_supports(level)) {
    return level;
  }
  return best_supported_simd_level();
}

std::atomic<int>& level_storage() {
  static std::atomic<int> level{static_cast<int>(initial_level())};
  return level;
}

}  // namespace

const char* simd_level_name(SimdLevel level) {
  switch (level) {
    case SimdLevel::kScalar: return "scalar";
    case SimdLevel::kAvx2: return "avx2";
    case SimdLevel::kAvx512: return "avx512";
  }
  return "unknown";
}

bool parse_simd_level(const char* name, SimdLevel* out) {
  const std::string s(name);
  if (s == "scalar") *out = SimdLevel::kScalar;
  else if (s == "avx2") *out = SimdLevel::kAvx2;
  else if (s == "avx512") *out = SimdLevel::kAvx512;
  else return false;
  return true;
}

bool cpu_supports(SimdLevel level) {
  switch (level) {
    case SimdLevel::kScalar: return true;
    case SimdLevel::kAvx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c") &&
             __builtin_cpu_supports("popcnt");
    case SimdLevel::kAvx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && cpu_supports(SimdLevel::kAvx2);
  }
  return false;
}

SimdLevel best_supported_simd_level() {
  if (cpu_supports(SimdLevel::kAvx512)) return SimdLevel::kAvx512;
  if (cpu_supports(SimdLevel::kAvx2)) return SimdLevel::kAvx2;
  return SimdLevel::kScalar;
}

SimdLevel active_simd_level() { return static_cast<SimdLevel>(level_storage().load(std::memory_order_relaxed)); }

void set_simd_level(SimdLevel level) {
  if (!cpu_supports(level)) {
    fail(ErrorCode::kInvalidArgument,
         std::string("this CPU does not support SIMD level '") + simd_level_name(level) + "'");
  }
  level_storage().store(static_cast<int>(level), std::memory_order_relaxed);
}

const Kernels& kernels_for(SimdLevel level) {
  if (!cpu_supports(level)) {
    fail(ErrorCode::kInvalidArgument,
         std::string("this CPU does not support SIMD level '") + simd_level_name(level) + "'");
  }
  switch (level) {
    case SimdLevel::kAvx512: return kAvx512Kernels;
    case SimdLevel::kAvx2: return kAvx2Kernels;
    default: return kScalarKernels;
  }
}

const Kernels& active_kernels() { return kernels_for(active_simd_level()); }

std::uint16_t float_to_half(float value) {
  std::uint32_t f;
  std::memcpy(&f, &value, sizeof f);
  const std::uint32_t sign = (f >> 16) & 0x8000u;
  std::uint32_t abs = f & 0x7FFFFFFFu;
  if (abs >= 0x7F800000u) return static_cast<std::uint16_t>(sign | (abs > 0x7F800000u ? 0x7E00u : 0x7C00u));
  if (abs >= 0x477FF000u) return static_cast<std::uint16_t>(sign | 0x7C00u);  // rounds past 65504
  if (abs < 0x38800000u) {
    // Subnormal half: scale into the 10-bit mantissa, rounding to nearest even.
    if (abs < 0x33000000u) return static_cast<std::uint16_t>(sign);
    const std::uint32_t exponent = abs >> 23;
    const std::uint32_t mantissa = (abs & 0x7FFFFFu) | 0x800000u;
    const std::uint32_t shift = 126u - exponent;  // 14 .. 24
    std::uint32_t half = mantissa >> shift;
    const std::uint32_t rest = mantissa & ((1u << shift) - 1u);
    const std::uint32_t midpoint = 1u << (shift - 1u);
    if (rest > midpoint || (rest == midpoint && (half & 1u))) ++half;
    return static_cast<std::uint16_t>(sign | half);
  }
  // Normal: rebias the exponent and round the mantissa to 10 bits, nearest even.
  std::uint32_t half = ((abs - 0x38000000u) >> 13);
  const std::uint32_t rest = abs & 0x1FFFu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;
  return static_cast<std::uint16_t>(sign | half);
}

float half_to_float(std::uint16_t bits) {
  const std::uint32_t sign = static_cast<std::uint32_t>(bits & 0x8000u) << 16;
  const std::uint32_t exponent = (bits >> 10) & 0x1Fu;
  std::uint32_t mantissa = bits & 0x3FFu;
  std::uint32_t f;
  if (exponent == 0) {
    if (mantissa == 0) {
      f = sign;
    } else {
      int e = -1;
      do {
        ++e;
        mantissa <<= 1;
      } while ((mantissa & 0x400u) == 0);
      f = sign | (static_cast<std::uint32_t>(112 - e) << 23) | ((mantissa & 0x3FFu) << 13);
    }
  } else if (exponent == 31) {
    f = sign | 0x7F800000u | (mantissa << 13);
  } else {
    f = sign | ((exponent + 112u) << 23) | (mantissa << 13);
  }
  float out;
  std::memcpy(&out, &f, sizeof out);
  return out;
}

}  // namespace polarmem
