// A hit's explanation against the query's concepts: what it entails and conflicts with, the
// reasons as both doors print them, the verified absence of the forbidden concepts.
#include <stdexcept>
#include <string>
#include <vector>

#include "check.hpp"
#include "polarmem/hit_explanation.hpp"

using namespace polarmem::explain;

namespace {

const std::vector<std::string> kNames = {"dog", "leash", "cat"};  // dog, leash required; cat forbidden

}  // namespace

POLARMEM_TEST(required_and_forbidden_states_are_explained_with_their_evidence) {
  const std::vector<Cited> cited = {{1, true, 0.914, ""}, {-1, false, 0.0, "text"}, {-1, true, 0.05, ""}};
  const Explanation why = explain_hit(1, 2, kNames, cited, 0.5, 0.105, true);
  CHECK((why.entailed == std::vector<std::size_t>{0}));
  CHECK((why.conflicted == std::vector<std::size_t>{1}));
  CHECK(why.absence_verified);
  CHECK((why.reasons == std::vector<std::string>{"HAS(dog) p=0.91 τ=0.50 δ=0.10", "NOT_HAS(leash) source=text"}));
}

POLARMEM_TEST(a_forbidden_concept_present_conflicts_and_nothing_is_verified_absent) {
  const std::vector<Cited> cited = {{0, false, 0.0, ""}, {0, false, 0.0, ""}, {1, false, 0.0, ""}};
  const Explanation why = explain_hit(-1, 2, kNames, cited, 0.0, 0.0, true);
  CHECK(why.entailed.empty());
  CHECK((why.conflicted == std::vector<std::size_t>{2}));
  CHECK(!why.absence_verified);
  CHECK((why.reasons == std::vector<std::string>{"HAS(cat) source=client forbidden"}));
}

POLARMEM_TEST(a_conflict_tier_hit_entails_nothing_but_keeps_its_reasons) {
  const std::vector<Cited> cited = {{1, false, 0.0, "client"}, {-1, false, 0.0, ""}, {0, false, 0.0, ""}};
  const Explanation why = explain_hit(-1, 2, kNames, cited, 0.0, 0.0, true);
  CHECK(why.entailed.empty());
  CHECK(why.reasons.size() == 2 && why.reasons[0] == "HAS(dog) source=client");
  CHECK(!why.absence_verified);  // cat has no state
}

POLARMEM_TEST(states_alone_give_no_reasons_and_no_forbidden_concepts_verify_nothing) {
  const std::vector<std::string> names = {"dog"};
  const Explanation why = explain_hit(1, 1, names, {{1, false, 0.0, ""}}, 0.0, 0.0, false);
  CHECK((why.entailed == std::vector<std::size_t>{0}) && why.reasons.empty() && !why.absence_verified);
  bool refused = false;
  try {
    explain_hit(1, 1, names, {}, 0.0, 0.0, false);
  } catch (const std::invalid_argument&) {
    refused = true;
  }
  CHECK(refused);
}

int main() { return polarmem::testing::run_all(); }
