#include "namespace_view.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <unordered_map>

#include "polarmem/fact_check_context.hpp"
#include "polarmem/name_suggestions.hpp"
#include "polarmem/request_checks.hpp"
#include "polarmem/utf8.hpp"

namespace polarmem::front {

namespace {

// The concept `name` binds to, by the library's own lookup (any case or number of the concept's
// name, or an alias; not a hyphenated concept's spaced form, which texts find), and that
// concept's name as the library writes it; nothing when it binds to none.
std::optional<std::pair<std::uint32_t, std::string>> bind_name(const NameBinding& binding, const std::string& name) {
  const auto id = binding.vocabulary->lookup(name);
  std::string own;
  if (!id || !binding.vocabulary->name(*id, &own)) return std::nullopt;
  return std::make_pair(*id, std::move(own));
}

// The known names closest to each of `unknown` (names no key finds), as the library's
// closest_names chooses them (domain/suggest.py: the same core choice over the same keys), best
// first. Every concept name has a key (one without a letter or digit is refused), so the
// library's fallback for keyless names never applies.
std::vector<std::vector<std::string>> closest_names(const text::Vocabulary& names,
                                                    const std::vector<std::string>& unknown) {
  std::vector<std::string> keys, candidates;
  std::unordered_map<std::string, std::size_t> seen;
  for (auto& candidate : names.names()) {
    auto key = text::normalise_name(candidate);
    if (seen.emplace(key, keys.size()).second) {
      keys.push_back(std::move(key));
      candidates.push_back(std::move(candidate));
    }
  }
  std::vector<std::vector<std::string>> out;
  for (const auto& name : unknown) {
    auto& close = out.emplace_back();
    for (const auto position : suggest::closest(text::normalise_name(name), keys))
      close.push_back(candidates[position]);
  }
  return out;
}

// The request's explicit names bound into the plan's search, the concepts its hits cite and the
// response's parse, as recall.py plan_query bound them: repeats count once, a forbidden concept
// also required is required, and with `skip_unknown` (allow_unknown_concepts in a closed
// vocabulary, or an open one that has learned what it could) a name the vocabulary lacks is
// skipped and reported with the closest known names. A name without a letter or digit, or one
// the vocabulary lacks that is not skipped, is refused (`*refused`), unless an open vocabulary
// may learn it first: false with `*names_to_learn` set.
bool bind_names(const NameBinding& binding, const v1::RecallRequest& request, bool skip_unknown, bool learnable,
                RecallPlan* plan, bool* names_to_learn, Refusal* refused) {
  auto& search = plan->request;
  std::vector<std::string> forbidden_names, unknown;
  std::array<std::vector<std::string>, 2> missing;  // (required, forbidden) names not skipped
  std::vector<std::uint32_t> forbidden;
  for (const auto* names : {&request.required(), &request.forbidden()}) {
    const bool required = names == &request.required();
    const char* field = required ? "required" : "forbidden";
    for (const auto& name : *names) {
      if (auto problem = checks::concept_name_problem(field, name); !problem.empty())
        return refused->refuse(std::move(problem));
      auto bound = bind_name(binding, name);
      if (!bound) {
        auto& list = skip_unknown ? unknown : missing[required ? 0 : 1];
        if (std::find(list.begin(), list.end(), name) == list.end()) list.push_back(name);
        continue;
      }
      auto& ids = required ? search.required : forbidden;
      if (std::find(ids.begin(), ids.end(), bound->first) != ids.end()) continue;  // a repeat
      ids.push_back(bound->first);
      (required ? plan->concept_names : forbidden_names).push_back(std::move(bound->second));
    }
  }
  if (!missing[0].empty() || !missing[1].empty()) {
    if (learnable) {
      *names_to_learn = true;
      return false;
    }
    std::string why;
    for (std::size_t side = 0; side < 2; ++side) {
      if (missing[side].empty()) continue;
      const auto close = closest_names(*binding.vocabulary, missing[side]);
      if (!why.empty()) why += "; ";
      why += checks::unknown_concepts(side == 0 ? "required" : "forbidden", missing[side], close, request.namespace_());
    }
    return refused->refuse(std::move(why));
  }
  auto* parse = plan->response_template.mutable_parse();
  // skipped names, with suggestions (only then is the vocabulary read: not on every Recall)
  const auto close =
      unknown.empty() ? std::vector<std::vector<std::string>>{} : closest_names(*binding.vocabulary, unknown);
  for (std::size_t i = 0; i < unknown.size(); ++i) {
    auto* skipped = parse->add_unknown_concepts();
    skipped->set_name(unknown[i]);
    for (const auto& name : close[i]) skipped->add_did_you_mean(name);
  }
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

// The query vectors as the core's search orders them (the namespace's space order), each
// weighted by `weights` (1 where none is given). With `text_fills_sem` (a text query) the `sem`
// term is the text's embedding unless the request gives `sem` itself, as recall.py embedded the
// text only then (plan->text_term says which term answer() fills). What is wrong with a vector
// (a space the namespace lacks, the wrong length, a NaN, all zeros), or "". (A multi-vector
// space takes one query vector, scored by max-sim in the index.)
std::string query_terms(const std::vector<SpaceConfig>& spaces, const v1::RecallRequest& request, bool text_fills_sem,
                        RecallPlan* plan) {
  for (const auto& [space, given] : request.vectors()) {
    const bool known = std::any_of(spaces.begin(), spaces.end(), [&](const SpaceConfig& s) { return s.name == space; });
    if (!known) {
      std::vector<std::string> names;
      for (const auto& s : spaces) names.push_back(s.name);
      return checks::unknown_space("vectors", space, names);
    }
  }
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
    // (a query is one vector per space whatever its rows say)
    const auto& values = given->second.values();
    const auto count = static_cast<std::size_t>(values.size());
    auto problem = checks::vector_problem("vectors", space.name, space.dim, false, {count}, values.data(), count);
    if (!problem.empty()) return problem;
    plan->request.vectors.push_back({space.name, {values.begin(), values.end()}, weighted});
  }
  return "";
}

std::string metadata_problem(const v1::RecallRequest& request) {
  if (request.metadata_equals().empty()) return "";  // (most Recalls: no copy of nothing)
  const std::vector<std::pair<std::string, std::string>> pairs(request.metadata_equals().begin(),
                                                               request.metadata_equals().end());
  return checks::metadata_problem("metadata", pairs);
}

// What is wrong with a field the plan does not read itself (a bound or a combination), or "".
std::string fields_problem(const NamespaceView& view, const v1::RecallRequest& request) {
  const auto& limits = view.limits;
  const auto max_k = static_cast<std::int64_t>(limits.max_top_k);
  if (request.has_top_k()) {
    if (auto problem = checks::count_problem("top_k", request.top_k(), 1, max_k); !problem.empty()) return problem;
  }
  if (auto problem = checks::count_problem("suppressed_k", request.suppressed_k(), 0, max_k); !problem.empty())
    return problem;
  if (request.has_ef_search()) {
    auto problem =
        checks::count_problem("ef_search", request.ef_search(), 0, static_cast<std::int64_t>(limits.max_ef_search));
    if (!problem.empty()) return problem;
  }
  if (request.has_soft_lambda() &&
      !(std::isfinite(request.soft_lambda()) && std::abs(request.soft_lambda()) <= limits.max_soft_lambda)) {
    char bound[32];
    std::snprintf(bound, sizeof bound, "%g", limits.max_soft_lambda);
    return std::string("soft_lambda must be a finite number within \xC2\xB1") + bound + ", got " +
           checks::float_repr(request.soft_lambda());
  }
  for (const auto& [space, weight] : request.weights())
    if (!std::isfinite(weight))
      return "weights[" + checks::quoted(space) + "] must be a finite number, got " + checks::float_repr(weight);
  for (const auto kind : request.kinds())
    if (kind != common::v1::ITEM_KIND_VISUAL && kind != common::v1::ITEM_KIND_TEXT)
      return "kinds: use ITEM_KIND_VISUAL and/or ITEM_KIND_TEXT";
  // (checked here, before an open vocabulary learns the request's names; answer() renders it)
  if (request.include_context() && request.context_budget_chars() != 0) {
    auto problem = checks::count_problem("context_budget_chars", request.context_budget_chars(),
                                         static_cast<std::int64_t>(text::kMinContextBudget),
                                         static_cast<std::int64_t>(text::kMaxContextBudget));
    if (!problem.empty()) return problem;
  }
  for (const auto* names : {&request.required(), &request.forbidden()}) {
    if (static_cast<std::size_t>(names->size()) > limits.max_query_concepts)
      return std::string(names == &request.required() ? "required" : "forbidden") + ": at most " +
             std::to_string(limits.max_query_concepts) + " concepts, got " + std::to_string(names->size());
  }
  return metadata_problem(request);
}

// The recency term's refusal (query.py's words), or "": its half-life and weight, and whether
// the mode rule lets it join (`rule`'s words) an exact search.
std::string recency_problem(const v1::RecallRequest& request, const ModeRule& rule, double default_weight) {
  if (!request.has_recency_half_life_s()) {
    if (!request.has_recency_weight()) return "";
    return "recency_weight " + checks::float_repr(request.recency_weight()) +
           " needs recency_half_life_s (> 0 seconds) to turn the recency term on; set it, or drop recency_weight";
  }
  const double half_life = request.recency_half_life_s();
  const double weight = request.has_recency_weight() ? request.recency_weight() : default_weight;
  if (!(std::isfinite(half_life) && half_life > 0.0))
    return "recency_half_life_s must be a finite number of seconds > 0, got " + checks::float_repr(half_life) +
           "; leave it unset for no recency term";
  if (!(std::isfinite(weight) && weight >= 0.0 && weight <= 1.0))
    return "recency_weight must be a number in [0, 1], got " + checks::float_repr(weight);
  if (!rule.recency_refusal.empty()) return rule.recency_refusal;
  if (request.approximate())
    return "recency_half_life_s needs an exact search: drop approximate, or leave recency_half_life_s unset";
  return "";
}

std::nullopt_t refuse(Refusal* refused, std::string message, int code = Refusal::kInvalidArgument) {
  refused->refuse(std::move(message), code);
  return std::nullopt;
}

}  // namespace

std::optional<RecallPlan> plan_recall(const NamespaceView& view, const v1::RecallRequest& request, bool names_learned,
                                      bool* names_to_learn, Refusal* refused) {
  // Full items, consistency tokens (a Milvus server's) and their levels are the servicer's.
  if (request.include_items() || !request.consistency_token().empty()) return std::nullopt;
  const auto consistency = request.consistency();
  if (consistency != v1::READ_CONSISTENCY_UNSPECIFIED && consistency != v1::READ_CONSISTENCY_BOUNDED &&
      consistency != v1::READ_CONSISTENCY_STRONG)
    return std::nullopt;
  if (request.approximate() && !view.approximate) {
    return refuse(refused,
                  "approximate: namespace " + checks::quoted(request.namespace_()) +
                      " has no approximate index (config.ann is set at creation); drop approximate or create a "
                      "namespace with one",
                  Refusal::kFailedPrecondition);
  }
  if (auto problem = fields_problem(view, request); !problem.empty()) return refuse(refused, std::move(problem));

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
    default: return refuse(refused, "mode: unknown recall mode " + std::to_string(request.mode()));
  }
  // The library's rules for this mode and rank_by_confidence (ModeRule).
  const int rank_by_confidence = request.has_rank_by_confidence() ? (request.rank_by_confidence() ? 2 : 1) : 0;
  const auto rule = std::find_if(view.mode_rules.begin(), view.mode_rules.end(), [&](const ModeRule& r) {
    return r.mode == request.mode() && r.rank_by_confidence == rank_by_confidence;
  });
  if (rule == view.mode_rules.end()) return std::nullopt;  // (every combination is handed over)
  if (!rule->refusal.empty()) return refuse(refused, rule->refusal);
  const Ranking& ranking = rule->ranking;

