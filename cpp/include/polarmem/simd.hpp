// Dot-product kernels per instruction set, chosen once at run time (never -march=native),
// overridable with POLARMEM_SIMD=scalar|avx2|avx512 or set_simd_level() for tests.
#pragma once

#include <cstddef>
#include <cstdint>

namespace polarmem {

enum class SimdLevel : int { kScalar = 0, kAvx2 = 1, kAvx512 = 2 };

// Batch scoring works on tiles of this many rows (callers pad a short tile with a zero row)
// against queries packed in panels of this many columns.
constexpr std::size_t kTileRows = 6;
constexpr std::size_t kPanelColumns = 16;

// One table of kernels per level. All levels compute the same mathematical value; the integer
// kernel is bit-identical across levels, the float ones differ only by summation order.
struct Kernels {
  // <q, x> over n floats.
  float (*dot_f32)(const float* q, const float* x, std::size_t n);
  // <q, half(x)>: x holds IEEE binary16 bit patterns.
  float (*dot_f16)(const float* q, const std::uint16_t* x, std::size_t n);
  // Exact integer <q, x> for an int16-quantised query and int8 codes.
  std::int32_t (*dot_i8)(const std::int16_t* q, const std::int8_t* x, std::size_t n);
  // A register-blocked tile of a matrix product: out[r * panels * 16 + p * 16 + j] =
  // <rows[r], query p * 16 + j> for r < kTileRows. `panels` holds the queries packed
  // column-major per panel: query p * 16 + j's element i at panels[(p * n + i) * 16 + j].
  // Each row element is read once per panel group, so a tile costs its rows' bytes once
  // for the whole batch; every output is one in-order sum over i (one rounding order).
  void (*dot_f32_tile)(const float* const* rows, const float* panels, std::size_t panel_count, std::size_t n,
                       float* out);
  // out[i] = half(x[i]) for i < n (exact: every binary16 value is a float).
  void (*f16_to_f32)(const std::uint16_t* x, float* out, std::size_t n);
  // Exact integer <a, b> of two int8 code rows (the approximate index links nodes by it).
  std::int32_t (*dot_i8_i8)(const std::int8_t* a, const std::int8_t* b, std::size_t n);
  // A query's logic tiers over n bitmap words: out[0] = conflict_any & eligible (conflict),
  // out[2] = entailed_any & eligible & ~conflict (entailed), out[1] = the rest of eligible
  // (neutral); counts[t] += the set bits of out[t].
  void (*split_tiers)(const std::uint64_t* eligible, const std::uint64_t* conflict_any,
                      const std::uint64_t* entailed_any, std::size_t n, std::uint64_t* const out[3],
                      std::int64_t counts[3]);
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
