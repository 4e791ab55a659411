// The agent's recall from a parsed question to the notes shown (answer_recall.hpp): the terms'
// roles, the candidate searches, and the whole entry over a real core index with the searches
// and record reads a caller provides (as the library's backend and the compiled front do).
#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "check.hpp"
#include "polarmem/answer_recall.hpp"
#include "polarmem/index.hpp"

using namespace polarmem;
using namespace polarmem::answer;

namespace {

enum : std::uint32_t { kMaya, kCoffee, kLeo, kPeanut, kSnack, kConcepts };
const std::vector<std::string> kNames{"maya", "coffee", "leo", "peanut", "snack"};

NamedConcept c(std::uint32_t id) { return {id, kNames[id]}; }

// A note: its vector (dimension 4), what it states, when it was learned.
struct Stored {
  std::string id;
  std::vector<float> vector;
  std::vector<std::uint32_t> has, not_has;
  std::int64_t created_ms;
};

const std::vector<Stored> kNotes{
    {"drinks", {1, 0, 0, 0}, {kMaya, kCoffee}, {}, 1},
    {"gave-up", {0.9f, 0.1f, 0, 0}, {kMaya}, {kCoffee}, 2},
    {"allergy", {0, 1, 0, 0}, {kLeo}, {kPeanut}, 3},
    {"weather", {0.95f, 0, 0.2f, 0}, {}, {}, 4},  // the most similar to the question, about nothing asked
};

struct Memory {
  Index index{{SpaceConfig{"sem", 4}}};

  Memory() {
    std::vector<float> values;
    std::vector<std::uint8_t> kinds;
    std::vector<std::int64_t> has_ptr{0}, not_ptr{0};
    std::vector<std::uint32_t> has, not_has;
    for (const auto& note : kNotes) {
      values.insert(values.end(), note.vector.begin(), note.vector.end());
      kinds.push_back(2);
      has.insert(has.end(), note.has.begin(), note.has.end());
      not_has.insert(not_has.end(), note.not_has.begin(), note.not_has.end());
      has_ptr.push_back(static_cast<std::int64_t>(has.size()));
      not_ptr.push_back(static_cast<std::int64_t>(not_has.size()));
    }
    index.ensure_concepts(kConcepts);
    ItemBatch batch;
    batch.count = kNotes.size();
    batch.kinds = kinds.data();
    VectorInput input;
    input.space = "sem";
    input.values = values.data();
    input.rows = kNotes.size();
    input.dim = 4;
    batch.vectors.push_back(input);
    batch.has = {has_ptr.data(), has.data()};
    batch.not_has = {not_ptr.data(), not_has.data()};
    index.add(batch);
  }

  // The searches as a backend runs them: the question's vector, an absent_verified search only
  // over the notes on which its forbidden concepts are NOT_HAS. Records every search asked for.
  RunSearch searcher(std::vector<CandidateSearch>* asked) const {
    return [this, asked](const CandidateSearch& wanted) {
      asked->push_back(wanted);
      SearchRequest request;
      request.vectors = {{"sem", {1, 0, 0.1f, 0}}};
      request.mode = wanted.mode;
      request.k = wanted.k;
      request.required = wanted.required;
      request.forbidden = wanted.forbidden;
      if (wanted.absent_verified) {
        request.allow = std::make_shared<const std::vector<std::int64_t>>(index.slots_with({}, wanted.forbidden));
      }
      const SearchResult result = index.search(request);
      Searched found;
      found.tier_counts = result.tier_counts;
      for (std::size_t i = 0; i < result.slots.size(); ++i)
        found.hits.emplace_back(kNotes[static_cast<std::size_t>(result.slots[i])].id, result.scores[i]);
      return found;
    };
  }
};

// The records' reader; `forgotten` ids read as gone since the search.
ReadNotes reader(std::vector<std::string> forgotten = {}) {
  return [forgotten](const std::vector<std::string>& ids) {
    std::vector<Note> notes;
    for (const auto& id : ids) {
      notes.emplace_back();
      if (std::find(forgotten.begin(), forgotten.end(), id) != forgotten.end()) continue;
      const auto& note = *std::find_if(kNotes.begin(), kNotes.end(), [&](const Stored& s) { return s.id == id; });
      notes.back() = {true, note.created_ms, {}};
      for (const auto h : note.has) notes.back().stated.emplace_back(kNames[h], 1);
      for (const auto n : note.not_has) notes.back().stated.emplace_back(kNames[n], -1);
    }
    return notes;
  };
}

const Shown* shown(const Recalled& recalled, const std::string& id) {
  for (const auto& hit : recalled.hits)
    if (hit.id == id) return &hit;
  return nullptr;
}

}  // namespace

