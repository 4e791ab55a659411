// A closed vocabulary's word-to-concept mapping (concept_mapping.hpp): the most similar concept,
// the first on ties, only at the threshold or above, nothing without concepts. The front and
// library suites check it end to end (tests/integration/test_fast_front_text.py).
#include <vector>

#include "check.hpp"
#include "polarmem/concept_mapping.hpp"

using namespace polarmem::text;

POLARMEM_TEST(a_word_maps_to_its_most_similar_concept_at_the_threshold_or_above) {
  // three concepts of width 2; four words
  const std::vector<float> concepts{1.0f, 0.0f, 0.0f, 1.0f, 0.0f, 1.0f};
  const std::vector<float> words{0.9f, 0.1f, 0.1f, 0.8f, 0.6f, 0.6f, 0.75f, 0.0f};
  const auto mapped = closest_concepts(words.data(), 4, concepts.data(), 3, 2);
  CHECK(mapped.size() == 4);
  CHECK(mapped[0] && mapped[0]->concept_id == 0 && mapped[0]->similarity == 0.9f);
  CHECK(mapped[1] && mapped[1]->concept_id == 1);  // rows 1 and 2 tie: the first
  CHECK(!mapped[2]);                                 // 0.6 < 0.75
  CHECK(mapped[3] && mapped[3]->concept_id == 0);    // exactly the threshold
  CHECK(!closest_concepts(words.data(), 4, concepts.data(), 0, 2)[0]);
}

int main() { return polarmem::testing::run_all(); }
