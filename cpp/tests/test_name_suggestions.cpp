// Did-you-mean suggestions (name_suggestions.hpp): difflib's ratio, its popular-element rule for
// sequences of 200 or more, and the choice of names. The expected ratios are Python's
// difflib.SequenceMatcher(None, a, b).ratio(); tests/unit/test_suggest.py compares the two on
// random strings.
#include <string>
#include <vector>

#include "check.hpp"
#include "polarmem/name_suggestions.hpp"

using namespace polarmem::suggest;

POLARMEM_TEST(ratio_is_difflibs) {
  CHECK(ratio("dgo", "dog") == 0.6666666666666666);
  CHECK(ratio("hot dogs", "hot dog") == 0.9333333333333333);
  CHECK(ratio("glass", "wine glass") == 0.6666666666666666);
  CHECK(ratio("zebra", "zebra crossing") == 0.5263157894736842);
  CHECK(ratio("tree", "three") == 0.8888888888888888);
  CHECK(ratio("x-ray", "xray") == 0.8888888888888888);
  CHECK(ratio("", "abc") == 0.0);
  CHECK(ratio("", "") == 1.0);
  CHECK(ratio("caf\xc3\xa9", "cafe") == 0.75);  // code points, not bytes
}

POLARMEM_TEST(popular_elements_of_a_long_name_are_not_matched_from) {
  std::string repeated;
  for (int i = 0; i < 60; ++i) repeated += "abcd";
  std::string reversed;
  for (int i = 0; i < 55; ++i) reversed += "dcba";
  CHECK(ratio(repeated, reversed) == 0.0);  // every element of the 220 is popular
  // ... but a match found through the rest still extends over them
  CHECK(ratio("xxxxxxxxxxabc", std::string(250, 'a') + "abc") == 0.022556390977443608);
  CHECK(ratio(std::string(250, 'a') + "abc", "xyzabc") == 0.023166023166023165);
}

POLARMEM_TEST(closest_keys_by_ratio_and_containment) {
  const std::vector<std::string> keys{"dog", "hot dog", "cat", "wine glass", "frisbee"};
  CHECK((closest("dog", keys) == std::vector<std::size_t>{0}));  // an equal key alone
  CHECK((closest("dgo", keys) == std::vector<std::size_t>{0}));
  CHECK((closest("hot dogs", keys) == std::vector<std::size_t>{1}));
  CHECK((closest("glass", keys) == std::vector<std::size_t>{3}));  // whole words contained
  CHECK((closest("dog", keys, 0).empty()));
  CHECK((closest("", keys).empty()));
  CHECK((closest("zzz", keys).empty()));
  // ties keep the keys' order; the limit cuts the list
  const std::vector<std::string> ties{"cab", "cat", "car", "cot"};
  CHECK((closest("caz", ties, 2) == std::vector<std::size_t>{0, 1}));
}

int main() { return polarmem::testing::run_all(); }