POLARMEM_TEST(terms_get_their_roles_in_the_questions_order) {
  // "does Maya drink coffee?": Maya the subject, coffee the topic, "drink" a light verb left out
  ParsedQuestion coffee{{c(kMaya), c(kCoffee)}, {}, {kMaya}, {"drink"}, {}, {}};
  Terms terms = question_terms(coffee);
  CHECK(terms.terms.size() == 2);
  CHECK(terms.terms[0].name == "maya" && terms.terms[0].role == Role::kSubject && terms.ids[0] == kMaya);
  CHECK(terms.terms[1].name == "coffee" && terms.terms[1].role == Role::kTopic);
  // "does Maya drink?": the verb is all it asks beyond the name, so it stays
  terms = question_terms({{c(kMaya)}, {}, {kMaya}, {"drink", "drink"}, {}, {}});
  CHECK(terms.terms.size() == 2 && terms.terms[1].name == "drink" && terms.ids[1] == -1);
  // "a snack for Leo with no peanuts, when did Leo quit?": forbidden, then the uncertain event,
  // then words; a subject the required concepts lack is no subject
  terms = question_terms({{c(kSnack), c(kLeo)}, {c(kPeanut)}, {kMaya, kLeo}, {"lunchbox"}, {c(kPeanut)}, {"quit"}});
  std::vector<std::pair<std::string, Role>> got;
  for (const auto& term : terms.terms) got.emplace_back(term.name, term.role);
  const std::vector<std::pair<std::string, Role>> want{{"snack", Role::kTopic},      {"leo", Role::kSubject},
                                                       {"peanut", Role::kForbidden}, {"peanut", Role::kEvent},
                                                       {"lunchbox", Role::kTopic},   {"quit", Role::kEvent}};
  CHECK(got == want);
  // "do I drink coffee with Maya?": a pronoun asks, so Maya is a topic too (round 47)
  terms = question_terms(coffee, true);
  CHECK(terms.terms.size() == 2 && terms.terms[0].role == Role::kTopic && terms.terms[1].role == Role::kTopic);
}

POLARMEM_TEST(candidates_come_from_similarity_the_topics_and_verified_absence) {
  const ParsedQuestion snack{{c(kSnack), c(kLeo)}, {c(kPeanut)}, {kLeo}, {}, {}, {}};
  const auto searches = candidate_searches(snack, question_terms(snack), 3);
  CHECK(searches.size() == 4);
  // plain similarity under the question's own constraints, at least kSimilarCandidates
  CHECK(searches[0].mode == SearchMode::kOff && searches[0].k == kSimilarCandidates);
  CHECK(searches[0].required == (std::vector<std::uint32_t>{kSnack, kLeo}));
  CHECK(searches[0].forbidden == std::vector<std::uint32_t>{kPeanut} && !searches[0].absent_verified);
  // notes holding the topics
  CHECK(searches[1].mode == SearchMode::kHard && searches[1].k == 3);
  CHECK(searches[1].required == std::vector<std::uint32_t>{kSnack} && searches[1].forbidden.empty());
  // notes about the subject with a topic, then the forbidden concept, verified absent
  CHECK(searches[2].required == std::vector<std::uint32_t>{kLeo} && searches[2].absent_verified);
  CHECK(searches[2].forbidden == std::vector<std::uint32_t>{kSnack});
  CHECK(searches[3].forbidden == std::vector<std::uint32_t>{kPeanut} && searches[3].absent_verified);
  CHECK(candidate_searches(snack, question_terms(snack), 25)[0].k == 25);
}

