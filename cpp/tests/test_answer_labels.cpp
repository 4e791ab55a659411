// The agent's recall labels: each label's condition, the order shown, the plain-similarity first
// note kept among the k, supersession by a newer note, the summary when nothing answers, and the
// presence-question test.
#include <string>
#include <vector>

#include "check.hpp"
#include "polarmem/answer_labels.hpp"

using namespace polarmem::answer;

namespace {

// "a snack for Leo with no peanuts"
Question snack_question() {
  return {{{"leo", Role::kSubject}, {"snack", Role::kTopic}, {"peanut", Role::kForbidden}}, {}, false};
}

// "does Maya drink coffee?"
Question coffee_question() { return {{{"maya", Role::kSubject}, {"coffee", Role::kTopic}}, {}, true}; }

const LabelledHit& hit_of(const Answer& answer, const std::vector<Candidate>& candidates, const std::string& id) {
  for (const auto& hit : answer.hits) {
    if (candidates[hit.candidate].id == id) return hit;
  }
  static LabelledHit missing;
  missing.status = "missing";
  return missing;
}

}  // namespace

POLARMEM_TEST(labels_follow_the_questions_constraints) {
  const std::vector<Candidate> candidates = {
      {"safe", {1, 1, -1}, 0.70f, 1},       // Leo's snack, peanut-free
      {"name-only", {1, 0, 0}, 0.80f, 2},   // about Leo, nothing asked
      {"allergy", {1, 0, -1}, 0.60f, 3},    // "Leo is allergic to peanuts"
      {"trap", {1, 1, 1}, 0.90f, 4},        // a snack with peanuts
      {"other", {0, 1, 0}, 0.50f, 5},       // someone else's snack
  };
  const Answer answer = answer_question(snack_question(), candidates, 5);
  CHECK(hit_of(answer, candidates, "safe").label == Label::kVerified);
  CHECK(hit_of(answer, candidates, "safe").status == "VERIFIED: leo, snack, peanut-free");
  CHECK(hit_of(answer, candidates, "name-only").label == Label::kRelated);
  CHECK(hit_of(answer, candidates, "name-only").status == "RELATED: leo");
  CHECK(hit_of(answer, candidates, "allergy").label == Label::kConstraint);
  CHECK(hit_of(answer, candidates, "allergy").status == "CONSTRAINT: NOT_HAS peanut");
  CHECK(hit_of(answer, candidates, "trap").label == Label::kConflict);
  CHECK(hit_of(answer, candidates, "trap").status == "CONFLICT: HAS peanut");
  CHECK(hit_of(answer, candidates, "other").label == Label::kRelated);
  // verified answers by similarity, then RELATED, then CONFLICT
  std::vector<std::string> order;
  for (const auto& hit : answer.hits) order.push_back(candidates[hit.candidate].id);
  CHECK((order == std::vector<std::string>{"safe", "allergy", "name-only", "other", "trap"}));
  CHECK(answer.summary.empty());
}

POLARMEM_TEST(a_no_is_an_answer_to_a_presence_question_only) {
  const std::vector<Candidate> candidates = {{"gave-up", {1, -1}, 0.6f, 1}, {"tea", {1, 0}, 0.7f, 2}};
  Answer answer = answer_question(coffee_question(), candidates, 5);
  CHECK(hit_of(answer, candidates, "gave-up").label == Label::kAnswersNo);
  CHECK(hit_of(answer, candidates, "gave-up").status == "ANSWERS NO: NOT_HAS coffee");
  CHECK(candidates[answer.hits[0].candidate].id == "gave-up");
  Question asked = coffee_question();
  asked.presence = false;  // "coffee for Maya": Maya's own "no coffee" is her constraint
  answer = answer_question(asked, candidates, 5);
  CHECK(hit_of(answer, candidates, "gave-up").label == Label::kConstraint);
  CHECK(hit_of(answer, candidates, "gave-up").status == "CONSTRAINT: NOT_HAS coffee");
  // without a subject, "no pneumothorax" contradicts a query for pneumothorax
  const Question finding{{{"pneumothorax", Role::kTopic}}, {}, false};
  const std::vector<Candidate> reports = {{"clear", {-1}, 0.9f, 1}, {"seen", {1}, 0.5f, 2}};
  answer = answer_question(finding, reports, 5);
  CHECK(answer.hits[0].label == Label::kVerified);
  CHECK(hit_of(answer, reports, "clear").label == Label::kConflict);
}