  const std::size_t k = request.has_top_k() ? request.top_k() : view.limits.default_top_k;
  // (a backend that searches itself reads its own records)
  const bool has_records = view.records != nullptr || view.index == nullptr;
  if (auto problem = recency_problem(request, *rule, view.limits.default_recency_weight); !problem.empty())
    return refuse(refused, std::move(problem));
  if (request.has_recency_half_life_s()) {
    if (!has_records) return std::nullopt;  // (read back after a start-up: asked again)
    plan.recency_k = k;
    plan.recency = {request.recency_half_life_s(),
                    request.has_recency_weight() ? request.recency_weight() : view.limits.default_recency_weight};
  }

  // What the query gives: a text (parsed, bound and embedded per call by the namespace's text
  // path), query vectors, or explicit concepts alone (every similarity 0: tiers, then slots).
  const bool explicit_names = request.required_size() > 0 || request.forbidden_size() > 0;
  plan.response_template.mutable_parse()->set_explicit_(explicit_names);
  // A text that shows nothing (whitespace, zero-width characters) says nothing: embedded, it
  // ranked every note by its likeness to nothing, so `recall "   "` answered the whole namespace.
  const bool text = !utf8::shows_nothing(request.text());
  if (text && !view.text) {
    return refuse(refused,
                  "text: namespace " + checks::quoted(request.namespace_()) +
                      " embeds texts with an encoder the core does not run (a reference runtime, or a checkpoint "
                      "whose tokenizer has no compiled copy); give vectors or required / forbidden concepts",
                  Refusal::kFailedPrecondition);
  }
  if (auto problem = query_terms(view.spaces, request, text && view.text->encoder != nullptr, &plan); !problem.empty())
    return refuse(refused, std::move(problem));
  if (text) plan.text = view.text;
  const bool skip_unknown = request.allow_unknown_concepts() && (!view.open_vocabulary || names_learned);
  const bool learnable = view.open_vocabulary && !names_learned;
  if (explicit_names && !bind_names(view.binding, request, skip_unknown, learnable, &plan, names_to_learn, refused))
    return std::nullopt;
  // nothing to rank by (a text's own concepts are known once it is parsed: answer() checks it then)
  const bool parsed_later = plan.text && !explicit_names;
  if (search.vectors.empty() && search.required.empty() && search.forbidden.empty() && !parsed_later) {
    std::vector<std::string> skipped;
    for (const auto& name : plan.response_template.parse().unknown_concepts()) skipped.push_back(name.name());
    return refuse(refused, checks::empty_query(std::move(skipped)));
  }

