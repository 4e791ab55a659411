#include "namespace_view.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <unordered_map>

#include "polarmem/name_suggestions.hpp"

namespace polarmem::front {

namespace {

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

// The concept `name` binds to and that concept's name as the library writes it: any case or
// number of the concept's own name, or an alias. Nothing when it binds to none or is only a
// hyphenated concept's spaced form (which texts find, the library's lookup does not: `*unknown`
// set, the library refuses the name or skips it with suggestions), or has no letter or digit (the
// library refuses it).
std::optional<std::pair<std::uint32_t, std::string>> bind_name(const NameBinding& binding, const std::string& name,
                                                               bool* unknown) {
  *unknown = false;
  const auto key = text::normalise_name(name);
  if (key.empty()) return std::nullopt;
  const auto id = binding.keys->find(key);
  if (!id) {
    *unknown = true;  // no key, and so no lookup (whose keys the compiled ones hold), finds it
    return std::nullopt;
  }
  std::string own;
  if (!binding.names->name(*id, &own)) return std::nullopt;
  // not the own name as written: another case or number, an alias, or a spaced form (which the
  // library's lookup does not find: unknown there, skipped or refused as any unknown name)
  if (key != own && key != text::normalise_name(own) && spaced_form(*binding.keys, key, *id)) {
    *unknown = true;
    return std::nullopt;
  }
  return std::make_pair(*id, std::move(own));
}

// The known names closest to each of `unknown` (names no key finds), as the library's
// closest_names chooses them (domain/suggest.py: the same core choice over the same keys), into
// the parse's unknown_concepts. Every concept name has a key (the library refuses one without a
// letter or digit), so the library's fallback for keyless names never applies.
void suggest_names(const ConceptNames& names, const std::vector<std::string>& unknown, v1::QueryParse* parse) {
  std::vector<std::string> keys, candidates;
  std::unordered_map<std::string, std::size_t> seen;
  for (auto& candidate : names.all()) {
    auto key = text::normalise_name(candidate);
    if (seen.emplace(key, keys.size()).second) {
      keys.push_back(std::move(key));
      candidates.push_back(std::move(candidate));
    }
  }
  for (const auto& name : unknown) {
    auto* skipped = parse->add_unknown_concepts();
    skipped->set_name(name);
    for (const auto position : suggest::closest(text::normalise_name(name), keys))
      skipped->add_did_you_mean(candidates[position]);
  }
}

// The request's explicit names bound into the plan's search, the concepts its hits cite and the
// response's parse, as recall.py plan_query binds them: repeats count once, a forbidden concept
// also required is required, and with `skip_unknown` (allow_unknown_concepts in a closed
// vocabulary, or an open one that has learned what it could) a name the vocabulary lacks is
// skipped and reported with the closest known names. False when the library must bind them
// (`*unknown_name` set when one of them is a name the vocabulary lacks).
bool bind_names(const NameBinding& binding, const v1::RecallRequest& request, bool skip_unknown, RecallPlan* plan,
                bool* unknown_name) {
  auto& search = plan->request;
  std::vector<std::string> forbidden_names, unknown;
  std::vector<std::uint32_t> forbidden;
  for (const auto* names : {&request.required(), &request.forbidden()}) {
    const bool required = names == &request.required();
    for (const auto& name : *names) {
      bool not_known = false;
      auto bound = bind_name(binding, name, &not_known);
      if (!bound) {
        *unknown_name = not_known;
        if (!not_known || !skip_unknown) return false;  // the library refuses (or learns) it
        if (std::find(unknown.begin(), unknown.end(), name) == unknown.end()) unknown.push_back(name);
        continue;
      }
      auto& ids = required ? search.required : forbidden;
      if (std::find(ids.begin(), ids.end(), bound->first) != ids.end()) continue;  // a repeat
      ids.push_back(bound->first);
      (required ? plan->concept_names : forbidden_names).push_back(std::move(bound->second));
    }
  }
  auto* parse = plan->response_template.mutable_parse();
  if (!unknown.empty()) suggest_names(*binding.names, unknown, parse);
  for (const auto& name : plan->concept_names) parse->add_required(name);
  for (std::size_t i = 0; i < forbidden.size(); ++i) {
    if (std::find(search.required.begin(), search.required.end(), forbidden[i]) != search.required.end()) continue;
    search.forbidden.push_back(forbidden[i]);
    plan->concept_names.push_back(forbidden_names[i]);
    parse->add_forbidden(forbidden_names[i]);
  }
  plan->state_concepts = search.required;
  plan->state_concepts.insert(plan->state_concepts.end(), search.forbidden.begin(), search.forbidden.end());
  plan->required_count = search.required.size();
  return true;
}

// The query vectors as the library's index request orders them (the namespace's space order),
// each weighted by `weights` (1 where none is given). With `text_fills_sem` (a text query) the
// `sem` term is the text's embedding unless the request gives `sem` itself, as recall.py embeds
// the text only then (plan->text_term says which term answer() fills). False for a space the
// namespace lacks or a vector of the wrong length: the library says why. (A
// multi-vector space takes one query vector, scored by max-sim in the index, as in the library.)
bool query_terms(const std::vector<SpaceConfig>& spaces, const v1::RecallRequest& request, bool text_fills_sem,
                 RecallPlan* plan) {
  std::size_t found = 0;
  for (const auto& space : spaces) {
    const auto given = request.vectors().find(space.name);
    const auto weight = request.weights().find(space.name);
    const float weighted = weight == request.weights().end() ? 1.0f : weight->second;
    if (given == request.vectors().end()) {
      if (text_fills_sem && space.name == "sem") {
        plan->text_term = plan->request.vectors.size();
        plan->request.vectors.push_back({space.name, {}, weighted});
      }
      continue;
    }
    ++found;
    const auto& values = given->second.values();
    // (a query is one vector per space whatever its rows say, as the library reshapes it)
    if (static_cast<std::size_t>(values.size()) != space.dim) return false;
    plan->request.vectors.push_back({space.name, {values.begin(), values.end()}, weighted});
  }
  return found == static_cast<std::size_t>(request.vectors_size());
}

bool metadata_within(const RequestLimits& limits, const v1::RecallRequest& request) {
  if (static_cast<std::size_t>(request.metadata_equals_size()) > limits.max_metadata_keys) return false;
  std::size_t total = 0;
  for (const auto& [key, value] : request.metadata_equals()) {
    if (key.size() > limits.max_metadata_key_bytes || value.size() > limits.max_metadata_value_bytes) return false;
    total += key.size() + value.size();
  }
  return total <= limits.max_metadata_total_bytes;
}

// Every bound and combination domain/query.py recall_query checks that the plan does not
// check itself; false: the library refuses the request in its own words.
bool fields_within(const NamespaceView& view, const v1::RecallRequest& request) {
  const auto& limits = view.limits;
  if (request.has_top_k() && (request.top_k() < 1 || request.top_k() > limits.max_top_k)) return false;
  if (request.suppressed_k() > limits.max_top_k) return false;
  if (request.has_ef_search() && request.ef_search() > limits.max_ef_search) return false;
  if (request.approximate() && !view.approximate) return false;  // (FailedPrecondition)
  if (request.has_soft_lambda() &&
      !(std::isfinite(request.soft_lambda()) && std::abs(request.soft_lambda()) <= limits.max_soft_lambda))
    return false;
  for (const auto& [space, weight] : request.weights())
    if (!std::isfinite(weight)) return false;
  for (const auto kind : request.kinds())
    if (kind != common::v1::ITEM_KIND_VISUAL && kind != common::v1::ITEM_KIND_TEXT) return false;
  if (static_cast<std::size_t>(request.required_size()) > limits.max_query_concepts ||
      static_cast<std::size_t>(request.forbidden_size()) > limits.max_query_concepts)
    return false;
  const auto consistency = request.consistency();
  if (consistency != v1::READ_CONSISTENCY_UNSPECIFIED && consistency != v1::READ_CONSISTENCY_BOUNDED &&
      consistency != v1::READ_CONSISTENCY_STRONG)
    return false;
  return metadata_within(limits, request);
}

}  // namespace

std::optional<RecallPlan> plan_recall(const NamespaceView& view, const v1::RecallRequest& request, bool names_learned,
                                      bool* names_to_learn) {
  // Full items and consistency tokens (a Milvus server's) are the library's.
  if (request.include_items() || !request.consistency_token().empty()) return std::nullopt;
  if (!fields_within(view, request)) return std::nullopt;

  RecallPlan plan;
  SearchRequest& search = plan.request;
  const bool runs_rule = request.mode() == v1::RECALL_MODE_UNSPECIFIED;
  const bool answer_mode = request.mode() == v1::RECALL_MODE_ANSWER;
  switch (request.mode()) {
    case v1::RECALL_MODE_UNSPECIFIED: search.mode = view.rule_mode; break;
    case v1::RECALL_MODE_HARD: search.mode = SearchMode::kHard; break;
    case v1::RECALL_MODE_SOFT: search.mode = SearchMode::kSoft; break;
    case v1::RECALL_MODE_OFF: search.mode = SearchMode::kOff; break;
    case v1::RECALL_MODE_STRICT: search.mode = SearchMode::kStrict; break;
    case v1::RECALL_MODE_ADAPTIVE:  // hard or soft, chosen per call by the run
      search.mode = SearchMode::kHard;
      plan.adaptive = true;
      break;
    case v1::RECALL_MODE_ANSWER: search.mode = SearchMode::kOff; break;
    default: return std::nullopt;
  }
  // The library's rules for this mode and rank_by_confidence (ModeRule): a combination it refuses
  // or does not know goes to it.
  const int rank_by_confidence = request.has_rank_by_confidence() ? (request.rank_by_confidence() ? 2 : 1) : 0;
  const auto rule = std::find_if(view.mode_rules.begin(), view.mode_rules.end(), [&](const ModeRule& r) {
    return r.mode == request.mode() && r.rank_by_confidence == rank_by_confidence;
  });
  if (rule == view.mode_rules.end() || !rule->accepted) return std::nullopt;
  const Ranking& ranking = rule->ranking;

  // The recency term (query.py check_recency): where the mode rule allows it, exact.
  const std::size_t k = request.has_top_k() ? request.top_k() : view.limits.default_top_k;
  // (a backend that searches itself reads its own records)
  const bool has_records = view.records != nullptr || view.index == nullptr;
  if (request.has_recency_half_life_s()) {
    const double half_life = request.recency_half_life_s();
    const double weight = request.has_recency_weight() ? request.recency_weight() : view.limits.default_recency_weight;
    if (!(std::isfinite(half_life) && half_life > 0.0) || !(std::isfinite(weight) && weight >= 0.0 && weight <= 1.0) ||
        !rule->recency || request.approximate() || !has_records)
      return std::nullopt;
    plan.recency_k = k;
    plan.recency = {half_life, weight};
  } else if (request.has_recency_weight()) {
    return std::nullopt;
  }

  // What the query gives: a text (parsed, bound and embedded per call by the namespace's text
  // path), query vectors, or explicit concepts alone (every similarity 0: tiers, then slots).
  const bool explicit_names = request.required_size() > 0 || request.forbidden_size() > 0;
  plan.response_template.mutable_parse()->set_explicit_(explicit_names);
  if (!request.text().empty()) {
    // the text gives the concepts (but for explicit names) and, unless `sem` is given or the
    // namespace has no encoder, the `sem` term
    if (!view.text || !query_terms(view.spaces, request, view.text->encoder != nullptr, &plan)) return std::nullopt;
    plan.text = view.text;
  } else if ((request.vectors_size() == 0 && !explicit_names) || !query_terms(view.spaces, request, false, &plan)) {
    return std::nullopt;
  }
  const bool skip_unknown = request.allow_unknown_concepts() && (!view.open_vocabulary || names_learned);
  bool unknown_name = false;
  if (explicit_names && !bind_names(view.binding, request, skip_unknown, &plan, &unknown_name)) {
    if (names_to_learn != nullptr) *names_to_learn = unknown_name && view.open_vocabulary && !names_learned;
    return std::nullopt;
  }
  // every name skipped as unknown and nothing else to rank by: the library says the query is empty
  // (a text's own concepts are known once it is parsed: answer() checks it then)
  const bool parsed_later = plan.text && !explicit_names;
  if (search.vectors.empty() && search.required.empty() && search.forbidden.empty() && !parsed_later)
    return std::nullopt;

  plan.index = view.index;
  plan.ids = view.ids;
  plan.metadata = view.metadata;
  plan.records = view.records;
  plan.context_names = view.binding.names;
  if (answer_mode) {  // the core's agent recall: its searches set mode, k and concepts, nothing else
    if (!has_records) return std::nullopt;
    plan.answer_k = k;
    plan.answer_rule = view.limits.agent_rule;
    plan.response_template.set_mode_used(v1::RECALL_MODE_ANSWER);
  } else {
    plan.explain = (request.has_explain() ? request.explain() : true) || request.include_context();
    if (plan.explain && !has_records) return std::nullopt;
    search.k = k;
    search.soft_lambda = request.has_soft_lambda() ? request.soft_lambda() : 1.0f;
    search.exclude_conflicts = request.exclude_conflicts();
    if (runs_rule) plan.rule_words = view.rule_words;
    if (ranking.used) {
      plan.confidence_words = ranking.words;
      search.present_level = ranking.present_level;
      search.absent_level = ranking.absent_level;
      search.present_weight = ranking.present_weight;
      search.absent_weight = ranking.absent_weight;
    }
  }
  for (const auto kind : request.kinds()) search.kind_mask |= static_cast<std::uint8_t>(kind);
  search.exact = !request.approximate();
  search.ef_search = request.has_ef_search() ? request.ef_search() : 0;
  return plan;
}

void NamespaceViews::set(const std::string& ns, NamespaceView view, std::shared_ptr<ConceptNames> names) {
  view.limits = limits_;
  auto held = std::make_shared<const NamespaceView>(std::move(view));
  std::lock_guard guard(mutex_);
  by_namespace_[ns] = {std::move(held), std::move(names)};
}

std::shared_ptr<const NamespaceView> NamespaceViews::find(const std::string& ns) const {
  std::lock_guard guard(mutex_);
  const auto found = by_namespace_.find(ns);
  return found == by_namespace_.end() ? nullptr : found->second.view;
}

RecallOutcome NamespaceViews::recall(const v1::RecallRequest& request, v1::RecallResponse* response, bool names_learned,
                                     const BackendCalls* backend) const {
  const auto view = find(request.namespace_());
  if (!view) return RecallOutcome::kNoView;
  if (!view->index && backend == nullptr) return RecallOutcome::kLibrary;  // (the front, a backend's view)
  bool names_to_learn = false;
  auto plan = plan_recall(*view, request, names_learned, &names_to_learn);
  if (plan) plan->backend = view->index ? nullptr : backend;
  if (plan && answer(std::move(*plan), request, response)) return RecallOutcome::kAnswered;
  response->Clear();
  return names_to_learn ? RecallOutcome::kNamesToLearn : RecallOutcome::kLibrary;
}

bool NamespaceViews::current(const std::string& ns, std::size_t concept_count) const {
  const auto view = find(ns);
  if (!view) return false;
  const auto& text = view->text;
  return !text || text->open_vocabulary || !text->encoder || text->concept_count == concept_count;
}

void NamespaceViews::append_names(const std::string& ns, std::size_t first, const std::vector<std::string>& names) {
  std::shared_ptr<ConceptNames> table;
  {
    std::lock_guard guard(mutex_);
    const auto found = by_namespace_.find(ns);
    if (found == by_namespace_.end()) return;
    table = found->second.names;
  }
  if (!table->append(first, names)) forget(ns);
}

void NamespaceViews::forget(const std::string& ns) {
  std::lock_guard guard(mutex_);
  by_namespace_.erase(ns);
}

std::size_t NamespaceViews::size() const {
  std::lock_guard guard(mutex_);
  return by_namespace_.size();
}

}  // namespace polarmem::front
