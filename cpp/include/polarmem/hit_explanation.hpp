// Why a hit stands where it does against the query's concepts: which it entails, which it
// conflicts with, the evidence behind each cited state, and whether every forbidden concept is
// verified absent. The one implementation, which the Recall run (recall_run.hpp) calls for every
// door, so an explanation reads the same whichever door answered.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace polarmem::explain {

// One query concept's state on the hit, with the evidence behind it when the hit is explained
// from its stored record.
struct Cited {
  int state = 0;          // +1 HAS, -1 NOT_HAS, 0 no state
  bool scored = false;    // the state comes from verifier scores (p = their mean), else from `source`
  double mean = 0.0;      // the scores' mean P(Yes)
  std::string_view source;  // who stated it ("" = the client)
};

struct Explanation {
  std::vector<std::size_t> entailed, conflicted;  // positions in the query's concepts
  std::vector<std::string> reasons;               // one per cited state, with `with_reasons` only
  bool absence_verified = false;                  // forbidden concepts exist and each is NOT_HAS
};

// `names`: the query's concepts, the first `required` of them required, the rest forbidden;
// `cited[i]`: the hit's state of concept i (cited.size() == names.size()). A required concept
// is entailed when HAS (never on a conflict-tier hit, tier -1) and conflicts when NOT_HAS; a
// forbidden one conflicts when HAS. Reasons read "HAS(dog) p=0.91 τ=0.50 δ=0.10" where scores
// back the state (τ, δ: the item's partition) and "NOT_HAS(dog) source=client" where a source
// stated it; a forbidden concept's reason ends " forbidden".
Explanation explain_hit(int tier, std::size_t required, const std::vector<std::string>& names,
                        const std::vector<Cited>& cited, double tau, double delta, bool with_reasons);

}  // namespace polarmem::explain
