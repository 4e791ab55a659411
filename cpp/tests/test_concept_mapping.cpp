// A closed vocabulary's word-to-concept mapping (concept_mapping.hpp): the most similar concept,
// the first on ties, only at the threshold or above, nothing without concepts. A real server's
// text Recalls check it end to end (tests/integration/test_text_recall.py).
#include <string>
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

namespace {

UnknownTerm term(const char* word, bool negated, bool uncertain = false) {
  UnknownTerm t;
  t.word = word;
  t.negated = negated;
  t.uncertain = uncertain;
  return t;
}

}  // namespace

POLARMEM_TEST(a_querys_concepts_take_mapped_words_to_their_side_once) {
  // "a dog and a puppy, no kitten, maybe a sofa, no cat, a quokka": dog affirmed, cat negated;
  // puppy -> dog (already required), kitten -> cat (already forbidden), quokka maps to nothing,
  // sofa is said with no state (asks nothing).
  int calls = 0;
  std::vector<std::string> asked;
  const MapWords map = [&](const std::vector<std::string>& words) {
    ++calls;
    asked = words;
    return std::vector<std::optional<MappedConcept>>{MappedConcept{0, 0.8f}, MappedConcept{1, 0.9f}, std::nullopt};
  };
  const auto concepts = query_concepts(
      {{0, false}, {1, true}},
      {term("puppy", false), term("kitten", true), term("sofa", false, true), term("quokka", false)}, map);
  CHECK(calls == 1 && asked == (std::vector<std::string>{"puppy", "kitten", "quokka"}));
  CHECK(concepts.required == std::vector<std::uint32_t>{0} && concepts.forbidden == std::vector<std::uint32_t>{1});
  CHECK(concepts.unknown == std::vector<std::string>{"quokka"});
  CHECK(concepts.mapped.size() == 2 && concepts.mapped[1].first == "kitten" &&
        concepts.mapped[1].second.concept_id == 1);
  // a negated word mapped to a concept affirmed elsewhere: required wins; no asked word: no call
  const auto affirmed = query_concepts({{2, false}}, {term("couch", true)}, [](const std::vector<std::string>&) {
    return std::vector<std::optional<MappedConcept>>{MappedConcept{2, 0.85f}};
  });
  CHECK(affirmed.required == std::vector<std::uint32_t>{2} && affirmed.forbidden.empty());
  calls = 0;
  CHECK(query_concepts({{3, true}}, {}, map).forbidden == std::vector<std::uint32_t>{3} && calls == 0);
}

int main() { return polarmem::testing::run_all(); }
