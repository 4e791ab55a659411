#include "recall_plan.hpp"

#include <google/protobuf/arena.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <iterator>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <unordered_map>

#include "polarmem/answer_recall.hpp"
#include "polarmem/concept_mapping.hpp"
#include "polarmem/error.hpp"
#include "polarmem/fact_check_context.hpp"
#include "polarmem/hit_explanation.hpp"
#include "polarmem/recall_run.hpp"
#include "polarmem/request_checks.hpp"
#include "polarmem/storage/v1/records.pb.h"

namespace polarmem::front {

namespace {

// A search that saw a compaction renumber the slots is run again, as the library's own
// readers do; a namespace compacting on every attempt goes to the library instead.
constexpr int kRenumberedRetries = 3;
// Hit status by tier + 1 (conflict, neutral, entailed), the words the library uses.
constexpr std::array<const char*, 3> kStatus{"CONFLICT", "NEUTRAL", "VERIFIED"};

using Hits = google::protobuf::RepeatedPtrField<v1::Hit>;

// A hit's rank, id, tier, similarity and status: what every answer's hit carries.
v1::Hit* new_hit(std::uint32_t rank, std::string id, int tier, float score, Hits* hits) {
  auto* hit = hits->Add();
  hit->set_rank(rank);
  hit->set_id(std::move(id));
  hit->set_s_log(tier);
  hit->set_s_sem(score);
  hit->set_status(kStatus[static_cast<std::size_t>(tier + 1)]);
  return hit;
}

// The core's explanation (hit_explanation.hpp) of a hit, written into it by name.
void add_explanation(const RecallPlan& plan, const explain::Explanation& why, v1::Hit* hit) {
  for (const auto i : why.entailed) hit->add_entailed_by(plan.concept_names[i]);
  for (const auto i : why.conflicted) hit->add_conflicted_by(plan.concept_names[i]);
  for (const auto& reason : why.reasons) hit->add_reasons(reason);
  hit->set_absence_verified(why.absence_verified);
}

}  // namespace

namespace {

// The context's budget per item: the request's (plan_recall refused one out of its range), or
// the default for 0.
std::size_t context_budget(const v1::RecallRequest& request) {
  return request.context_budget_chars() ? request.context_budget_chars() : text::kDefaultContextBudget;
}

// A text the compiled tokenizer declines (embed): the words of its refusal.
constexpr const char* kUntokenizable =
    "text: holds a literal special token of the encoder's vocabulary ([CLS], [SEP], [MASK], [PAD], [UNK]) or text "
    "that is not UTF-8; remove it";

// The context entry of an explained hit (recall.py render_context's fields); false when a
// concept it cites is not in this process's vocabulary yet (another process bound it).
bool context_entry(const text::Vocabulary& names, const std::string& status, const std::string& id,
                   const storage::v1::ItemRecord& record, text::ContextEntry* entry) {
  entry->status = status;
  entry->content = !record.text().empty() ? record.text() : !record.uri().empty() ? record.uri() : id;
  std::string name;
  for (const auto& ev : record.evidence()) {
    const bool has = ev.state() == common::v1::CONCEPT_STATE_HAS;
    if (!has && ev.state() != common::v1::CONCEPT_STATE_NOT_HAS) continue;
    if (!names.name(ev.concept_id(), &name)) return false;
    (has ? entry->has : entry->not_has).push_back(name);
  }
  return true;
}

// Thrown by a search or read the front cannot complete: the library answers the call.
struct Declined {};
// Thrown when a compaction renumbered the slots during a call's searches: the call runs again.
struct Renumbered {};

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The query concepts' states on `record` with the evidence behind them (the last entry of a
// concept wins, as the library's dict of them), and the record's partition.
void cite(const RecallPlan& plan, const storage::v1::ItemRecord& record, recall::Evidence* out) {
  std::unordered_map<std::uint32_t, const storage::v1::ConceptEvidence*> by_concept;
  for (const auto& ev : record.evidence()) by_concept[ev.concept_id()] = &ev;
  out->cited.resize(plan.state_concepts.size());
  for (std::size_t j = 0; j < out->cited.size(); ++j) {
    const auto found = by_concept.find(plan.state_concepts[j]);
    if (found == by_concept.end()) continue;
    const auto& ev = *found->second;
    const int state = ev.state() == common::v1::CONCEPT_STATE_HAS       ? 1
                      : ev.state() == common::v1::CONCEPT_STATE_NOT_HAS ? -1
                                                                        : 0;
    out->cited[j] = {state, ev.template_scores_size() > 0, ev.mean(), ev.source()};
  }
  out->tau = record.partition().tau();
  out->delta = record.partition().delta();
}

// The call's `base` search in the mode, k, conflict rule and ranking the run asks for.
SearchRequest run_search(const SearchRequest& base, const recall::Search& wanted) {
  SearchRequest request = base;
  request.mode = wanted.mode;
  request.k = wanted.k;
  request.exclude_conflicts = wanted.exclude_conflicts;
  if (!wanted.ranked) {
    request.present_level = request.absent_level = 0;
    request.present_weight = request.absent_weight = 0.0f;
  }
  return request;
}

// The store of one call's Recall run (recall_run.hpp), and the records it read, by item id (the
// hits' text, uri, metadata and context come from them).
class CallStore {
 public:
  // `searches_strict`: the store searches strict in one call (else the run merges two searches).
  CallStore(const RecallPlan& plan, const SearchRequest& base, const std::vector<MetadataPair>& pairs,
            bool searches_strict)
      : plan_(plan), base_(base), pairs_(pairs), searches_strict_(searches_strict) {}
  virtual ~CallStore() = default;