POLARMEM_TEST(an_exclusion_is_verified_only_by_a_stated_absence) {
  // "Leo's favourite snack is rice crackers" says nothing of peanuts: related, not verified
  const std::vector<Candidate> candidates = {{"silent", {1, 1, 0}, 0.8f, 1}, {"stated", {1, 1, -1}, 0.7f, 2}};
  const Answer answer = answer_question(snack_question(), candidates, 5);
  CHECK(hit_of(answer, candidates, "silent").label == Label::kRelated);
  CHECK(hit_of(answer, candidates, "silent").status == "RELATED: leo, snack");
  CHECK(hit_of(answer, candidates, "stated").label == Label::kVerified);
}

POLARMEM_TEST(without_a_subject_an_absence_is_no_ones_constraint) {
  // "an office without dogs": "User has two cats and no dog" constrains no one asked about
  const Question office{{{"office", Role::kTopic}, {"dog", Role::kForbidden}}, {}, false};
  const std::vector<Candidate> candidates = {{"cats", {0, -1}, 0.5f, 1}, {"office", {1, 0}, 0.4f, 2}};
  const Answer answer = answer_question(office, candidates, 5, AnswerRule{1.0, 0.2, 1.0});
  CHECK(hit_of(answer, candidates, "cats").label == Label::kRelated);
  // the note holding the office (silent on dogs) moves up half the bonus: 0.4 + 0.1 > 0.5
  CHECK(candidates[answer.hits[0].candidate].id == "office");
  CHECK(answer.hits[0].status == "RELATED: office");
}

POLARMEM_TEST(labels_move_notes_by_the_rules_amounts) {
  // with small shifts a much more similar RELATED note stays above a verified one
  const std::vector<Candidate> candidates = {
      {"verified", {1, 1, -1}, 0.5f, 1}, {"similar", {1, 0, 0}, 0.9f, 2}, {"trap", {1, 1, 1}, 0.95f, 3}};
  const Answer strict = answer_question(snack_question(), candidates, 3);
  CHECK(candidates[strict.hits[0].candidate].id == "verified");
  const Answer soft = answer_question(snack_question(), candidates, 3, AnswerRule{1.0, 0.1, 0.1});
  CHECK(candidates[soft.hits[0].candidate].id == "similar");
  CHECK(candidates[soft.hits[1].candidate].id == "trap");  // 0.85 > 0.6
  CHECK(candidates[soft.hits[2].candidate].id == "verified");
}

POLARMEM_TEST(the_plain_similarity_first_note_is_always_shown) {
  // four verified answers fill k = 3, yet the most similar note (RELATED) is shown, last
  std::vector<Candidate> candidates = {{"a", {1, 1, -1}, 0.5f, 1},
                                       {"b", {1, 1, -1}, 0.4f, 2},
                                       {"c", {1, 1, -1}, 0.3f, 3},
                                       {"d", {1, 1, -1}, 0.2f, 4},
                                       {"top", {1, 0, 0}, 0.9f, 5}};
  const Answer answer = answer_question(snack_question(), candidates, 3);
  CHECK(answer.hits.size() == 3);
  CHECK(candidates[answer.hits[0].candidate].id == "a");
  CHECK(candidates[answer.hits[1].candidate].id == "b");
  CHECK(candidates[answer.hits[2].candidate].id == "top");
  CHECK(answer.hits[2].label == Label::kRelated);
}

