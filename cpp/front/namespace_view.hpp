// What the core holds of a namespace so that it plans every Recall of it itself: the
// namespace's core objects, how its names bind, its text path, its rule and the library's bounds
// on a request's counts. The library hands it over (library/core_recall.py: in the
// background, or after a Recall it answered) and drops it whenever what it was made from changes
// (settings, rule, an alias, deletion, a replica's reopening: domain/namespace.py ChangeLock); it
// holds the library's own vocabulary, so a write that only appends concepts changes nothing here.
//
// plan_recall() turns one request into the plan answer() runs (recall_plan.hpp) as the library
// planned it (before round 30: library/namespace_recall.py, recall.py plan_query):
// the mode (the namespace's rule when none is named), the confidence ranking in force, the
// recency term, the concepts bound by name, the core search with its filters. A request with a
// field out of its bounds is refused here, naming the field and the fix (request_checks.hpp
// writes the words); one whose answer needs the library (full items, a consistency token, a name
// an open vocabulary may learn) gets no plan: the library does what only it can and asks again.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "polarmem/item_writes.hpp"
#include "polarmem/write_lock.hpp"
#include "recall_plan.hpp"

namespace polarmem::front {

// The library's bounds on a Recall's counts and defaults (domain/query.py), handed over once so
// that one side states them (metadata's are request_checks.hpp's own).
struct RequestLimits {
  std::size_t max_top_k = 0;
  std::size_t max_ef_search = 0;
  double max_soft_lambda = 0.0;
  std::size_t max_query_concepts = 0;  // per side, required and forbidden
  std::size_t default_top_k = 0;
  double default_recency_weight = 0.0;
  // The agent recall's rule (answer_recall.hpp): kAgentRule but in the dev sweep that chose it
  // (benchmarks/agent_memory_sweep.py), which runs others through this.
  answer::AnswerRule agent_rule = answer::kAgentRule;
};

// A confidence ranking as the core's searches apply it (domain/confidence.py levels, weights)
// and the words mode_reason says it in (rule_choice.describe_confidence).
struct Ranking {
  bool used = false;
  std::uint8_t present_level = 0;
  std::uint8_t absent_level = 0;
  float present_weight = 0.0f;
  float absent_weight = 0.0f;
  std::string words;
};

// What the library's rules say of a Recall naming `mode` (the RecallMode code, 0 for none) with
// `rank_by_confidence` unset (0), false (1) or true (2) in this namespace (rule_choice.py
// confidence_in_force, query.py ranking_refusal and recency_refusal, applied by the library
// when it hands the view over): why it refuses the combination ("" where it accepts it), the
// confidence ranking then in force and why the recency term may not join it ("" where it may).
// The core decides none of it itself.
struct ModeRule {
  int mode = 0;
  int rank_by_confidence = 0;
  std::string refusal;
  Ranking ranking;
  std::string recency_refusal;
};

// What the core needs to store a new note of the namespace itself (NamespaceViews::remember):
// null in a namespace whose every write is the library's (a backend shared between processes or
// searching itself, a multi-vector space, a partitioner that refits its score model as items
// arrive: library/core_recall.py decides). Settings it depends on (templates, the vocabulary's
// openness, the encoder) are the view's: a change drops the view and this with it.
struct NamespaceWriter {
  std::shared_ptr<ItemWrites> items;        // the same writer the library's Remember calls
  std::shared_ptr<ConceptAppends> appends;  // an open vocabulary's new words
  std::shared_ptr<WriteLock> lock;          // the namespace's, which the library's writes hold too
  // The cue table a note's own words are read by (domain/text.py CLINICAL, as the library reads
  // them): not the query cues the text path holds.
  std::shared_ptr<const text::TriggerTable> note_triggers;
  std::string template_version;  // the namespace's template count, as a new record states it
  // Where a note sent without `sem` gets one: the encoder's passes for writes (the library's
  // Remember encodes with the same ones; a text Recall's query passes are the text path's) and
  // its tokenizer. Null both where the namespace encodes no `sem`.
  std::shared_ptr<const SharedTextRuns> note_encoder;
  std::shared_ptr<const WordPieceTokenizer> tokenizer;
};

struct NamespaceView {
  std::shared_ptr<const Index> index;  // null: the backend searches itself (Milvus), called per call
  std::vector<SpaceConfig> spaces;     // the namespace's, which never change
  std::shared_ptr<const ItemIds> ids;
  std::shared_ptr<const MetadataPostings> metadata;
  std::shared_ptr<const ItemRecords> records;  // null: explained Recalls go to the library
  NameBinding binding;
  std::shared_ptr<const TextPath> text;  // null: text queries go to the library
  bool approximate = false;              // the namespace has an approximate index
  // An open vocabulary learns a phrase a query names (a write: concept_backfill.learn_names), so
  // its unknown names are the library's even where allow_unknown_concepts would skip them.
  bool open_vocabulary = false;
  // The namespace's rule: the mode a Recall naming none runs, and why ("<mode> (<reason>)").
  SearchMode rule_mode = SearchMode::kHard;
  std::string rule_words;
  std::vector<ModeRule> mode_rules;  // every combination; a missing one goes to the library
  RequestLimits limits;  // NamespaceViews sets them
  std::shared_ptr<const NamespaceWriter> writer;  // null: the library stores every item
};

// What became of a Recall the core was asked (NamespaceViews::recall).
enum class RecallOutcome {
  kAnswered,
  kNoView,        // the core holds no view of the namespace: the library makes one, then asks again
  kNamesToLearn,  // an open vocabulary lacks a name the request gives; the library may learn it (a
                  // write, concept_backfill.learn_names) and ask again with `names_learned`
  kRefused,       // a field is out of its bounds: the call is refused (Refusal, recall_plan.hpp)
  kLibrary,       // the library answers it: full items, a consistency token, a passing state
};

// What became of a Remember the core was asked (NamespaceViews::remember).
enum class RememberOutcome {
  kStored,   // stored and answered
  kFailed,   // the store refused the write (its status and words in the Refusal); nothing stored
  kLibrary,  // the library stores it: no writer, evidence to verify or score, an id already
             // stored (the already-stored answer), input it refuses in its own words, a busy lock
};

// The plan of `request` in `view`, or nothing: `*refused` says why where the request is refused;
// otherwise the library must answer it (`*names_to_learn` set when an open vocabulary lacks one
// of its names). `names_learned`: the library has let the vocabulary learn the request's names,
// so a name still unknown is the closed vocabulary's case (skipped with suggestions under
// allow_unknown_concepts, else refused).
std::optional<RecallPlan> plan_recall(const NamespaceView& view, const v1::RecallRequest& request, bool names_learned,
                                      bool* names_to_learn, Refusal* refused);

// The views the library has handed over, by namespace.
class NamespaceViews {
 public:
  explicit NamespaceViews(RequestLimits limits) : limits_(limits) {}
  // The namespace's view (its vocabulary is the library's own, so appended concepts need no
  // hand-over); the view takes the limits given at construction.
  void set(const std::string& ns, NamespaceView view);
  std::shared_ptr<const NamespaceView> find(const std::string& ns) const;
  // The one core entry for a Recall, which the front and the library's servicer both call:
  // `request` planned from its namespace's view (plan_recall) and answered from the core
  // (answer) into `response`. Anything but kAnswered leaves `response` empty and says what the
  // library may do first (make the view, learn the names), that the call is refused
  // (`*refused`: the status and the words) or that the library answers it.
  // `backend`: the searches of a backend that searches itself, for this call (the library's
  // servicer gives them; the front has none, so such a namespace's Recalls are the library's there).
  RecallOutcome recall(const v1::RecallRequest& request, v1::RecallResponse* response, Refusal* refused,
                       bool names_learned = false, const BackendCalls* backend = nullptr) const;
  // The one core entry for a Remember, which the front and the library's servicer both call: a
  // new note with no evidence of its own (no scores, states, verify_concepts or content) stored
  // through the view's writer — its id (given, or the content's), its concepts, record, `sem`
  // vector, the store's write and the index — and answered into `response` as the library
  // answers it. Anything else is the library's (kLibrary, `response` left empty); a write the
  // store refuses is kFailed with the store's status and words in `*failed`.
  RememberOutcome remember(const v1::RememberRequest& request, v1::RememberResponse* response, Refusal* failed) const;
  // Whether the front holds a view of the namespace made with `concept_count` concepts where its
  // text path maps words to them (a closed vocabulary's): otherwise the library hands it a new one.
  bool current(const std::string& ns, std::size_t concept_count) const;
  void forget(const std::string& ns);
  std::size_t size() const;

 private:
  const RequestLimits limits_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, std::shared_ptr<const NamespaceView>> by_namespace_;
};

}  // namespace polarmem::front