  recall::Store store() {
    recall::Store store;
    store.searches_strict = searches_strict_;
    store.search = [this](const recall::Search& wanted) { return search(wanted); };
    store.read = [this](const std::vector<std::string>& ids, bool stamps) { return read(ids, stamps); };
    return store;
  }
  const storage::v1::ItemRecord& record(const std::string& id) const { return *records_.at(id); }

 protected:
  virtual recall::Found search(const recall::Search& wanted) = 0;
  virtual std::vector<recall::Evidence> read(const std::vector<std::string>& ids, bool stamps) = 0;
  // `bytes` parsed as the record of `id` on the call's arena (a fresh message per hit cost an
  // explained Recall of 10 hits ~35 us of server CPU more, +14 %: bench_serving.py, 20,000 items);
  // nullptr when they are another item's (a fill that raced a compaction's renumbering).
  const storage::v1::ItemRecord* keep(const std::string& id, const std::string& bytes) {
    auto*& held = records_[id];
    if (held == nullptr) held = google::protobuf::Arena::CreateMessage<storage::v1::ItemRecord>(&arena_);
    return held->ParseFromString(bytes) && held->id() == id ? held : nullptr;
  }
  bool has_record(const std::string& id) const { return records_.count(id) > 0; }

  const RecallPlan& plan_;
  const SearchRequest& base_;  // the call's search, before the run's mode, k and ranking
  const std::vector<MetadataPair>& pairs_;

 private:
  const bool searches_strict_;
  google::protobuf::Arena arena_;
  std::unordered_map<std::string, storage::v1::ItemRecord*> records_;  // on arena_
};

// The namespace's index as the store of the core's Recall run: each search is the call's `base`
// search as the run asks for it, made and resolved in one slot generation (a compaction's
// renumbering runs it again), filtered by the call's metadata `pairs`; each read follows its
// search and takes the hits' records (explained, or for their recency stamps) or the index's
// states of the query's concepts, and throws Renumbered when a compaction renumbered the slots
// since its search (the caller runs the Recall again). A search or read the front cannot
// complete throws Declined: the library answers the call.
class IndexStore : public CallStore {
 public:
  // (the index searches strict in one call, under its lock)
  IndexStore(const RecallPlan& plan, const SearchRequest& base, const std::vector<MetadataPair>& pairs)
      : CallStore(plan, base, pairs, true) {}

 private:
  recall::Found search(const recall::Search& wanted) override {
    if (wanted.absent_verified) throw Declined{};  // (never asked: this store searches strict itself)
    SearchRequest request = run_search(base_, wanted);
    for (int attempt = 0; attempt < kRenumberedRetries; ++attempt) {
      generation_ = plan_.ids->generation();
      if (generation_ % 2) continue;
      recall::Found found;
      SearchResult result;
      try {
        if (!pairs_.empty()) {  // the slots of this generation, like the ids resolved below
          request.allow = std::make_shared<const std::vector<std::int64_t>>(plan_.metadata->matching(pairs_));
          if (request.allow->empty()) return found;  // no item passes the filter: nothing eligible
        }
        result = plan_.index->search(request);
      } catch (const Error&) {
        throw Declined{};  // (the request's fields are checked: the library retries, then reports it)
      }
      std::vector<std::string> ids;
      plan_.ids->resolve(result.slots.data(), result.slots.size(), &ids);
      if (plan_.ids->generation() != generation_) continue;
      found.tier_counts = result.tier_counts;
      slot_of_.clear();
      for (std::size_t i = 0; i < ids.size(); ++i) {
        if (ids[i].empty()) continue;  // forgotten since the search: the library drops it too
        slot_of_.emplace(ids[i], result.slots[i]);
        const std::int8_t flags = result.confidence.empty() ? 0 : result.confidence[i];
        const float rank_value = result.rank_scores.empty() ? result.scores[i] : result.rank_scores[i];
        found.rows.push_back({std::move(ids[i]), result.tiers[i], result.scores[i], flags, rank_value});
      }
      return found;
    }
    throw Declined{};
  }

