// text_evidence.hpp: an open vocabulary's content terms and a text note's mentions and polarities.
// The naming rules are tested at length through the library (tests/unit/test_text.py,
// test_negation.py); these pin the core's own edges: a name's word mentions and term names.
#include <string>
#include <vector>

#include "check.hpp"
#include "polarmem/text_evidence.hpp"

using namespace polarmem::text;

namespace {

TriggerTable triggers() {
  TriggerPhrases phrases;
  phrases.pre = {"no", "not"};
  phrases.terminators = {"but"};
  return TriggerTable(phrases);
}

}  // namespace

POLARMEM_TEST(content_terms_name_words_by_their_normal_form_and_names_as_written) {
  const auto terms = content_terms("Redis caches dogs, Atlas ships. The dogs of Pandas", triggers());
  CHECK((terms == std::vector<std::string>{"redis", "cache", "dog", "atlas", "ship", "pandas"}));
}

POLARMEM_TEST(word_mentions_share_the_polarity_of_their_name) {
  Vocabulary v;
  const auto green_tea = v.bind("green tea"), tea = v.bind("tea"), cup = v.bind("cup");
  const auto plain = text_evidence("a cup but no green tea", v, triggers(), false);
  CHECK((plain.mentions == std::vector<std::uint32_t>{green_tea, cup}));
  const auto open = text_evidence("a cup but no green tea", v, triggers(), true);
  CHECK((open.mentions == std::vector<std::uint32_t>{green_tea, tea, cup}));
  CHECK((open.polarity == std::vector<std::pair<std::uint32_t, bool>>{{cup, false}, {green_tea, true}, {tea, true}}));
  // a name of one word, or a word that is the name itself, adds nothing
  CHECK(text_evidence("tea", v, triggers(), true).mentions == std::vector<std::uint32_t>{tea});
}

POLARMEM_TEST(lexical_states_skip_what_other_evidence_decides_and_keep_to_only) {
  Vocabulary v;
  const auto green_tea = v.bind("green tea"), tea = v.bind("tea"), cup = v.bind("cup"), dog = v.bind("dog");
  const auto read = text_evidence("a cup but no green tea", v, triggers(), true);
  using States = std::vector<std::pair<std::uint32_t, bool>>;
  CHECK((lexical_states(read, {}, nullptr) == States{{cup, false}, {green_tea, true}, {tea, true}}));
  CHECK((lexical_states(read, {green_tea, dog}, nullptr) == States{{cup, false}, {tea, true}}));
  const std::vector<std::uint32_t> only = {tea, dog};
  CHECK((lexical_states(read, {}, &only) == States{{tea, true}}));  // dog: never mentioned, no state
  CHECK(lexical_states(read, {tea}, &only).empty());
}

int main() { return polarmem::testing::run_all(); }