POLARMEM_TEST(a_newer_note_supersedes_an_older_one_about_the_same_subject) {
  const std::int64_t feb = 1769904000000, jul = 1782864000000;  // 2026-02-01, 2026-07-01
  const std::vector<Candidate> candidates = {{"daily", {1, 1}, 0.8f, feb}, {"quit", {1, -1}, 0.6f, jul}};
  const Answer answer = answer_question(coffee_question(), candidates, 5);
  CHECK(candidates[answer.hits[0].candidate].id == "quit");
  CHECK(answer.hits[0].label == Label::kAnswersNo);
  CHECK(answer.hits[1].label == Label::kSuperseded);
  CHECK(answer.hits[1].superseded_by == "quit");
  CHECK(answer.hits[1].status == "SUPERSEDED by quit of 2026-07-01: NOT_HAS coffee (this note 2026-02-01)");
  // shown, not pushed out: a superseded note outranks a less similar RELATED one
  const std::vector<Candidate> three = {
      {"daily", {1, 1}, 0.8f, feb}, {"quit", {1, -1}, 0.6f, jul}, {"tea", {1, 0}, 0.5f, jul}};
  const Answer shown = answer_question(coffee_question(), three, 2, AnswerRule{1.0, 0.1, 1.0});
  CHECK(shown.hits.size() == 2 && shown.hits[1].label == Label::kSuperseded);
  // a newer note that answers nothing does not revise: it only shares a word
  // ("does Leo take the bus to school?": "used to take the school bus", later "sweets on school days")
  const Question bus{{{"leo", Role::kSubject}, {"bus", Role::kTopic}, {"school", Role::kTopic}}, {}, true};
  const std::vector<Candidate> sharing = {{"used-to", {1, -1, -1}, 0.8f, feb}, {"sweets", {1, 0, 1}, 0.6f, jul}};
  const Answer shared = answer_question(bus, sharing, 5);
  CHECK(hit_of(shared, sharing, "used-to").label == Label::kAnswersNo);
  CHECK(hit_of(shared, sharing, "sweets").label == Label::kRelated);
  // without a subject two notes may be about different people: neither revises the other
  const Question anyone{{{"coffee", Role::kTopic}}, {}, true};
  const std::vector<Candidate> unowned = {{"daily", {1}, 0.8f, feb}, {"quit", {-1}, 0.6f, jul}};
  const Answer plain = answer_question(anyone, unowned, 5);
  CHECK(plain.hits[0].label == Label::kVerified);
  CHECK(plain.hits[1].label == Label::kAnswersNo);
}

POLARMEM_TEST(unknown_topics_and_name_only_notes_are_not_verified) {
  // "does Maya go skydiving?": no note mentions skydiving
  const Question question{{{"maya", Role::kSubject}}, {"skydiving"}, true};
  const std::vector<Candidate> candidates = {{"maya", {1}, 0.8f, 1}};
  const Answer answer = answer_question(question, candidates, 5);
  CHECK(answer.hits[0].label == Label::kRelated);
  CHECK(answer.summary == "no verified evidence for: maya, skydiving");
  // coverage below 1 verifies a note holding at least that share of the topics
  const Question two{{{"maya", Role::kSubject}, {"coffee", Role::kTopic}, {"morning", Role::kTopic}}, {}, false};
  const std::vector<Candidate> half = {{"h", {1, 1, 0}, 0.5f, 1}};
  CHECK(answer_question(two, half, 5).hits[0].label == Label::kRelated);
  CHECK(answer_question(two, half, 5, AnswerRule{0.5}).hits[0].label == Label::kVerified);
}

POLARMEM_TEST(presence_questions_are_told_apart) {
  CHECK(is_presence_question("Does Maya drink coffee?"));
  CHECK(is_presence_question("is Omar coming to the offsite"));
  CHECK(is_presence_question("Any allergies for Leo?"));
  CHECK(is_presence_question("So, has Jo got a dog?"));
  CHECK(!is_presence_question("What does Tom drink in the morning?"));
  CHECK(!is_presence_question("a snack for Leo with no peanuts"));
  CHECK(!is_presence_question(""));
}

int main() { return polarmem::testing::run_all(); }