  std::vector<recall::Evidence> read(const std::vector<std::string>& ids, bool stamps) override {
    std::vector<std::int64_t> slots;
    for (const auto& id : ids) slots.push_back(slot_of_.at(id));
    std::vector<recall::Evidence> out(ids.size());
    const std::size_t concepts = plan_.state_concepts.size();
    if (plan_.explain || stamps) {
      std::vector<std::string> bytes;
      if (!plan_.records || !plan_.records->get(slots.data(), slots.size(), &bytes)) throw Declined{};
      if (plan_.ids->generation() != generation_) throw Renumbered{};  // the records of other items
      for (std::size_t i = 0; i < ids.size(); ++i) {
        const storage::v1::ItemRecord* record = keep(ids[i], bytes[i]);
        if (record == nullptr) throw Declined{};
        if (stamps) out[i].stamp_ms = record->updated_ms() ? record->updated_ms() : record->created_ms();
        if (plan_.explain) cite(plan_, *record, &out[i]);
      }
    }
    if (!plan_.explain) {
      std::vector<std::int8_t> states;
      if (concepts > 0 && !slots.empty())
        states = plan_.index->concept_states(slots.data(), slots.size(), plan_.state_concepts);
      if (plan_.ids->generation() != generation_) throw Renumbered{};  // the states of other items
      for (std::size_t i = 0; i < ids.size(); ++i) {
        out[i].cited.resize(concepts);
        for (std::size_t j = 0; j < concepts; ++j) out[i].cited[j].state = states[i * concepts + j];
      }
    }
    for (auto& evidence : out) evidence.found = true;
    return out;
  }

  std::uint64_t generation_ = 0;
  std::unordered_map<std::string, std::int64_t> slot_of_;  // the last search's hits
};

// A backend that searches itself (Milvus) as the store of the core's Recall run: each search is
// the call's `base` search as the run asks for it, made by the backend with the call's metadata
// `pairs` (strict's verified search too: the backend does not search strict in one call); each
// read takes the hits' records from their search or, for those it did not bring, from one read
// of the backend (explained, or for their recency stamps), as the library reads them; an item
// forgotten since its search is dropped. Without explanations the backend reports no concept
// states: each is 0, as in the library's answer from the same backend.
class BackendStore : public CallStore {
 public:
  // (strict: hard, then when needed the verified search, merged by the core)
  BackendStore(const RecallPlan& plan, const SearchRequest& base, const std::vector<MetadataPair>& pairs)
      : CallStore(plan, base, pairs, false) {}

 private:
  recall::Found search(const recall::Search& wanted) override {
    auto found = plan_.backend->search(run_search(base_, wanted), pairs_, wanted.absent_verified, plan_.explain);
    recall::Found out;
    out.tier_counts = found.tier_counts;
    for (auto& hit : found.hits) {
      if (!hit.record.empty()) brought_[hit.id] = std::move(hit.record);
      out.rows.push_back({hit.id, hit.tier, hit.score, 0, hit.score});
    }
    return out;
  }

  std::vector<recall::Evidence> read(const std::vector<std::string>& ids, bool stamps) override {
    std::vector<recall::Evidence> out(ids.size());
    if (!plan_.explain && !stamps) {
      for (auto& evidence : out) {
        evidence.cited.resize(plan_.state_concepts.size());
        evidence.found = true;
      }
      return out;
    }
    std::vector<std::string> wanted;  // not read yet, nor brought by their search
    for (const auto& id : ids)
      if (!has_record(id) && brought_.count(id) == 0) wanted.push_back(id);
    if (!wanted.empty()) {
      auto read = plan_.backend->records(wanted);
      for (std::size_t i = 0; i < wanted.size() && i < read.size(); ++i) brought_[wanted[i]] = std::move(read[i]);
    }
    for (std::size_t i = 0; i < ids.size(); ++i) {
      const auto brought = brought_.find(ids[i]);
      const storage::v1::ItemRecord* record = nullptr;
      if (brought != brought_.end() && !brought->second.empty()) {
        record = keep(ids[i], brought->second);
        if (record == nullptr) throw Declined{};
        brought_.erase(brought);
      } else if (has_record(ids[i])) {
        record = &this->record(ids[i]);
      } else {
        continue;  // forgotten since the search
      }
      out[i].found = true;
      if (stamps) out[i].stamp_ms = record->updated_ms() ? record->updated_ms() : record->created_ms();
      if (plan_.explain) {
        cite(plan_, *record, &out[i]);
      } else {
        out[i].cited.resize(plan_.state_concepts.size());
      }
    }
    return out;
  }

