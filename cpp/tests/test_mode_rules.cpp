// The modes' rules (mode_rules.hpp): adaptive's choice, with which probes it makes and what it
// says, and the suppressed hits. A real server's Recalls check them end to end
// (tests/integration/test_adaptive_rule.py, test_server_rpcs.py, test_confidence_api.py).
#include <string>
#include <utility>
#include <vector>

#include "check.hpp"
#include "polarmem/mode_rules.hpp"

using namespace polarmem::modes;

namespace {

struct Probes {
  std::vector<std::pair<int, double>> top;
  double best_similarity = 1.0;
  std::vector<RuleSearch> asked;
  RunRuleSearch run() {
    return [this](const RuleSearch& wanted) {
      asked.push_back(wanted);
      return wanted.mode == polarmem::SearchMode::kHard ? top
                                                        : std::vector<std::pair<int, double>>{{0, best_similarity}};
    };
  }
};

}  // namespace

POLARMEM_TEST(uncertain_or_absent_constraints_go_soft_without_a_search) {
  Probes probes;
  auto choice = choose_adaptive({{"quokka"}, {}, true, true}, 3, true, probes.run());
  CHECK(!choice.hard && choice.reason == "constraints uncertain (unknown: quokka; mapped: -)");
  choice = choose_adaptive({{}, {"puppy", "hound"}, true, true}, 3, true, probes.run());
  CHECK(choice.reason == "constraints uncertain (unknown: -; mapped: puppy, hound)");
  choice = choose_adaptive({{}, {}, false, true}, 3, true, probes.run());
  CHECK(!choice.hard && choice.reason == "no constraints to enforce");
  CHECK(probes.asked.empty());
}

POLARMEM_TEST(too_few_compatible_items_go_soft_after_the_hard_probe_alone) {
  Probes probes;
  probes.top = {{1, 0.9}, {0, 0.8}, {-1, 0.95}};
  const auto choice = choose_adaptive({{}, {}, true, true}, 3, true, probes.run());
  CHECK(!choice.hard && choice.reason == "only 2 compatible items for k=3");
  // the hard top k alone, conflicts excluded as the Recall asked
  CHECK(probes.asked.size() == 1 && probes.asked[0].mode == polarmem::SearchMode::kHard && probes.asked[0].k == 3 &&
        probes.asked[0].exclude_conflicts);
}

POLARMEM_TEST(the_margin_decides_between_hard_and_weak_evidence) {
  Probes probes;
  probes.top = {{1, 0.9}, {1, 0.70}};
  probes.best_similarity = 0.84;  // 0.70 >= 0.84 - 0.15
  auto choice = choose_adaptive({{}, {}, true, true}, 2, true, probes.run());
  CHECK(choice.hard && choice.reason == "certain constraints; the hard top 2 stays within 0.15 of the best similarity");
  // then the plain-similarity top 1, conflicts kept
  CHECK(probes.asked.size() == 2 && probes.asked[1].mode == polarmem::SearchMode::kOff && probes.asked[1].k == 1 &&
        !probes.asked[1].exclude_conflicts);
  probes.best_similarity = 0.9;
  choice = choose_adaptive({{}, {}, true, true}, 2, true, probes.run());
  CHECK(!choice.hard &&
        choice.reason == "compatible evidence is weak: the hard top 2 reaches similarity 0.70, below 0.90 - 0.15");
  // no similarity query: enough compatible items settle it without the best
  probes.asked.clear();
  choice = choose_adaptive({{}, {}, true, false}, 2, true, probes.run());
  CHECK(choice.hard && choice.reason == "certain constraints; 2 compatible items" && probes.asked.size() == 1);
}

POLARMEM_TEST(suppressed_are_the_first_conflicts_not_kept) {
  const RuleSearch plain = suppressed_search(7);
  CHECK(plain.mode == polarmem::SearchMode::kOff && plain.k == 7 && !plain.exclude_conflicts);
  const std::vector<std::string> ids{"a", "b", "c", "d", "e"};
  const std::vector<std::int8_t> tiers{-1, 0, -1, -1, -1};
  CHECK(suppressed({"c"}, ids, tiers, 2) == (std::vector<std::size_t>{0, 3}));
  CHECK(suppressed({}, ids, tiers, 10) == (std::vector<std::size_t>{0, 2, 3, 4}));
  CHECK(suppressed({}, ids, tiers, 0).empty());
}

int main() { return polarmem::testing::run_all(); }
