// Vocabulary (vocabulary.hpp): one table of names, aliases and ids, and the parse keys kept in
// step with every change. The incremental keys of appended concepts must equal a rebuild's; the
// library-level behaviour (aliases in settings, open vocabularies) is tested through Python.
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "check.hpp"
#include "polarmem/error.hpp"
#include "polarmem/text_parse.hpp"
#include "polarmem/vocabulary.hpp"

using namespace polarmem;
using namespace polarmem::text;

POLARMEM_TEST(names_bind_by_their_normal_form) {
  Vocabulary v;
  CHECK(v.bind("Wine  Glasses") == 0u);
  CHECK(v.ensure("wine glass") == std::make_pair(0u, false));
  CHECK(v.ensure(" dog ") == std::make_pair(1u, true));
  std::string name;
  CHECK(v.name(1, &name) && name == "dog");  // trimmed, as written otherwise
  CHECK(!v.name(2, &name));
  CHECK(*v.lookup("DOGS") == 1u && !v.lookup("cat") && v.size() == 2);
  CHECK((v.names(1) == std::vector<std::string>{"dog"}));
  bool refused = false;
  try {
    v.ensure("--");
  } catch (const Error& e) {
    refused = e.code() == ErrorCode::kInvalidArgument &&
              std::string(e.what()).find("no letters or digits") != std::string::npos;
  }
  CHECK(refused && v.size() == 2);
}

POLARMEM_TEST(names_that_are_not_text_are_refused_and_spaces_trimmed_as_python_strips) {
  Vocabulary v;
  for (const std::string bad : {"dog\xED\xA0\x80", "dog\xFF", "  "}) {
    bool refused = false;
    try {
      v.bind(bad);
    } catch (const Error& e) {
      refused = e.code() == ErrorCode::kInvalidArgument;
    }
    CHECK(refused);
  }
  CHECK(v.size() == 0);
  std::string name;
  CHECK(v.bind("\xC2\xA0"
               "cat"
               "\xE3\x80\x80") == 0u &&
        v.name(0, &name) && name == "cat");  // NBSP, U+3000
}

POLARMEM_TEST(with_aliases_appends_leave_the_keys_to_the_next_reader) {
  Vocabulary v;
  v.add_alias("kitty", "cat", false);
  for (int i = 0; i < 100; ++i) v.bind("word" + std::to_string(i));
  const auto cat = v.bind("cat");
  CHECK(*v.find_key("kitty") == cat && *v.find_key("word99") == 99u);
  Vocabulary same;
  for (int i = 0; i < 100; ++i) same.bind("word" + std::to_string(i));
  same.bind("cat");
  same.add_alias("kitty", "cat", false);
  CHECK(v.parse_keys() == same.parse_keys());
}

POLARMEM_TEST(aliases_are_one_step_and_name_nothing_without_a_target) {
  Vocabulary v;
  v.bind("dog");
  const auto before = v.rewrites();
  v.add_alias("puppy", "dog", false);
  v.add_alias("kitty", "cat", false);   // no such concept yet
  v.add_alias("doggy", "puppy", false);  // an alias of an alias names nothing
  CHECK(v.rewrites() == before + 3);
  CHECK(*v.lookup("puppies") == 0u && !v.lookup("kitty") && !v.lookup("doggy"));
  CHECK(*v.find_key("puppy") == 0u && !v.find_key("kitty") && !v.find_key("doggy"));
  const auto cat = v.bind("cat");  // the target appears: the alias names it, in lookups and parses
  CHECK(*v.lookup("kitty") == cat && *v.find_key("kitty") == cat);
  bool refused = false;
  try {
    v.add_alias("cat", "dog", false);
  } catch (const Error& e) {
    refused = std::string(e.what()).find("already a concept of its own") != std::string::npos;
  }
  CHECK(refused);
  v.add_alias("cat", "dog", true);  // shadowed: lookups find the target, the concept keeps its id
  CHECK(*v.lookup("cat") == 0u && *v.own_id("cat") == cat && *v.find_key("cat") == 0u);
}

POLARMEM_TEST(spaced_forms_fill_gaps_for_the_parse_alone) {
  Vocabulary v;
  const auto xray = v.bind("x-ray");
  CHECK(*v.find_key("x ray") == xray && !v.lookup("x ray"));
  const auto own = v.bind("x ray");  // a concept's own key wins over another's spaced form
  CHECK(*v.find_key("x ray") == own && *v.lookup("x ray") == own);
  v.add_alias("e-mail", "message", false);
  const auto message = v.bind("message");
  CHECK(*v.find_key("e mail") == message);  // an alias's spaced form too
}

POLARMEM_TEST(appended_keys_equal_a_rebuild_with_aliases_too) {
  const std::vector<std::string> words{"a-b c",   "a b-c", "a b c", "x-ray", "x ray", "ray",   "a-b",   "a b",
                                       "glasses", "glass", "b-c",   "dog",   "dogs",  "c-d-e", "c d e", "puppy"};
  std::mt19937 rng(11);
  for (int round = 0; round < 400; ++round) {
    Vocabulary appended, rebuilt;
    std::vector<std::pair<std::string, std::string>> aliases;
    for (int i = 0; i < 3; ++i) aliases.emplace_back(words[rng() % words.size()], words[rng() % words.size()]);
    std::vector<std::string> order;
    for (int i = 0; i < 8; ++i) order.push_back(words[rng() % words.size()]);
    for (const auto& [alias, target] : aliases) appended.add_alias(alias, target, true);
    for (const auto& w : order) {
      appended.bind(w);
      if (rng() % 3 == 0) appended.fresh_keys();  // readers between appends: the incremental path
    }
    for (const auto& w : order) rebuilt.bind(w);
    for (const auto& [alias, target] : aliases) rebuilt.add_alias(alias, target, true);
    CHECK(appended.parse_keys() == rebuilt.parse_keys());
  }
}

POLARMEM_TEST(appended_keys_equal_a_rebuild) {
  const std::vector<std::string> words{"a-b c",   "a b-c", "a b c", "x-ray", "x ray", "ray",   "a-b",  "a b",
                                       "glasses", "glass", "b-c",   "dog",   "dogs",  "c-d-e", "c d e"};
  std::mt19937 rng(7);
  for (int round = 0; round < 200; ++round) {
    Vocabulary appended;
    std::vector<std::string> order;
    for (int i = 0; i < 8; ++i) order.push_back(words[rng() % words.size()]);
    for (const auto& w : order) appended.bind(w);
    Vocabulary rebuilt;  // a late alias forces a whole rebuild of the same concepts
    for (const auto& w : order) rebuilt.bind(w);
    rebuilt.add_alias("zzz", "nothing", false);
    auto keys = rebuilt.parse_keys();
    CHECK(appended.parse_keys() == keys);
  }
}

POLARMEM_TEST(parses_see_appends_at_once_and_readers_run_beside_writers) {
  Vocabulary v;
  TriggerPhrases phrases;
  phrases.pre = {"no"};
  const TriggerTable triggers(phrases);
  std::thread writer([&] {
    for (int i = 0; i < 2000; ++i) v.bind("word" + std::to_string(i));
  });
  std::size_t seen = 0;
  for (int i = 0; i < 2000; ++i) seen = std::max(seen, parse("a word5 and no word1999", v, triggers).mentions.size());
  writer.join();
  const auto parsed = parse("a word5 and no word1999", v, triggers);
  CHECK(parsed.mentions.size() == 2 && parsed.mentions[1].negated && seen <= 2);
}

int main() { return polarmem::testing::run_all(); }
