// What a recalled note answers about a question (the agent's recall, RecallMode "answer"): the
// label shown to the model beside each note, and the order the notes are shown in. The one
// implementation: the library's recall pipeline gathers the candidates and calls this; nothing
// else decides a label.
//
// A question's terms each have a role: the SUBJECT it is about (a proper name, "user"), the
// TOPICS it asks about (its other content words, those no stored note mentions included), what
// it FORBIDS (negated: "a snack for Leo with no peanuts"), and its FRAME — words that say how it
// asks, not what must hold: the answer's type ("what INSTRUMENT does Ana play?": the note says
// "guitar"), "called", "how long", "before" (read_question marks them). A note holds a term when
// it has a concept of that name or of the same stem ("passed" for "pass", "moving" for "move"),
// stated of someone the question asks about where the note's text says whom (answer_question's
// `actors`: "Hugo's wife Clara teaches piano" holds no "teach" for "does Hugo teach piano?", and
// "teach" for "does Clara teach piano?"). A note is
//   VERIFIED    when every subject is HAS on it, enough of the topics are HAS (AnswerRule), every
//               forbidden concept is NOT_HAS, nothing contradicts, and the question asks more than
//               its subject: the question's constraints are verified on that note, never a name
//               alone ("who is Carla?" or "what is Dev intolerant to?" leave only the name: RELATED);
//   ANSWERS_NO  for a presence question ("does Maya drink coffee?") when the subjects are HAS and
//               a topic is NOT_HAS: evidence of absence is an answer, shown beside any yes — but
//               not where the only topic denied is the question's verb and the note denies it of
//               something the question does not name ("used to play bass" for "does Tomas play
//               tennis?": RELATED), nor where only the question's circumstance is denied and the
//               note is silent on the thing asked ("a desk at work, not at home" for "does the
//               user use Windows at home?"), nor where the note denies the thing with a
//               modifier of its own and is silent on the question's ("no staging environment"
//               for "does Osprey have a production environment?");
//   CONSTRAINT  when the question names a subject, the subject is HAS, and a forbidden concept or
//               (not a presence question) a topic is NOT_HAS ("Leo is allergic to peanuts" for
//               "a snack for Leo with no peanuts"; "Maya isn't keen on horror films" for "a film
//               for Maya"): the note states the subject's constraint itself;
//   CONFLICT    when a forbidden concept is HAS, a subject NOT_HAS, or (not a presence question,
//               no subject named) a topic NOT_HAS — "no pneumothorax" for "pneumothorax";
//   SUPERSEDED  when a newer candidate about the same subjects, itself a verified answer, holds
//               the opposite state of one of the question's topics ("drinks coffee daily", later
//               "gave up coffee");
//   RELATED     otherwise: similar, or about the subject, but verifying nothing asked.
// Order: by similarity moved up for the verified answers (VERIFIED, ANSWERS_NO, CONSTRAINT), half
// as far for a RELATED note holding everything asked but silent on what the question excludes,
// and down for CONFLICT (AnswerRule); a superseded note keeps the move of what it answers but
// always stays below the note that revises it; and the note plain similarity puts first is always among the k shown
// (labelled), so relevance is never lost to the logic.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace polarmem::answer {

// kEvent: a topic the question asks about without asserting it, its own negated or hedged event
// ("when did Tomasz QUIT SMOKING?", "why couldn't Kwame make the STANDUPS?"): held like a topic,
// never the ground of a supersession.
enum class Role : std::uint8_t { kSubject = 0, kTopic = 1, kForbidden = 2, kEvent = 3, kFrame = 4 };

struct QueryTerm {
  std::string name;
  Role role = Role::kTopic;
  // The verb the question asks with, right after its subject ("does Tomas PLAY tennis?",
  // read_question marks it): a note that denies it of another thing ("used to play bass")
  // answers nothing about this one.
  bool verb = false;
  // Where, when or with what the question asks it, after a preposition ("at HOME", "from
  // LISBON"; read_question marks it): a note that denies only this and is silent on what the
  // question asks of it ("a standing desk at work, not at home" for "does the user use Windows
  // at home?") answers nothing.
  bool circumstance = false;
  // A topic right before another, naming which one ("does Osprey have a PRODUCTION environment?";
  // read_question marks it): a note that denies the other and something unasked ("no staging
  // environment") is silent on this one.
  bool modifier = false;
};

struct Question {
  std::vector<QueryTerm> terms;  // concepts and words, in the question's order
  bool presence = false;         // a yes / no question about presence (is_presence_question)
};

