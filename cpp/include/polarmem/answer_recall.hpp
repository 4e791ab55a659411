// The agent's recall (RecallMode "answer") from a parsed question to the notes shown: the one
// implementation both doors call — the library (polarmem_server/library/answer_recall.py, through
// any backend) and the compiled front (cpp/front/recall_plan.cpp, from the core's index). What it
// decides: the question's terms and their roles, the searches that gather the candidates, the
// labels and order (answer_labels.hpp), each shown note's explanation, and the context's heading.
// What it leaves to the caller: parsing and binding the question (the namespace's vocabulary),
// running a search (a backend's or the core's index) and reading the hits' records.
//
// The paper's entailment (any one required concept HAS) suits filtering images by a few
// categories; on agent notes it made every note naming the person VERIFIED, filled the context
// with them and hid the note that answers. So the candidates come from plain similarity to the
// WHOLE question (its negated words included: they say what it is about) and from the logic
// (notes holding the asked topics; notes holding a topic or a forbidden concept as NOT_HAS, which
// answer "no" or state a constraint), and the labels, not the cut-off, decide what is shown.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "polarmem/answer_labels.hpp"
#include "polarmem/index.hpp"

namespace polarmem::answer {

// Candidates drawn from plain similarity (at least k): enough that the labels, not the cut-off,
// decide what is shown; the logic's own searches add theirs. 10 and 20 gave the same figures on
// the dev sets (benchmarks/agent_memory_sweep.py); 10 reads half the records.
inline constexpr std::size_t kSimilarCandidates = 10;

// The rule the product runs, swept on the dev splits of tests/data/agent_memory and
// tests/data/conversations (benchmarks/agent_memory_sweep.py, results/agent-memory-sweep-dev.json):
// coverage 0.5 verified more conversation evidence (51 % against 38 %) but labelled 2x more
// contradicting notes VERIFIED (7.4 % against 3.7 %), 3x more unanswerable questions and 5x more
// adversarial ones; 0.75 (one topic of four may be unstated) verified 1 more evidence note of 189
// than 1.0 at no cost on dev; a penalty of 0.1 put 1 more right note in the top 5 of 108 but let
// a contradicting note above a consistent one, which the product promises never to do.
inline constexpr AnswerRule kAgentRule{0.75, 0.1, 1.0};

// A concept of the question: its id in the namespace and its name as the vocabulary writes it.
struct NamedConcept {
  std::uint32_t id = 0;
  std::string name;
};

// The question as its parse and the namespace's vocabulary gave it (the library's plan_query;
// the front's text plans do the same with the core parse).
struct ParsedQuestion {
  std::vector<NamedConcept> required;   // affirmed (a closed vocabulary's mapped words included), in order
  std::vector<NamedConcept> forbidden;  // negated, none of them required
  std::vector<std::uint32_t> subjects;  // concepts the parse marks as proper names, in order
  std::vector<std::string> unknown;     // words that name no concept, asked with a state
  // Mentioned with no state (a hedge, the question's own negated event: "when did Tomasz QUIT
  // smoking?"): asked about without being asserted.
  std::vector<NamedConcept> uncertain;
  std::vector<std::string> uncertain_words;
};

// One search of the candidates: the caller runs it with the query's own filters (kinds,
// metadata, space weights, exactness) and its vector of the whole question.
struct CandidateSearch {
  SearchMode mode = SearchMode::kOff;
  std::size_t k = 10;
  std::vector<std::uint32_t> required, forbidden;
  bool absent_verified = false;  // only notes on which every forbidden concept is NOT_HAS
};

// A candidate search's hits (id, similarity to the whole question: every search scores the
// same vector) and its tier counts.
struct Searched {
  std::vector<std::pair<std::string, float>> hits;
  std::array<std::int64_t, 3> tier_counts{0, 0, 0};  // conflict, neutral, entailed
};

// Runs one candidate search; throws to give up (the exception reaches answer_recall's caller).
using RunSearch = std::function<Searched(const CandidateSearch&)>;

// What a candidate's stored record says; `found` false: forgotten since the search (left out).
struct Note {
  bool found = false;
  std::int64_t created_ms = 0;
  Concepts stated;  // the note's concepts with a state, by name
};

// Reads the candidates' records, one per id in order (one read for all of them).
using ReadNotes = std::function<std::vector<Note>(const std::vector<std::string>& ids)>;
// Whom a read note states its concepts of (its text parsed again: text::concept_actors), by its
// index into the ids read_notes was given; called after read_notes, for few notes.
using ReadNoteActors = std::function<NoteActors(std::size_t note)>;

// A note shown, in order.
struct Shown {
  std::size_t candidate = 0;  // index into the ids read_notes was given
  std::string id;
  float similarity = 0.0f;
  int tier = 0;  // +1 a verified answer, -1 CONFLICT / SUPERSEDED, 0 RELATED: the hit's s_log
  Label label = Label::kRelated;
  std::string answer;  // what the model reads, e.g. "VERIFIED: leo, snack, peanut-free"
  std::string superseded_by;
  std::vector<std::string> entailed_by, conflicted_by;
  bool absence_verified = false;
};

struct Recalled {
  std::vector<Shown> hits;
  std::string summary;  // "no verified evidence for: ..." when no hit is a verified answer, else ""
  std::array<std::int64_t, 3> tier_counts{0, 0, 0};  // of the plain-similarity search
};

// The question's terms in the order answer_question reads them: its concepts (the first proper
// name among the required is the subject, or "user"; the other required are topics; the
// forbidden; the uncertain as events), then its words no concept names (topics; light verbs
// left out: "does Jo drink coffee?" asks about coffee, unless they are all it asks beyond the
// subject), then its uncertain words (events). Concepts carry their ids in `ids` (-1 for a word).
struct Terms {
  std::vector<QueryTerm> terms;
  std::vector<std::int64_t> ids;
};
// `asked_by_a_pronoun` (answer_labels.hpp): no subject, every concept a topic.
Terms question_terms(const ParsedQuestion& question, bool asked_by_a_pronoun = false);

// The searches that gather the candidates of a question with these terms, shown `k`.
std::vector<CandidateSearch> candidate_searches(const ParsedQuestion& question, const Terms& terms, std::size_t k);

// Gathers, labels, orders and explains: the notes to show for `question_utf8` (at most k).
// `shown`: each Shown's index into the ids read_notes was given, so the caller finds its record.
// Without `note_actors` a note's every state is its subject's.
Recalled answer_recall(std::string_view question_utf8, const ParsedQuestion& question, std::size_t k,
                       const RunSearch& run, const ReadNotes& read_notes, const AnswerRule& rule = kAgentRule,
                       const ReadNoteActors& note_actors = {});

// The context a model reads: the summary, when there is one, heads the fact-checked entries.
std::string headed_context(const std::string& summary, const std::string& context);

}  // namespace polarmem::answer