POLARMEM_TEST(a_question_is_answered_from_a_real_index) {
  const Memory memory;
  std::vector<CandidateSearch> asked;
  const ParsedQuestion coffee{{c(kMaya), c(kCoffee)}, {}, {kMaya}, {"drink"}, {}, {}};
  const Recalled recalled = answer_recall("does Maya drink coffee?", coffee, 3, memory.searcher(&asked), reader());
  CHECK(asked.size() == 3);  // similarity, the topic, the topic verified absent
  CHECK(recalled.summary.empty());
  // the first search's tiers: two notes hold both concepts' ... one conflicts, two are neutral
  CHECK(recalled.tier_counts[0] + recalled.tier_counts[1] + recalled.tier_counts[2] == 4);
  const Shown* no = shown(recalled, "gave-up");
  const Shown* yes = shown(recalled, "drinks");
  CHECK(no != nullptr && no->label == Label::kAnswersNo && no->tier == 1);
  CHECK(no->answer == "ANSWERS NO: NOT_HAS coffee");
  CHECK(no->entailed_by == std::vector<std::string>{"maya"} && no->conflicted_by == std::vector<std::string>{"coffee"});
  CHECK(yes != nullptr && yes->label == Label::kSuperseded && yes->superseded_by == "gave-up" && yes->tier == -1);
  // the note plain similarity puts first is always shown, labelled for what it verifies: nothing
  const Shown* first = shown(recalled, "weather");
  CHECK(first != nullptr && first->label == Label::kRelated && first->tier == 0);
  CHECK(recalled.hits.size() == 3 && shown(recalled, "allergy") == nullptr);
}

POLARMEM_TEST(a_forgotten_note_is_left_out_and_a_failed_search_reaches_the_caller) {
  const Memory memory;
  std::vector<CandidateSearch> asked;
  const ParsedQuestion coffee{{c(kMaya), c(kCoffee)}, {}, {kMaya}, {}, {}, {}};
  const Recalled recalled =
      answer_recall("does Maya drink coffee?", coffee, 3, memory.searcher(&asked), reader({"gave-up"}));
  CHECK(shown(recalled, "gave-up") == nullptr);
  CHECK(shown(recalled, "drinks") != nullptr && shown(recalled, "drinks")->label == Label::kVerified);
  bool thrown = false;
  try {
    answer_recall(
        "does Maya drink coffee?", coffee, 3, [](const CandidateSearch&) -> Searched { throw std::runtime_error("x"); },
        reader());
  } catch (const std::runtime_error&) {
    thrown = true;
  }
  CHECK(thrown);
}

POLARMEM_TEST(nothing_verified_heads_the_context_with_the_summary) {
  const Memory memory;
  std::vector<CandidateSearch> asked;
  const ParsedQuestion unknown{{}, {}, {}, {"capital", "mongolia"}, {}, {}};
  const Recalled recalled =
      answer_recall("what is the capital of Mongolia?", unknown, 2, memory.searcher(&asked), reader());
  CHECK(asked.size() == 1);  // no concept asked: plain similarity alone
  CHECK(recalled.summary == "no verified evidence for: capital, mongolia");
  for (const auto& hit : recalled.hits) CHECK(hit.label == Label::kRelated);
  CHECK(headed_context(recalled.summary, "[1] a\n\n") == "(no verified evidence for: capital, mongolia)\n[1] a");
  CHECK(headed_context("", "[1] a\n") == "[1] a\n");
}

int main() { return polarmem::testing::run_all(); }
