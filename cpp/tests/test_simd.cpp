// Every SIMD level against the scalar reference on awkward dimensions.
#include <cmath>
#include <random>

#include "check.hpp"
#include "polarmem/error.hpp"
#include "polarmem/simd.hpp"

using namespace polarmem;

namespace {
constexpr std::size_t kDims[] = {1, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 384, 1000};
constexpr SimdLevel kLevels[] = {SimdLevel::kScalar, SimdLevel::kAvx2, SimdLevel::kAvx512};

std::vector<float> random_floats(std::size_t n, std::mt19937& rng) {
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}
}  // namespace

POLARMEM_TEST(f32_levels_match_scalar) {
  std::mt19937 rng(7);
  const Kernels& reference = kernels_for(SimdLevel::kScalar);
  for (SimdLevel level : kLevels) {
    if (!cpu_supports(level)) continue;
    const Kernels& k = kernels_for(level);
    for (std::size_t d : kDims) {
      // Offset by one float so unaligned loads and masked tails are exercised.
      auto q = random_floats(d + 1, rng);
      auto x = random_floats(d + 1, rng);
      const double want = reference.dot_f32(q.data() + 1, x.data() + 1, d);
      const double got = k.dot_f32(q.data() + 1, x.data() + 1, d);
      CHECK(std::fabs(want - got) <= 1e-4 * (1.0 + std::sqrt(static_cast<double>(d))));
    }
  }
}

POLARMEM_TEST(f16_levels_match_scalar) {
  std::mt19937 rng(11);
  const Kernels& reference = kernels_for(SimdLevel::kScalar);
  for (SimdLevel level : kLevels) {
    if (!cpu_supports(level)) continue;
    const Kernels& k = kernels_for(level);
    for (std::size_t d : kDims) {
      auto q = random_floats(d, rng);
      auto xf = random_floats(d, rng);
      std::vector<std::uint16_t> x(d);
      for (std::size_t i = 0; i < d; ++i) x[i] = float_to_half(xf[i]);
      const double want = reference.dot_f16(q.data(), x.data(), d);
      const double got = k.dot_f16(q.data(), x.data(), d);
      CHECK(std::fabs(want - got) <= 1e-4 * (1.0 + std::sqrt(static_cast<double>(d))));
    }
  }
}

POLARMEM_TEST(i8_levels_are_bit_identical) {
  std::mt19937 rng(13);
  std::uniform_int_distribution<int> q_dist(-32767, 32767), x_dist(-127, 127);
  const Kernels& reference = kernels_for(SimdLevel::kScalar);
  for (SimdLevel level : kLevels) {
    if (!cpu_supports(level)) continue;
    const Kernels& k = kernels_for(level);
    for (std::size_t d : kDims) {
      std::vector<std::int16_t> q(d);
      std::vector<std::int8_t> x(d);
      for (auto& v : q) v = static_cast<std::int16_t>(q_dist(rng) / 64);
      for (auto& v : x) v = static_cast<std::int8_t>(x_dist(rng));
      CHECK(reference.dot_i8(q.data(), x.data(), d) == k.dot_i8(q.data(), x.data(), d));
    }
  }
}

POLARMEM_TEST(i8_i8_levels_are_bit_identical) {
  // Full-range codes (+-127 both sides) on every dimension, tails included.
  std::mt19937 rng(19);
  std::uniform_int_distribution<int> dist(-127, 127);
  const Kernels& reference = kernels_for(SimdLevel::kScalar);
  for (SimdLevel level : kLevels) {
    if (!cpu_supports(level)) continue;
    const Kernels& k = kernels_for(level);
    for (std::size_t d : kDims) {
      std::vector<std::int8_t> a(d), b(d);
      for (auto& v : a) v = static_cast<std::int8_t>(dist(rng));
      for (auto& v : b) v = static_cast<std::int8_t>(dist(rng));
      std::int64_t want = 0;
      for (std::size_t i = 0; i < d; ++i) want += static_cast<std::int64_t>(a[i]) * b[i];
      CHECK(reference.dot_i8_i8(a.data(), b.data(), d) == want);
      CHECK(k.dot_i8_i8(a.data(), b.data(), d) == want);
    }
  }
}

POLARMEM_TEST(split_tiers_levels_match_bit_by_bit) {
  // Each level's tier split and counts against a per-bit reference, on word counts with tails.
  std::mt19937_64 rng(23);
  for (SimdLevel level : kLevels) {
    if (!cpu_supports(level)) continue;
    const Kernels& k = kernels_for(level);
    for (std::size_t n : {std::size_t{1}, std::size_t{7}, std::size_t{64}, std::size_t{1000}}) {
      std::vector<std::uint64_t> eligible(n), conflict_any(n), entailed_any(n), out_words[3];
      for (std::size_t i = 0; i < n; ++i) {
        eligible[i] = rng();
        conflict_any[i] = rng() & rng();  // sparser than half, so every tier is populated
        entailed_any[i] = rng();
      }
      for (auto& o : out_words) o.assign(n, ~std::uint64_t{0});
      std::uint64_t* out[3] = {out_words[0].data(), out_words[1].data(), out_words[2].data()};
      std::int64_t counts[3] = {5, 0, 0};  // counts are added to
      k.split_tiers(eligible.data(), conflict_any.data(), entailed_any.data(), n, out, counts);
      std::int64_t want[3] = {5, 0, 0};
      for (std::size_t i = 0; i < n; ++i) {
        for (int bit = 0; bit < 64; ++bit) {
          const bool e = (eligible[i] >> bit) & 1u, c = (conflict_any[i] >> bit) & 1u,
                     a = (entailed_any[i] >> bit) & 1u;
          const int tier = !e ? -1 : c ? 0 : a ? 2 : 1;
          if (tier >= 0) ++want[tier];
          for (int t = 0; t < 3; ++t) CHECK(((out_words[t][i] >> bit) & 1u) == static_cast<std::uint64_t>(t == tier));
        }
      }
      for (int t = 0; t < 3; ++t) CHECK(counts[t] == want[t]);
    }
  }
}

