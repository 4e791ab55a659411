// The recency term (recency.hpp): the factor, the order within tiers, the proof that stops the
// candidate search early, the doubling up to the cap, and what mode_reason says. The library's
// tests (tests/integration/test_recency_recall.py) check it against brute force end to end.
#include <algorithm>
#include <string>
#include <vector>

#include "check.hpp"
#include "polarmem/recency.hpp"

using namespace polarmem::recency;

namespace {

constexpr std::int64_t kNow = 1'000'000'000;

// `n` neutral notes, note i with similarity 1 - i / n, learned i hours ago; one entailed note,
// least similar, learned now.
struct Notes {
  std::vector<Candidate> ordered;  // by (tier, s_sem), as a search returns them
  std::vector<std::int64_t> stamps;
  std::vector<std::size_t> asked;

  explicit Notes(std::size_t n) {
    ordered.push_back({"entailed", 1, 0.01});
    stamps.push_back(kNow);
    for (std::size_t i = 0; i < n; ++i) {
      std::string id = "n";  // (not "n" + ...: GCC 12 warns of a memcpy overlap that is not there)
      id += std::to_string(i);
      ordered.push_back({id, 0, 1.0 - static_cast<double>(i) / static_cast<double>(n)});
      stamps.push_back(kNow - static_cast<std::int64_t>(i) * 3'600'000);
    }
  }
  RunSearch search() {
    return [this](std::size_t c) {
      asked.push_back(c);
      Searched found;
      for (std::size_t i = 0; i < std::min(c, ordered.size()); ++i) found.hits.push_back(ordered[i]);
      found.tier_counts = {0, static_cast<std::int64_t>(ordered.size()) - 1, 1};
      return found;
    };
  }
  ReadStamps read() {
    return [this](const std::vector<std::string>& ids) {
      std::vector<std::optional<std::int64_t>> out;
      for (const auto& id : ids) {
        const auto at = std::find_if(ordered.begin(), ordered.end(), [&](const Candidate& c) { return c.id == id; });
        out.push_back(stamps[static_cast<std::size_t>(at - ordered.begin())]);
      }
      return out;
    };
  }
};

}  // namespace

POLARMEM_TEST(the_factor_halves_each_half_life_and_the_future_counts_as_now) {
  CHECK(factor(kNow, kNow, 60.0) == 1.0);
  CHECK(std::abs(factor(kNow - 60'000, kNow, 60.0) - 0.5) < 1e-12);
  CHECK(factor(kNow + 5'000, kNow, 60.0) == 1.0);
}

POLARMEM_TEST(the_tier_comes_first_and_a_small_weight_stops_early) {
  Notes notes(1000);
  const Ranked ranked = rank(3, true, {3600.0, 0.01}, kNow, 10000, notes.search(), notes.read());
  CHECK(ranked.exact && ranked.rows.size() == 3);
  CHECK(ranked.rows[0].id == "entailed");  // the least similar, but entailed: the tier first
  CHECK(notes.asked == std::vector<std::size_t>{12});  // 4 k candidates proved it
  CHECK(describe(ranked, {3600.0, 0.01}) == "within tiers: s_sem + 0.01 x 2^(-age / 3600 s)");
}

POLARMEM_TEST(a_heavy_weight_asks_for_more_up_to_the_cap_and_says_it_is_not_proven) {
  Notes notes(1000);
  // without tiers, weight 1: fresh notes pass more similar old ones; never proven below the cap
  const Ranked ranked = rank(2, false, {60.0, 1.0}, kNow, 32, notes.search(), notes.read());
  CHECK(notes.asked == (std::vector<std::size_t>{8, 16, 32}));
  CHECK(!ranked.exact && ranked.candidates == 32);
  CHECK(ranked.rows[0].id == "n0" && ranked.rows[1].id == "entailed");
  CHECK(describe(ranked, {60.0, 1.0}) ==
        "within tiers: s_sem + 1 x 2^(-age / 60 s); not proven exact: the core's top 32 candidates did not settle "
        "the top k");
}

int main() { return polarmem::testing::run_all(); }