// A note's stated concepts: (name, +1 HAS / -1 NOT_HAS); concepts without a state are left out.
using Concepts = std::vector<std::pair<std::string, std::int8_t>>;

struct Candidate {
  std::string id;
  Concepts concepts;
  float similarity = 0.0f;      // to the whole question
  std::int64_t created_ms = 0;  // when the memory learned it (a newer note revises an older one)
};

struct AnswerRule {
  // The share of the question's topics (unknown words included) a note must hold as HAS to be
  // VERIFIED; chosen on the dev sets (docs/agents.md).
  double topic_coverage = 1.0;
  // The order shown: similarity + verified_bonus for a verified answer, - contradiction_penalty
  // for CONFLICT and SUPERSEDED (large values: the labels strictly first). A misread state moves
  // a note by these, not to the end; chosen on the dev sets.
  double verified_bonus = 1.0;
  double contradiction_penalty = 1.0;
};

enum class Label : std::uint8_t { kVerified, kAnswersNo, kConstraint, kRelated, kSuperseded, kConflict };

struct LabelledHit {
  std::size_t candidate = 0;  // index into the candidates
  Label label = Label::kRelated;
  std::string status;  // what the model reads, e.g. "VERIFIED: leo, snack, peanut-free"
  std::string superseded_by;  // the newer note's id (SUPERSEDED only)
  std::vector<std::int8_t> states;  // per question term: the note's state of it (+1, -1, 0)
};

struct Answer {
  std::vector<LabelledHit> hits;  // at most k, in the order shown
  std::string summary;            // "no verified evidence for: ..." when no hit is a verified answer, else ""
};

// The question `utf8` with its terms: presence decided, frame words marked kFrame (the word after
// "what / which / whose / how many / how much", skipping "kind of", numbers and articles; the
// asking words of frame_words()). Terms keep their order.
Question read_question(std::string_view utf8, std::vector<QueryTerm> terms);

// Words that say how a question asks, never what must hold ("called", "long", "kind", "before").
bool is_frame_word(std::string_view word);

// The key two words share when one is an inflection of the other: "passed" / "pass",
// "moving" / "move" / "moved", "submitted" / "submit", "studies" / "studying" / "study", and a
// verb's noun ("dependency" / "depend"), and common irregular past forms ("ran" / "run"). No
// synonyms; used to match a question's words to a note's concepts.
std::string stem(std::string_view word);

// Whom a note states its concepts of, where it names someone (text::concept_actors): (concept
// name, actor: the words naming them, "maya" or "wife clara").
using Actors = std::vector<std::pair<std::string, std::string>>;
// What a note states of another person only, with no state of its own (text::others_states).
struct OthersState {
  std::string name;  // the concept
  std::int8_t state = 0;  // +1 / -1
  std::string actor;  // "brother karim"
};
struct NoteActors {
  Actors actors;
  std::vector<OthersState> others;
};
// A candidate's actors (by its index). Read only for a note that would be a verified answer to a
// question with a subject, or that names a relative: a note's reading costs a parse.
using ReadActors = std::function<NoteActors(std::size_t candidate)>;

// Labels every candidate and returns the k to show, in order (see the file comment). With
// `actors`, what a note states of someone the question does not name verifies nothing of its
// subject ("Hugo's wife Clara teaches piano" for "does Hugo teach piano?": RELATED), and what it
// says of a relative answers a question about that relative ("Nadia's brother Karim plays hockey"
// for "does Karim play hockey?": VERIFIED).
Answer answer_question(const Question& question, const std::vector<Candidate>& candidates, std::size_t k,
                       const AnswerRule& rule = {}, const ReadActors& actors = {});

// "does / do / did / is / are / was / were / has / have / had / can / could / will / would /
// should ... ?", "is there", "any ...": a question whose "no" is an answer.
bool is_presence_question(std::string_view utf8);
// Whether a personal pronoun asks the question: its first auxiliary of doing, being or having (in
// its first three words) is followed by one ("do I use Slack?", "what did we move to?"). Its names
// are then what it asks about, never its subject. Not a modal's: "should I get Jo tickets to a
// musical?" asks about Jo (agent memory dev).
bool asked_by_a_pronoun(std::string_view utf8);

std::string_view label_name(Label label);

// Whether the label is a verified answer to the question (VERIFIED, ANSWERS_NO, CONSTRAINT).
bool is_verified_answer(Label label);

}  // namespace polarmem::answer
