#include "recall_plan.hpp"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cstdio>
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
#include "polarmem/storage/v1/records.pb.h"

namespace polarmem::front {

namespace {

// A search that saw a compaction renumber the slots is run again, as the library's own
// readers do; a namespace compacting on every attempt goes to the library instead.
constexpr int kRenumberedRetries = 3;
// Hit status by tier + 1 (conflict, neutral, entailed), the words the library uses.
constexpr std::array<const char*, 3> kStatus{"CONFLICT", "NEUTRAL", "VERIFIED"};

bool fill_vectors(const RecallPlan& plan, const v1::RecallRequest& request, SearchRequest* search) {
  if (static_cast<std::size_t>(request.vectors_size()) != search->vectors.size()) return false;
  for (std::size_t i = 0; i < search->vectors.size(); ++i) {
    auto& term = search->vectors[i];
    const auto found = request.vectors().find(term.space);
    if (found == request.vectors().end()) return false;
    const auto& values = found->second.values();
    if (static_cast<std::size_t>(values.size()) != plan.dims[i]) return false;
    term.values.assign(values.begin(), values.end());
  }
  return true;
}

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

// As the library's explanation-free hits: the query concepts' states from the index alone.
void add_hit(const RecallPlan& plan, std::uint32_t rank, std::string id, int tier, float score,
             const std::int8_t* states, Hits* hits) {
  auto* hit = new_hit(rank, std::move(id), tier, score, hits);
  std::vector<explain::Cited> cited(plan.state_concepts.size());
  for (std::size_t j = 0; j < cited.size(); ++j) cited[j].state = states != nullptr ? states[j] : 0;
  add_explanation(plan, explain::explain_hit(tier, plan.required_count, plan.concept_names, cited, 0.0, 0.0, false),
                  hit);
}

// As the library's explained hits (recall.py explain_hit, api/service.py add_hits): the query
// concepts' states with the evidence behind them from the record, and the record's text, uri
// and metadata.
void add_explained_hit(const RecallPlan& plan, std::uint32_t rank, std::string id, int tier, float score,
                       const storage::v1::ItemRecord& record, Hits* hits) {
  auto* hit = new_hit(rank, std::move(id), tier, score, hits);
  std::unordered_map<std::uint32_t, const storage::v1::ConceptEvidence*> by_concept;
  for (const auto& ev : record.evidence()) by_concept[ev.concept_id()] = &ev;  // the last one wins, as a dict
  std::vector<explain::Cited> cited(plan.state_concepts.size());
  for (std::size_t j = 0; j < cited.size(); ++j) {
    const auto found = by_concept.find(plan.state_concepts[j]);
    if (found == by_concept.end()) continue;
    const auto& ev = *found->second;
    const int state = ev.state() == common::v1::CONCEPT_STATE_HAS       ? 1
                      : ev.state() == common::v1::CONCEPT_STATE_NOT_HAS ? -1
                                                                        : 0;
    cited[j] = {state, ev.template_scores_size() > 0, ev.mean(), ev.source()};
  }
  const auto& partition = record.partition();
  add_explanation(plan,
                  explain::explain_hit(tier, plan.required_count, plan.concept_names, cited, partition.tau(),
                                       partition.delta(), true),
                  hit);
  hit->set_text(record.text());
  hit->set_uri(record.uri());
  hit->mutable_metadata()->insert(record.metadata().begin(), record.metadata().end());
}

}  // namespace

namespace {

std::string serialised(const v1::RecallRequest& shape) {
  std::string key;
  {
    google::protobuf::io::StringOutputStream stream(&key);
    google::protobuf::io::CodedOutputStream out(&stream);
    out.SetSerializationDeterministic(true);
    shape.SerializeToCodedStream(&out);
  }
  return key;
}

}  // namespace

namespace {

v1::RecallRequest without_values(const v1::RecallRequest& request) {
  v1::RecallRequest shape = request;
  for (auto& [space, value] : *shape.mutable_vectors()) value.clear_values();
  for (auto& [key, value] : *shape.mutable_metadata_equals()) value.clear();
  return shape;
}

}  // namespace

std::string plan_key(const v1::RecallRequest& request) { return serialised(without_values(request)); }

std::string generic_key(const v1::RecallRequest& request) {
  v1::RecallRequest shape = without_values(request);
  shape.clear_required();
  shape.clear_forbidden();
  // A suffix no serialised message ends with in practice, and a different one per count pair.
  return serialised(shape) + "#generic:" + std::to_string(request.required_size()) + "," +
         std::to_string(request.forbidden_size());
}

std::string text_key(const v1::RecallRequest& request) {
  v1::RecallRequest shape = without_values(request);
  shape.clear_text();
  shape.clear_context_budget_chars();
  shape.clear_required();
  shape.clear_forbidden();
  return serialised(shape) + "#text:" + std::to_string(request.required_size()) + "," +
         std::to_string(request.forbidden_size());
}

bool ConceptNames::append(std::size_t first, const std::vector<std::string>& names) {
  std::unique_lock guard(lock_);
  if (first != names_.size()) return false;
  names_.insert(names_.end(), names.begin(), names.end());
  return true;
}

std::size_t ConceptNames::size() const {
  std::shared_lock guard(lock_);
  return names_.size();
}

bool ConceptNames::name(std::uint32_t id, std::string* out) const {
  std::shared_lock guard(lock_);
  if (id >= names_.size()) return false;
  *out = names_[id];
  return true;
}

namespace {

// The library's normalise() of an ASCII name: lower case, then the core's normal form.
std::optional<std::string> normal_form(const std::string& name) {
  std::string lowered(name);
  for (auto& ch : lowered) {
    if (static_cast<unsigned char>(ch) >= 0x80) return std::nullopt;
    ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  }
  return text::normalise_lowered(lowered);
}

// Whether `key` is the spaced form of a hyphenated key naming the same concept ("x ray" for
// "x-ray", "e mail" for an alias "e-mail"): texts find it, the library's lookup does not. Every
// way of hyphenating its spaces is tried (a key of more than eight spaces is taken as one).
bool spaced_form(const text::ConceptKeys& keys, const std::string& key, std::uint32_t id) {
  std::vector<std::size_t> spaces;
  for (std::size_t i = 0; i < key.size(); ++i)
    if (key[i] == ' ') spaces.push_back(i);
  if (spaces.size() > 8) return true;
  for (std::uint32_t mask = 1; mask < (1u << spaces.size()); ++mask) {
    std::string variant(key);
    for (std::size_t j = 0; j < spaces.size(); ++j)
      if (mask >> j & 1u) variant[spaces[j]] = '-';
    const auto found = keys.find(variant);
    if (found && *found == id) return true;
  }
  return false;
}

// The concept `name` binds to and that concept's name as the library writes it.
std::optional<std::pair<std::uint32_t, std::string>> bind_name(const NameBinding& binding, const std::string& name) {
  const auto key = normal_form(name);
  if (!key || key->empty()) return std::nullopt;
  const auto id = binding.keys->find(*key);
  std::string own;
  if (!id || !binding.names->name(*id, &own)) return std::nullopt;
  if (*key != own) {  // not the own name as written: another case or number, an alias, a spaced form
    const auto own_key = normal_form(own);
    if (!own_key || (*key != *own_key && spaced_form(*binding.keys, *key, *id))) return std::nullopt;
  }
  return std::make_pair(*id, std::move(own));
}

}  // namespace

std::optional<RecallPlan> bind(const RecallPlan& generic, const v1::RecallRequest& request,
                               const NameBinding& binding) {
  RecallPlan plan = generic;
  plan.request.required.clear();
  plan.request.forbidden.clear();
  plan.concept_names.clear();
  std::vector<std::string> forbidden_names;
  std::vector<std::uint32_t> forbidden;
  for (const auto* names : {&request.required(), &request.forbidden()}) {
    const bool required = names == &request.required();
    for (const auto& name : *names) {
      auto bound = bind_name(binding, name);
      if (!bound) return std::nullopt;
      auto& ids = required ? plan.request.required : forbidden;
      if (std::find(ids.begin(), ids.end(), bound->first) != ids.end()) continue;  // a repeat
      ids.push_back(bound->first);
      (required ? plan.concept_names : forbidden_names).push_back(std::move(bound->second));
    }
  }
  auto* parse = plan.response_template.mutable_parse();
  for (const auto& name : plan.concept_names) parse->add_required(name);
  for (std::size_t i = 0; i < forbidden.size(); ++i) {
    const auto& req = plan.request.required;
    if (std::find(req.begin(), req.end(), forbidden[i]) != req.end()) continue;  // required wins
    plan.request.forbidden.push_back(forbidden[i]);
    plan.concept_names.push_back(forbidden_names[i]);
    parse->add_forbidden(forbidden_names[i]);
  }
  if (generic.state_concepts.empty() && !generic.text) {
    plan.concept_names.clear();  // the library reports no states without concepts (a text plan's
                                 // hits always cite the query's concepts)
  } else {
    plan.state_concepts = plan.request.required;
    plan.state_concepts.insert(plan.state_concepts.end(), plan.request.forbidden.begin(), plan.request.forbidden.end());
    plan.required_count = plan.request.required.size();
  }
  return plan;
}

namespace {

// The context's budget as the library checks it (text::kMinContextBudget ...); 0 is the
// default. Nothing when the library would refuse it.
std::optional<std::size_t> context_budget(const v1::RecallRequest& request) {
  const std::int64_t budget = request.context_budget_chars() ? request.context_budget_chars()
                                                             : static_cast<std::int64_t>(text::kDefaultContextBudget);
  if (budget < static_cast<std::int64_t>(text::kMinContextBudget) ||
      budget > static_cast<std::int64_t>(text::kMaxContextBudget)) {
    return std::nullopt;
  }
  return static_cast<std::size_t>(budget);
}

// The context entry of an explained hit (recall.py render_context's fields); false when a
// concept it cites is not in the names table yet.
bool context_entry(const ConceptNames& names, const std::string& status, const std::string& id,
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

// A recency plan's search (recency.hpp, as recency.py runs it for the library): the core's
// recency entry asks `search` for its top c candidates until the top k is proven, reading their
// stamps (updated_ms, else created_ms) from the records the core holds. The result is the ranked
// rows as one search's (slots, tiers, scores) with the first search's tier counts; `reason` is
// what mode_reason says of it.
SearchResult recency_search(const RecallPlan& plan, SearchRequest search, std::uint64_t generation,
                            std::string* reason) {
  std::unordered_map<std::string, std::int64_t> slot_of;  // each candidate's slot in the last search
  const recency::RunSearch run = [&](std::size_t c) {
    search.k = c;
    const SearchResult result = plan.index->search(search);
    std::vector<std::string> ids;
    plan.ids->resolve(result.slots.data(), result.slots.size(), &ids);
    if (plan.ids->generation() != generation) throw Renumbered{};
    recency::Searched found;
    found.tier_counts = result.tier_counts;
    slot_of.clear();
    for (std::size_t i = 0; i < ids.size(); ++i) {
      if (ids[i].empty()) continue;  // forgotten since the search: the library drops it too
      slot_of.emplace(ids[i], result.slots[i]);
      found.hits.push_back({std::move(ids[i]), result.tiers[i], result.scores[i]});
    }
    return found;
  };
  const recency::ReadStamps read = [&](const std::vector<std::string>& ids) {
    std::vector<std::int64_t> slots;
    for (const auto& id : ids) slots.push_back(slot_of.at(id));
    std::vector<std::string> bytes;
    if (!plan.records->get(slots.data(), slots.size(), &bytes)) throw Declined{};
    std::vector<std::optional<std::int64_t>> stamps;
    storage::v1::ItemRecord record;
    for (std::size_t i = 0; i < ids.size(); ++i) {
      // A record filled under a compaction's renumbering could name another item: the id says.
      if (!record.ParseFromString(bytes[i]) || record.id() != ids[i]) throw Declined{};
      stamps.emplace_back(record.updated_ms() ? record.updated_ms() : record.created_ms());
    }
    return stamps;
  };
  const recency::Ranked ranked =
      recency::rank(plan.recency_k, search.mode == SearchMode::kHard, plan.recency, now_ms(), kMaxTopK, run, read);
  SearchResult rows;
  rows.tier_counts = ranked.tier_counts;
  for (const auto& row : ranked.rows) {
    rows.slots.push_back(slot_of.at(row.id));
    rows.tiers.push_back(static_cast<std::int8_t>(row.tier));
    rows.scores.push_back(static_cast<float>(row.score));
  }
  *reason = recency::describe(ranked, plan.recency);
  return rows;
}

// One search's hits as the front reads them: the core's result, the hits' ids ("" for one
// forgotten since) and, explained, their records or, not, the query concepts' states; `reason`
// is a recency search's description.
struct Found {
  SearchResult result;
  std::vector<std::string> ids, records;
  std::vector<std::int8_t> states;
  std::string reason;
};

// `search` run in one slot generation (a compaction's renumbering runs it again), filtered by
// the call's metadata `pairs`, ranked by the recency term with `recency`; nothing when the call
// goes to the library (a filter no item passes, a record the core does not hold, an error).
std::optional<Found> find(const RecallPlan& plan, SearchRequest search, const std::vector<MetadataPair>& pairs,
                          bool recency) {
  for (int attempt = 0; attempt < kRenumberedRetries; ++attempt) {
    const auto generation = plan.ids->generation();
    if (generation % 2) continue;
    Found found;
    auto& result = found.result;
    try {
      if (!pairs.empty()) {  // the slots of this generation, like the ids resolved below
        search.allow = std::make_shared<const std::vector<std::int64_t>>(plan.metadata->matching(pairs));
        if (search.allow->empty()) return std::nullopt;
      }
      result = recency ? recency_search(plan, search, generation, &found.reason) : plan.index->search(search);
      if (plan.explain) {
        if (!plan.records->get(result.slots.data(), result.slots.size(), &found.records)) return std::nullopt;
      } else if (!plan.state_concepts.empty() && !result.slots.empty()) {
        found.states = plan.index->concept_states(result.slots.data(), result.slots.size(), plan.state_concepts);
      }
    } catch (const Renumbered&) {
      continue;
    } catch (const Declined&) {
      return std::nullopt;
    } catch (const Error&) {
      return std::nullopt;  // the library states the error in its own words
    }
    plan.ids->resolve(result.slots.data(), result.slots.size(), &found.ids);
    if (plan.ids->generation() != generation) continue;
    return found;
  }
  return std::nullopt;
}

// The hits `shown` (positions in `found`, in rank order) written into `hits` as the library
// writes them (explained from their records or by their states), with their context entries
// when `entries` is given; false when a record does not match its id or cites a concept the
// names table does not hold yet.
bool write_hits(const RecallPlan& plan, Found& found, const std::vector<std::size_t>& shown,
                std::vector<text::ContextEntry>* entries, Hits* hits) {
  const SearchResult& result = found.result;
  const std::size_t concepts = plan.state_concepts.size();
  std::uint32_t rank = 0;
  storage::v1::ItemRecord record;
  for (const std::size_t i : shown) {
    if (plan.explain) {
      // A record filled under a compaction's renumbering could name another item: the id says.
      if (!record.ParseFromString(found.records[i]) || record.id() != found.ids[i]) return false;
      if (entries != nullptr) {
        entries->emplace_back();
        const std::string status = kStatus[static_cast<std::size_t>(result.tiers[i] + 1)];
        const auto& names = plan.text ? plan.text->names : plan.context_names;
        if (!names || !context_entry(*names, status, found.ids[i], record, &entries->back())) return false;
      }
      add_explained_hit(plan, ++rank, std::move(found.ids[i]), result.tiers[i], result.scores[i], record, hits);
    } else {
      add_hit(plan, ++rank, std::move(found.ids[i]), result.tiers[i], result.scores[i],
              found.states.empty() ? nullptr : found.states.data() + i * concepts, hits);
    }
  }
  return true;
}

// `search` (the plan's, with this call's vectors and concepts) as a search a mode rule asks for
// (mode_rules.hpp): its mode, k and conflicts, ranked by (tier, s_sem) alone.
SearchRequest rule_request(const SearchRequest& search, const modes::RuleSearch& wanted) {
  SearchRequest request = search;
  request.mode = wanted.mode;
  request.k = wanted.k;
  request.exclude_conflicts = wanted.exclude_conflicts;
  request.present_level = request.absent_level = 0;
  request.present_weight = request.absent_weight = 0.0f;
  return request;
}

// Adaptive's choice for this call (mode_rules.hpp, as recall.py makes it) from searches of the
// index with the call's search, filters and uncertain words; nothing when the call goes to the
// library (a filter no item passes, a search the core refuses, slots renumbered throughout).
std::optional<modes::AdaptiveChoice> choose_adaptive(const RecallPlan& plan, const SearchRequest& search,
                                                     const std::vector<MetadataPair>& pairs,
                                                     const std::vector<std::string>& unknown,
                                                     const std::vector<std::string>& mapped) {
  // The rule's searches need tiers and similarities only; each allow-list is made in the slot
  // generation its search ran in.
  const modes::RunRuleSearch run = [&](const modes::RuleSearch& rule) {
    SearchRequest wanted = rule_request(search, rule);
    for (int attempt = 0; attempt < kRenumberedRetries; ++attempt) {
      const auto generation = plan.ids->generation();
      if (generation % 2) continue;
      SearchResult result;
      try {
        if (!pairs.empty()) {
          wanted.allow = std::make_shared<const std::vector<std::int64_t>>(plan.metadata->matching(pairs));
          if (wanted.allow->empty()) throw Declined{};
        }
        result = plan.index->search(wanted);
      } catch (const Error&) {
        throw Declined{};
      }
      if (plan.ids->generation() != generation) continue;
      std::vector<std::pair<int, double>> hits;
      for (std::size_t i = 0; i < result.slots.size(); ++i) hits.emplace_back(result.tiers[i], result.scores[i]);
      return hits;
    }
    throw Declined{};
  };
  const bool constrained = !search.required.empty() || !search.forbidden.empty();
  try {
    return modes::choose_adaptive({unknown, mapped, constrained, !search.vectors.empty()}, search.k,
                                  search.exclude_conflicts, run);
  } catch (const Declined&) {
    return std::nullopt;
  }
}

// The search of `search` (the plan's core request with this call's vectors and concepts) and
// the response from it; `context` (text plans with include_context) also renders the context.
// With suppressed_k (a mode other than off), the items plain similarity would have shown that
// the logic kept out, by the core's rule (mode_rules.hpp suppressed_search and suppressed), as
// recall.py lists them.
// A plan for mode adaptive runs `search` in the mode its choice for the call names, `unknown` (a
// text's words that bound to no concept) and `mapped` (those a closed vocabulary mapped) making
// the constraints uncertain.
bool answer_search(const RecallPlan& plan, SearchRequest search, const v1::RecallRequest& request,
                   const std::vector<std::string>* context, std::size_t budget, v1::RecallResponse* response,
                   const std::vector<std::string>& unknown = {}, const std::vector<std::string>& mapped = {}) {
  if (request.metadata_equals_size() > 0 && !plan.metadata) return false;
  const std::vector<MetadataPair> pairs(request.metadata_equals().begin(), request.metadata_equals().end());
  std::optional<modes::AdaptiveChoice> adaptive;
  if (plan.adaptive) {
    if (!(adaptive = choose_adaptive(plan, search, pairs, unknown, mapped))) return false;
    search.mode = adaptive->hard ? SearchMode::kHard : SearchMode::kSoft;
  }
  SearchRequest baseline = search;
  auto found = find(plan, std::move(search), pairs, plan.recency_k > 0);
  if (!found) return false;
  const auto& tier_counts = found->result.tier_counts;
  if (!pairs.empty() && tier_counts[0] + tier_counts[1] + tier_counts[2] == 0) return false;

  response->MergeFrom(plan.response_template);
  if (plan.recency_k > 0) response->set_mode_reason(plan.recency_reason_before + found->reason);
  if (adaptive) {
    response->set_mode_used(adaptive->hard ? v1::RECALL_MODE_HARD : v1::RECALL_MODE_SOFT);
    response->set_mode_reason(std::move(adaptive->reason));
  }
  auto* tiers = response->mutable_tier_counts();
  tiers->set_conflict(tier_counts[0]);
  tiers->set_neutral(tier_counts[1]);
  tiers->set_entailed(tier_counts[2]);
  std::vector<std::size_t> shown;
  for (std::size_t i = 0; i < found->ids.size(); ++i)
    if (!found->ids[i].empty()) shown.push_back(i);  // forgotten since the search: the library drops it too
  std::vector<text::ContextEntry> entries;
  if (!write_hits(plan, *found, shown, context != nullptr ? &entries : nullptr, response->mutable_hits())) return false;
  if (context != nullptr) response->set_context(text::fact_check_context(entries, budget, *context));

  const std::size_t suppressed_k = request.suppressed_k();
  if (suppressed_k == 0 || baseline.mode == SearchMode::kOff) return true;
  // (a recency plan's search asked for the first candidates: the Recall's k is the plan's)
  const std::size_t k = plan.recency_k > 0 ? plan.recency_k : baseline.k;
  auto plain = find(plan, rule_request(baseline, modes::suppressed_search(k)), pairs, false);
  if (!plain) return false;
  std::vector<std::string> kept;
  for (const auto& hit : response->hits()) kept.push_back(hit.id());
  // (a forgotten item's "" id is dropped before the rule counts it, as the library drops it)
  std::vector<std::size_t> live;
  std::vector<std::string> ids;
  std::vector<std::int8_t> plain_tiers;
  for (std::size_t i = 0; i < plain->ids.size(); ++i) {
    if (plain->ids[i].empty()) continue;
    live.push_back(i);
    ids.push_back(plain->ids[i]);
    plain_tiers.push_back(plain->result.tiers[i]);
  }
  shown.clear();
  for (const std::size_t j : modes::suppressed(kept, ids, plain_tiers, suppressed_k)) shown.push_back(live[j]);
  return write_hits(plan, *plain, shown, nullptr, response->mutable_suppressed());
}

// A closed vocabulary's word mapped to a concept (the response's parse.mapped).
struct MappedWord {
  std::string phrase;
  std::string concept_name;
  float similarity = 0.0f;
};

// A concept's name as the library writes it; the call goes to the library when the names table
// does not hold it yet.
answer::NamedConcept named(const TextPath& path, std::uint32_t id) {
  answer::NamedConcept c{id, {}};
  if (!path.names->name(id, &c.name)) throw Declined{};
  return c;
}

// `text` embedded by the namespace's compiled tokenizer and encoder into `values`; false when
// the tokenizer declines the text or the encoder refuses it (the library says why).
bool embed(const TextPath& path, const std::string& text, std::vector<float>* values) {
  std::vector<std::int32_t> tokens;
  if (!path.tokenizer->encode(text, &tokens)) return false;
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
// when a name is not in the names table yet, a word cannot be embedded, or the plan's concept
// vectors are not the vocabulary's whole when a word needs mapping (concepts appended since).
bool question_of(const TextPath& path, const text::ParsedText& parsed, answer::ParsedQuestion* question,
                 std::vector<MappedWord>* mapped) {
  const text::MapWords map = [&](const std::vector<std::string>& words) {
    std::vector<std::optional<text::MappedConcept>> none(words.size());
    if (path.open_vocabulary) return none;
    if (!path.concept_vectors || path.names->size() != path.concept_count) throw Declined{};
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
// concept reported as unknown (or, with explicit names, the concepts bind() bound), and the
// text's affirmative part embedded for similarity.
bool answer_text(const RecallPlan& generic, const v1::RecallRequest& request, v1::RecallResponse* response) {
  const TextPath& path = *generic.text;
  std::optional<std::size_t> budget;
  if (request.include_context() && !(budget = context_budget(request))) return false;
  const std::string& query = request.text();
  const text::ParsedText parsed = text::parse(query, *path.keys, *path.triggers);
  RecallPlan plan = generic;
  std::vector<std::string> unknown, mapped_words;  // (adaptive: they make the constraints uncertain)
  // With explicit names (bound by bind()) the text only gives the similarity (its affirmative
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

  // Mode off is plain similarity: the whole text, as recall.py embeds it.
  const std::string affirmative =
      plan.request.mode == SearchMode::kOff ? std::string() : text::affirmative_part(query, parsed.negated_spans);
  if (!embed(path, affirmative.empty() ? query : affirmative, &plan.request.vectors.front().values)) return false;
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
bool answer_question_text(const RecallPlan& plan, const v1::RecallRequest& request, v1::RecallResponse* response) {
  const TextPath& path = *plan.text;
  std::optional<std::size_t> budget;
  if (request.include_context() && !(budget = context_budget(request))) return false;
  if (!plan.records) return false;
  const std::string& query = request.text();
  answer::ParsedQuestion question;
  std::vector<MappedWord> mapped;
  if (request.required_size() > 0 || request.forbidden_size() > 0) {
    // Explicit names (bound by bind()) are the question's concepts; the text is what it asks.
    for (std::size_t i = 0; i < plan.state_concepts.size(); ++i) {
      auto& side = i < plan.required_count ? question.required : question.forbidden;
      side.push_back({plan.state_concepts[i], plan.concept_names[i]});
    }
  } else if (!question_of(path, text::parse(query, *path.keys, *path.triggers), &question, &mapped)) {
    return false;
  }

  SearchRequest base = plan.request;  // the whole question embedded (answer_recall.py)
  if (!embed(path, query, &base.vectors.front().values)) return false;

  if (request.metadata_equals_size() > 0 && !plan.metadata) return false;
  const std::vector<MetadataPair> pairs(request.metadata_equals().begin(), request.metadata_equals().end());
  // The metadata filter's slots, made once per slot generation (every search of a call shares them).
  std::optional<std::vector<std::int64_t>> filtered;
  std::uint64_t filtered_generation = 1;  // odd: none made yet
  std::unordered_map<std::string, std::int64_t> slot_of;  // each candidate's slot when it was found
  const answer::RunSearch run = [&](const answer::CandidateSearch& wanted) {
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
  std::vector<storage::v1::ItemRecord> records;
  const answer::ReadNotes read = [&](const std::vector<std::string>& ids) {
    std::vector<std::int64_t> slots;
    for (const auto& id : ids) slots.push_back(slot_of.at(id));
    std::vector<std::string> bytes;
    if (!plan.records->get(slots.data(), slots.size(), &bytes)) throw Declined{};
    records.resize(ids.size());
    std::vector<answer::Note> notes(ids.size());
    std::string name;
    for (std::size_t i = 0; i < ids.size(); ++i) {
      // A record filled under a compaction's renumbering could name another item: the id says.
      if (!records[i].ParseFromString(bytes[i]) || records[i].id() != ids[i]) throw Declined{};
      notes[i].found = true;
      notes[i].created_ms = records[i].created_ms();
      for (const auto& ev : records[i].evidence()) {
        const bool has = ev.state() == common::v1::CONCEPT_STATE_HAS;
        if (!has && ev.state() != common::v1::CONCEPT_STATE_NOT_HAS) continue;
        if (!path.names->name(ev.concept_id(), &name)) throw Declined{};
        notes[i].stated.emplace_back(name, has ? 1 : -1);
      }
    }
    return notes;
  };
  answer::Recalled recalled;
  try {
    recalled = answer::answer_recall(query, question, plan.answer_k, run, read);
  } catch (const Declined&) {
    return false;
  }

  response->MergeFrom(plan.response_template);
  auto* tiers = response->mutable_tier_counts();
  tiers->set_conflict(recalled.tier_counts[0]);
  tiers->set_neutral(recalled.tier_counts[1]);
  tiers->set_entailed(recalled.tier_counts[2]);
  auto* parse = response->mutable_parse();
  parse->clear_required();  // explicit names: bind() named them already
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
      if (!context_entry(*path.names, shown.answer.empty() ? label : shown.answer, shown.id, record, &entries.back()))
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

bool answer(const RecallPlan& plan, const v1::RecallRequest& request, v1::RecallResponse* response) {
  if (plan.answer_k > 0) return answer_question_text(plan, request, response);
  if (plan.text) return answer_text(plan, request, response);
  SearchRequest search = plan.request;
  if (!fill_vectors(plan, request, &search)) return false;
  std::optional<std::size_t> budget;
  if (request.include_context() && (!plan.context_names || !(budget = context_budget(request)))) return false;
  return answer_search(plan, std::move(search), request, budget ? &plan.concept_names : nullptr, budget.value_or(0),
                       response);
}

}  // namespace polarmem::front