  std::unordered_map<std::string, std::string> brought_;  // serialised records not parsed yet
};

v1::RecallMode api_mode(SearchMode mode) {
  switch (mode) {
    case SearchMode::kOff: return v1::RECALL_MODE_OFF;
    case SearchMode::kSoft: return v1::RECALL_MODE_SOFT;
    case SearchMode::kStrict: return v1::RECALL_MODE_STRICT;
    case SearchMode::kHard: break;
  }
  return v1::RECALL_MODE_HARD;
}

// The run's hits written into `hits` as the library writes them (api/service.py add_hits), with
// their context entries when `entries` is given; false when a context entry cites a concept the
// names table does not hold yet.
bool write_hits(const RecallPlan& plan, const CallStore& store, const std::vector<recall::Hit>& found,
                std::vector<text::ContextEntry>* entries, Hits* hits) {
  std::uint32_t rank = 0;
  for (const auto& shown : found) {
    auto* hit = new_hit(++rank, shown.id, shown.tier, shown.score, hits);
    add_explanation(plan, shown.why, hit);
    if (!plan.explain) continue;
    const auto& record = store.record(shown.id);
    hit->set_text(record.text());
    hit->set_uri(record.uri());
    hit->mutable_metadata()->insert(record.metadata().begin(), record.metadata().end());
    if (entries != nullptr) {
      entries->emplace_back();
      const auto& names = plan.context_names;
      if (!names || !context_entry(*names, hit->status(), shown.id, record, &entries->back())) return false;
    }
  }
  return true;
}

// The call's Recall (`search`: the plan's core request with this call's vectors and concepts)
// run by the core (recall_run.hpp) on the namespace's index, and the response from it; `context`
// (with include_context) also renders the context. `unknown` (a text's words that bound to no
// concept) and `mapped` (those a closed vocabulary mapped) make adaptive's constraints uncertain.
bool answer_search(const RecallPlan& plan, SearchRequest search, const v1::RecallRequest& request,
                   const std::vector<std::string>* context, std::size_t budget, v1::RecallResponse* response,
                   std::vector<std::string> unknown = {}, std::vector<std::string> mapped = {}) {
  if (request.metadata_equals_size() > 0 && !plan.metadata && !plan.backend) return false;
  const std::vector<MetadataPair> pairs(request.metadata_equals().begin(), request.metadata_equals().end());
  recall::Ask ask;
  ask.mode = search.mode;
  ask.adaptive = plan.adaptive;
  const bool constrained = !search.required.empty() || !search.forbidden.empty();
  ask.uncertainty = {std::move(unknown), std::move(mapped), constrained, !search.vectors.empty()};
  ask.k = plan.recency_k > 0 ? plan.recency_k : search.k;
  ask.exclude_conflicts = search.exclude_conflicts;
  ask.suppressed_k = request.suppressed_k();
  if (plan.recency_k > 0) ask.recency = plan.recency;
  ask.now_ms = now_ms();
  ask.explain = plan.explain;
  ask.concept_names = plan.concept_names;
  ask.required_count = plan.required_count;
  ask.metadata_filtered = !pairs.empty();
  ask.confidence_words = plan.confidence_words;
  ask.rule_words = plan.rule_words;
  // A compaction that renumbers the slots between a search and its read runs the Recall again,
  // as the library's own readers do; a namespace compacting on every attempt goes to the library.
  std::unique_ptr<CallStore> store;
  recall::Recalled out;
  for (int attempt = 0;; ++attempt) {
    if (attempt == kRenumberedRetries) return false;
    if (plan.backend != nullptr) {
      store = std::make_unique<BackendStore>(plan, search, pairs);
    } else {
      store = std::make_unique<IndexStore>(plan, search, pairs);
    }
    try {
      out = recall::run(ask, store->store());
      break;
    } catch (const Renumbered&) {
      continue;
    } catch (const Declined&) {
      return false;
    } catch (const Error&) {
      return false;  // (the request's fields are checked: the library retries, then reports it)
    }
  }
  response->MergeFrom(plan.response_template);
  response->set_mode_used(api_mode(out.mode_used));
  response->set_mode_reason(std::move(out.mode_reason));
  auto* tiers = response->mutable_tier_counts();
  tiers->set_conflict(out.tier_counts[0]);
  tiers->set_neutral(out.tier_counts[1]);
  tiers->set_entailed(out.tier_counts[2]);
  std::vector<text::ContextEntry> entries;
  if (!write_hits(plan, *store, out.hits, context != nullptr ? &entries : nullptr, response->mutable_hits()))
    return false;
  if (context != nullptr) response->set_context(text::fact_check_context(entries, budget, *context));
  return write_hits(plan, *store, out.suppressed, nullptr, response->mutable_suppressed());
}

// A closed vocabulary's word mapped to a concept (the response's parse.mapped).
struct MappedWord {
  std::string phrase;
  std::string concept_name;
  float similarity = 0.0f;
};

// A concept's name as the library writes it; the call goes to the library when this process's
// vocabulary does not hold it yet (another process bound it).
answer::NamedConcept named(const TextPath& path, std::uint32_t id) {
  answer::NamedConcept c{id, {}};
  if (!path.vocabulary->name(id, &c.name)) throw Declined{};
  return c;
}

// `text` embedded by the namespace's compiled tokenizer and encoder into `values`; false when
// the tokenizer declines the text (refused: `*refused` says why, where given) or the encoder
// could not encode it.
bool embed(const TextPath& path, const std::string& text, std::vector<float>* values, Refusal* refused = nullptr) {
  std::vector<std::int32_t> tokens;
  if (!path.tokenizer->encode(text, &tokens)) return refused != nullptr && refused->refuse(kUntokenizable);
  values->resize(path.encoder->dim());
  try {
    path.encoder->encode(tokens, values->data());
  } catch (const Error&) {
    return false;
  }
  return true;
}

// The concepts and words of a parsed text with no explicit names, as the library's plan_query
// reads them (text::query_concepts: affirmed concepts required, negated ones forbidden, a closed
// vocabulary's asked words that name no concept mapped to the most similar concept and listed in
// `mapped`, the rest unknown), the words said with no state (uncertain), the proper names. False
// when a name is not in the vocabulary yet, a word cannot be embedded, or the plan's concept
// vectors are not the vocabulary's whole when a word needs mapping (concepts appended since).
bool question_of(const TextPath& path, const text::ParsedText& parsed, answer::ParsedQuestion* question,
                 std::vector<MappedWord>* mapped) {
  const text::MapWords map = [&](const std::vector<std::string>& words) {
    std::vector<std::optional<text::MappedConcept>> none(words.size());
    if (path.open_vocabulary || !path.encoder) return none;  // (no encoder: nothing to map by, as recall.py)
    if (!path.concept_vectors || path.vocabulary->size() != path.concept_count) throw Declined{};
    const std::size_t dim = path.encoder->dim();
    std::vector<float> rows(words.size() * dim), row;
    for (std::size_t i = 0; i < words.size(); ++i) {
      if (!embed(path, words[i], &row)) throw Declined{};
      std::copy(row.begin(), row.end(), rows.begin() + static_cast<std::ptrdiff_t>(i * dim));
    }
    return text::closest_concepts(rows.data(), words.size(), path.concept_vectors->data(), path.concept_count, dim);
  };
  try {
    const text::QueryConcepts concepts = text::query_concepts(text::polarity(parsed.mentions), parsed.unknown, map);
    for (const auto id : concepts.required) question->required.push_back(named(path, id));
    for (const auto id : concepts.forbidden) question->forbidden.push_back(named(path, id));
    question->unknown = concepts.unknown;
    for (const auto& [word, concept_mapped] : concepts.mapped)
      mapped->push_back({word, named(path, concept_mapped.concept_id).name, concept_mapped.similarity});
    for (const auto& term : parsed.unknown)
      if (term.uncertain) question->uncertain_words.push_back(term.word);
    for (const auto& mention : parsed.mentions) {
      auto& subjects = question->subjects;
      if (mention.subject && std::find(subjects.begin(), subjects.end(), mention.concept_id) == subjects.end())
        subjects.push_back(mention.concept_id);
      if (mention.uncertain) question->uncertain.push_back(named(path, mention.concept_id));
    }
  } catch (const Declined&) {
    return false;
  }
  return true;
}

void add_mapped(const std::vector<MappedWord>& mapped, v1::QueryParse* parse) {
  for (const auto& word : mapped) {
    auto* entry = parse->add_mapped();
    entry->set_phrase(word.phrase);
    entry->set_concept(word.concept_name);
    entry->set_similarity(word.similarity);
  }
}

// A text query as the library plans it (recall.py plan_query, run_recall): the parse's
// affirmed concepts required, its negated ones forbidden, its content words that name no
// concept reported as unknown (or, with explicit names, the concepts plan_recall bound), and the
// text's affirmative part embedded for similarity.
bool answer_text(RecallPlan plan, const v1::RecallRequest& request, v1::RecallResponse* response, Refusal* refused) {
  const TextPath& path = *plan.text;
  std::optional<std::size_t> budget;
  if (request.include_context()) budget = context_budget(request);
  const std::string& query = request.text();
  const text::ParsedText parsed = text::parse(query, *path.vocabulary, *path.triggers);
  std::vector<std::string> unknown, mapped_words;  // (adaptive: they make the constraints uncertain)
  // With explicit names (bound by plan_recall) the text only gives the similarity (its affirmative
  // part): its unknown words are not looked at, as in the library.
  if (request.required_size() == 0 && request.forbidden_size() == 0) {
    answer::ParsedQuestion question;
    std::vector<MappedWord> mapped;
    if (!question_of(path, parsed, &question, &mapped)) return false;
    unknown = question.unknown;
    for (const auto& word : mapped) mapped_words.push_back(word.phrase);
    plan.request.required.clear();
    plan.request.forbidden.clear();
    plan.concept_names.clear();
    auto* parse = response->mutable_parse();
    for (const auto& c : question.required) {
      plan.request.required.push_back(c.id);
      parse->add_required(c.name);
      plan.concept_names.push_back(c.name);
    }
    for (const auto& c : question.forbidden) {
      plan.request.forbidden.push_back(c.id);
      parse->add_forbidden(c.name);
      plan.concept_names.push_back(c.name);
    }
    for (const auto& word : question.unknown) parse->add_unknown(word);  // a word said with no state asks nothing
    add_mapped(mapped, parse);
    plan.state_concepts = plan.request.required;
    plan.state_concepts.insert(plan.state_concepts.end(), plan.request.forbidden.begin(), plan.request.forbidden.end());
    plan.required_count = plan.request.required.size();
  }
  // nothing to rank by: a text naming no concept, no encoder, no vector
  if (plan.request.vectors.empty() && plan.request.required.empty() && plan.request.forbidden.empty())
    return refused->refuse(checks::empty_query({}));

  // Mode off is plain similarity: the whole text, as recall.py embeds it.
  const std::string affirmative =
      plan.request.mode == SearchMode::kOff ? std::string() : text::affirmative_part(query, parsed.negated_spans);
  if (plan.text_term &&
      !embed(path, affirmative.empty() ? query : affirmative, &plan.request.vectors[*plan.text_term].values, refused))
    return false;
  SearchRequest search = std::move(plan.request);
  return answer_search(plan, std::move(search), request, budget ? &plan.concept_names : nullptr, budget.value_or(0),
                       response, unknown, mapped_words);
}

// A search's allow-list as the library's backend makes it (storage/local/backend.py search): the
// slots of the call's metadata filter (`filtered`; nothing: no filter), less those on which a
// forbidden concept is not verified absent (`absent_verified`); nothing: no allow-list. Both
// lists come in slot order.
std::optional<std::vector<std::int64_t>> allowed(const RecallPlan& plan,
                                                 const std::optional<std::vector<std::int64_t>>& filtered,
                                                 const answer::CandidateSearch& wanted) {
  if (!wanted.absent_verified) return filtered;
  std::vector<std::int64_t> verified = plan.index->slots_with({}, wanted.forbidden);
  if (!filtered) return verified;
  std::vector<std::int64_t> both;
  std::set_intersection(verified.begin(), verified.end(), filtered->begin(), filtered->end(), std::back_inserter(both));
  return both;
}

// An answer-mode question (answer_recall.hpp) as the library asks it (answer_recall.py
// run_answer): the text parsed and bound as plan_query binds it, the whole text embedded, the
// core's searches run on the namespace's index and the candidates read from its records.
// A question in answer mode (answer_recall.py run_answer): its text's (or, without a text, its
// query vectors' and explicit names') candidates gathered, labelled and explained by the core.
bool answer_question(const RecallPlan& plan, const v1::RecallRequest& request, v1::RecallResponse* response,
                     Refusal* refused) {
  const TextPath* path = plan.text.get();  // null: a question of query vectors and names alone
  const text::Vocabulary& names = *plan.context_names;
  std::optional<std::size_t> budget;
  if (request.include_context()) budget = context_budget(request);
  if (!plan.records && !plan.backend) return false;
  const std::string& query = request.text();
  answer::ParsedQuestion question;
  std::vector<MappedWord> mapped;
  if (request.required_size() > 0 || request.forbidden_size() > 0) {
    // Explicit names (bound by plan_recall) are the question's concepts; the text is what it asks.
    for (std::size_t i = 0; i < plan.state_concepts.size(); ++i) {
      auto& side = i < plan.required_count ? question.required : question.forbidden;
      side.push_back({plan.state_concepts[i], plan.concept_names[i]});
    }
  } else if (path != nullptr &&
             !question_of(*path, text::parse(query, *path->vocabulary, *path->triggers), &question, &mapped)) {
    return false;
  }

  SearchRequest base = plan.request;  // the whole question embedded (answer_recall.py)
  if (plan.text_term && !embed(*path, query, &base.vectors[*plan.text_term].values, refused)) return false;
  // nothing to rank by: a question naming no concept, no encoder, no vector
  if (base.vectors.empty() && question.required.empty() && question.forbidden.empty())
    return refused->refuse(checks::empty_query({}));

  if (request.metadata_equals_size() > 0 && !plan.metadata && !plan.backend) return false;
  const std::vector<MetadataPair> pairs(request.metadata_equals().begin(), request.metadata_equals().end());
  // The metadata filter's slots, made once per slot generation (every search of a call shares them).
  std::optional<std::vector<std::int64_t>> filtered;
  std::uint64_t filtered_generation = 1;  // odd: none made yet
  std::unordered_map<std::string, std::int64_t> slot_of;  // each candidate's slot when it was found
  const answer::RunSearch index_run = [&](const answer::CandidateSearch& wanted) {
    SearchRequest search = base;
    search.mode = wanted.mode;
    search.k = wanted.k;
    search.required = wanted.required;
    search.forbidden = wanted.forbidden;
    answer::Searched found;
    for (int attempt = 0; attempt < kRenumberedRetries; ++attempt) {
      const auto generation = plan.ids->generation();
      if (generation % 2) continue;
      SearchResult result;
      try {
        // The allow-list in this generation's slots, like the ids resolved below.
        if (!pairs.empty() && filtered_generation != generation) {
          filtered = plan.metadata->matching(pairs);
          filtered_generation = generation;
        }
        auto allow = allowed(plan, filtered, wanted);
        if (allow && allow->empty()) return found;  // nothing passes: no hits, no tiers
        if (allow) search.allow = std::make_shared<const std::vector<std::int64_t>>(std::move(*allow));
        result = plan.index->search(search);
      } catch (const Error&) {
        throw Declined{};
      }
      std::vector<std::string> ids;
      plan.ids->resolve(result.slots.data(), result.slots.size(), &ids);
      if (plan.ids->generation() != generation) continue;
      found.tier_counts = result.tier_counts;
      for (std::size_t i = 0; i < ids.size(); ++i) {
        if (ids[i].empty()) continue;  // forgotten since the search: the library drops it too
        slot_of.insert_or_assign(ids[i], result.slots[i]);  // read where it was seen last
        found.hits.emplace_back(std::move(ids[i]), result.scores[i]);
      }
      return found;
    }
    throw Declined{};
  };
  // A backend that searches itself (Milvus) makes each search with the call's metadata filter and
  // brings the hits' records with it where it can, as answer_recall.py asks it.
  std::unordered_map<std::string, std::string> brought;
  const answer::RunSearch backend_run = [&](const answer::CandidateSearch& wanted) {
    SearchRequest search = base;
    search.mode = wanted.mode;
    search.k = wanted.k;
    search.required = wanted.required;
    search.forbidden = wanted.forbidden;
    auto found = plan.backend->search(search, pairs, wanted.absent_verified, true);
    answer::Searched out;
    out.tier_counts = found.tier_counts;
    for (auto& hit : found.hits) {
      if (!hit.record.empty()) brought[hit.id] = std::move(hit.record);
      out.hits.emplace_back(std::move(hit.id), static_cast<float>(hit.score));
    }
    return out;
  };
  // The candidates' records: from the index's store, or what the backend's searches brought (all
  // of them, or one read of the backend for all of them, as answer_recall.py reads them).
  const auto candidate_records = [&](const std::vector<std::string>& ids) {
    std::vector<std::string> bytes;
    if (plan.backend == nullptr) {
      std::vector<std::int64_t> slots;
      for (const auto& id : ids) slots.push_back(slot_of.at(id));
      if (!plan.records->get(slots.data(), slots.size(), &bytes)) throw Declined{};
    } else if (std::all_of(ids.begin(), ids.end(), [&](const std::string& id) { return brought.count(id) > 0; })) {
      for (const auto& id : ids) bytes.push_back(brought[id]);
    } else if (!ids.empty()) {
      bytes = plan.backend->records(ids);
    }
    bytes.resize(ids.size());
    return bytes;
  };
  std::vector<storage::v1::ItemRecord> records;
  const answer::ReadNotes read = [&](const std::vector<std::string>& ids) {
    const std::vector<std::string> bytes = candidate_records(ids);
    records.resize(ids.size());
    std::vector<answer::Note> notes(ids.size());
    std::string name;
    for (std::size_t i = 0; i < ids.size(); ++i) {
      if (plan.backend != nullptr && bytes[i].empty()) continue;  // forgotten since its search
      // A record filled under a compaction's renumbering could name another item: the id says.
      if (!records[i].ParseFromString(bytes[i]) || records[i].id() != ids[i]) throw Declined{};
      notes[i].found = true;
      notes[i].created_ms = records[i].created_ms();
      for (const auto& ev : records[i].evidence()) {
        const bool has = ev.state() == common::v1::CONCEPT_STATE_HAS;
        if (!has && ev.state() != common::v1::CONCEPT_STATE_NOT_HAS) continue;
        if (!names.name(ev.concept_id(), &name)) throw Declined{};
        notes[i].stated.emplace_back(name, has ? 1 : -1);
      }
    }
    return notes;
  };
  // whom a note's concepts are said of: its text read again, as it was read when stored
  const answer::ReadNoteActors note_actors = [&](std::size_t i) {
    answer::NoteActors actors;
    if (path == nullptr || records[i].text().empty()) return actors;
    const text::ParsedText parsed = text::parse(records[i].text(), *path->vocabulary, *path->triggers);
    std::string name;
    for (auto& [id, actor] : text::concept_actors(parsed)) {
      if (path->vocabulary->name(id, &name)) actors.actors.emplace_back(name, std::move(actor));
    }
    for (auto& other : text::others_states(parsed)) {
      if (path->vocabulary->name(other.concept_id, &name))
        actors.others.push_back({name, static_cast<std::int8_t>(other.negated ? -1 : 1), std::move(other.actor)});
    }
    return actors;
  };
  const answer::RunSearch& run = plan.backend != nullptr ? backend_run : index_run;
  answer::Recalled recalled;
  try {
    recalled = answer::answer_recall(query, question, plan.answer_k, run, read, plan.answer_rule, note_actors);
  } catch (const Declined&) {
    return false;
  }

  response->MergeFrom(plan.response_template);
  auto* tiers = response->mutable_tier_counts();
  tiers->set_conflict(recalled.tier_counts[0]);
  tiers->set_neutral(recalled.tier_counts[1]);
  tiers->set_entailed(recalled.tier_counts[2]);
  auto* parse = response->mutable_parse();
  parse->clear_required();  // explicit names: plan_recall named them already
  parse->clear_forbidden();
  std::vector<std::string> concepts;  // the query's concepts, as the context lists them first
  for (const auto* side : {&question.required, &question.forbidden}) {
    for (const auto& c : *side) {
      side == &question.required ? parse->add_required(c.name) : parse->add_forbidden(c.name);
      concepts.push_back(c.name);
    }
  }
  for (const auto& word : question.unknown) parse->add_unknown(word);
  add_mapped(mapped, parse);
  std::vector<text::ContextEntry> entries;
  std::uint32_t rank = 0;
  for (auto& shown : recalled.hits) {
    const auto& record = records[shown.candidate];
    const std::string label(answer::label_name(shown.label));
    if (budget) {
      entries.emplace_back();
      if (!context_entry(names, shown.answer.empty() ? label : shown.answer, shown.id, record, &entries.back()))
        return false;
    }
    auto* hit = new_hit(++rank, shown.id, shown.tier, shown.similarity, response->mutable_hits());
    hit->set_status(label);
    for (const auto& name : shown.entailed_by) hit->add_entailed_by(name);
    for (const auto& name : shown.conflicted_by) hit->add_conflicted_by(name);
    hit->set_absence_verified(shown.absence_verified);
    hit->set_text(record.text());
    hit->set_uri(record.uri());
    hit->mutable_metadata()->insert(record.metadata().begin(), record.metadata().end());
    hit->set_answer(std::move(shown.answer));
    hit->set_superseded_by(std::move(shown.superseded_by));
  }
  if (budget) {
    response->set_context(
        answer::headed_context(recalled.summary, text::fact_check_context(entries, *budget, concepts)));
  }
  response->set_answer_summary(recalled.summary);
  return true;
}

}  // namespace

bool answer(RecallPlan plan, const v1::RecallRequest& request, v1::RecallResponse* response, Refusal* refused) {
  if (plan.answer_k > 0) return answer_question(plan, request, response, refused);
  if (plan.text) return answer_text(std::move(plan), request, response, refused);
  std::optional<std::size_t> budget;
  if (request.include_context()) {
    if (!plan.context_names) return false;
    budget = context_budget(request);
  }
  SearchRequest search = std::move(plan.request);
  return answer_search(plan, std::move(search), request, budget ? &plan.concept_names : nullptr, budget.value_or(0),
                       response);
}

}  // namespace polarmem::front