POLARMEM_TEST(tile_product_levels_match_scalar) {
  // Every level's register-blocked tile against the scalar tile, for 1..5 panels (so the
  // AVX-512 groups of 4 and their 1-3 panel remainders both run) on awkward dimensions.
  std::mt19937 rng(17);
  const Kernels& reference = kernels_for(SimdLevel::kScalar);
  for (SimdLevel level : kLevels) {
    if (!cpu_supports(level)) continue;
    const Kernels& k = kernels_for(level);
    for (std::size_t d : kDims) {
      for (std::size_t panel_count = 1; panel_count <= 5; ++panel_count) {
        auto panels = random_floats(panel_count * d * kPanelColumns, rng);
        std::vector<std::vector<float>> rows;
        const float* row_ptrs[kTileRows];
        for (std::size_t r = 0; r < kTileRows; ++r) rows.push_back(random_floats(d + 1, rng));
        for (std::size_t r = 0; r < kTileRows; ++r) row_ptrs[r] = rows[r].data() + 1;  // unaligned rows
        std::vector<float> want(kTileRows * panel_count * kPanelColumns), got(want.size(), -1.0f);
        reference.dot_f32_tile(row_ptrs, panels.data(), panel_count, d, want.data());
        k.dot_f32_tile(row_ptrs, panels.data(), panel_count, d, got.data());
        for (std::size_t r = 0; r < kTileRows; ++r) {
          for (std::size_t c = 0; c < panel_count * kPanelColumns; ++c) {
            const std::size_t p = c / kPanelColumns, j = c % kPanelColumns;
            double direct = 0.0;  // the definition, in double
            for (std::size_t i = 0; i < d; ++i)
              direct += static_cast<double>(row_ptrs[r][i]) * panels[(p * d + i) * kPanelColumns + j];
            const double tolerance = 1e-4 * (1.0 + std::sqrt(static_cast<double>(d)));
            CHECK(std::fabs(want[r * panel_count * kPanelColumns + c] - direct) <= tolerance);
            CHECK(std::fabs(got[r * panel_count * kPanelColumns + c] - direct) <= tolerance);
          }
        }
      }
    }
  }
}

POLARMEM_TEST(half_decoding_levels_are_exact) {
  std::mt19937 rng(19);
  const Kernels& reference = kernels_for(SimdLevel::kScalar);
  for (SimdLevel level : kLevels) {
    if (!cpu_supports(level)) continue;
    const Kernels& k = kernels_for(level);
    for (std::size_t d : kDims) {
      auto xf = random_floats(d, rng);
      std::vector<std::uint16_t> x(d);
      for (std::size_t i = 0; i < d; ++i) x[i] = float_to_half(xf[i]);
      std::vector<float> want(d), got(d);
      reference.f16_to_f32(x.data(), want.data(), d);
      k.f16_to_f32(x.data(), got.data(), d);
      CHECK(want == got);
    }
  }
}

POLARMEM_TEST(half_conversion_round_trips) {
  // Every finite half converts to float and back unchanged.
  for (std::uint32_t bits = 0; bits < 0x10000u; ++bits) {
    const auto h = static_cast<std::uint16_t>(bits);
    if (((h >> 10) & 0x1F) == 0x1F) continue;  // inf / NaN
    CHECK(float_to_half(half_to_float(h)) == h);
  }
  CHECK(half_to_float(float_to_half(1.0f)) == 1.0f);
  CHECK(half_to_float(float_to_half(-0.5f)) == -0.5f);
  CHECK(float_to_half(1e6f) == 0x7C00u);           // overflow to +inf
  CHECK(float_to_half(1e-9f) == 0u);               // underflow to +0
  CHECK(std::fabs(half_to_float(float_to_half(0.1f)) - 0.1f) < 1e-4f);
}

POLARMEM_TEST(level_selection) {
  CHECK(cpu_supports(SimdLevel::kScalar));
  CHECK(cpu_supports(best_supported_simd_level()));
  const SimdLevel before = active_simd_level();
  set_simd_level(SimdLevel::kScalar);
  CHECK(active_simd_level() == SimdLevel::kScalar);
  set_simd_level(before);
  SimdLevel parsed;
  CHECK(parse_simd_level("avx2", &parsed) && parsed == SimdLevel::kAvx2);
  CHECK(!parse_simd_level("sse9", &parsed));
  if (!cpu_supports(SimdLevel::kAvx512)) CHECK_THROWS(set_simd_level(SimdLevel::kAvx512));
}

int main() { return polarmem::testing::run_all(); }