  plan.index = view.index;
  plan.ids = view.ids;
  plan.metadata = view.metadata;
  plan.records = view.records;
  plan.context_names = view.binding.vocabulary;
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

void NamespaceViews::set(const std::string& ns, NamespaceView view) {
  view.limits = limits_;
  auto held = std::make_shared<const NamespaceView>(std::move(view));
  std::lock_guard guard(mutex_);
  by_namespace_[ns] = std::move(held);
}

std::shared_ptr<const NamespaceView> NamespaceViews::find(const std::string& ns) const {
  std::lock_guard guard(mutex_);
  const auto found = by_namespace_.find(ns);
  return found == by_namespace_.end() ? nullptr : found->second;
}

RecallOutcome NamespaceViews::recall(const v1::RecallRequest& request, v1::RecallResponse* response, Refusal* refused,
                                     bool names_learned, const BackendCalls* backend) const {
  const auto view = find(request.namespace_());
  if (!view) return RecallOutcome::kNoView;
  if (!view->index && backend == nullptr) return RecallOutcome::kLibrary;  // (the front, a backend's view)
  bool names_to_learn = false;
  auto plan = plan_recall(*view, request, names_learned, &names_to_learn, refused);
  if (plan) plan->backend = view->index ? nullptr : backend;
  if (plan && answer(std::move(*plan), request, response, refused)) return RecallOutcome::kAnswered;
  response->Clear();
  if (refused->code != 0) {
    refused->message = checks::cut_message(std::move(refused->message));
    return RecallOutcome::kRefused;
  }
  return names_to_learn ? RecallOutcome::kNamesToLearn : RecallOutcome::kLibrary;
}

bool NamespaceViews::current(const std::string& ns, std::size_t concept_count) const {
  const auto view = find(ns);
  if (!view) return false;
  const auto& text = view->text;
  return !text || text->open_vocabulary || !text->encoder || text->concept_count == concept_count;
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
