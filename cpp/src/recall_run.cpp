// One Recall's modes (recall_run.hpp).
#include "polarmem/recall_run.hpp"

#include <unordered_map>
#include <utility>

#include "polarmem/strict_merge.hpp"

namespace polarmem::recall {

namespace {

// Confidence ranks within tiers: the hard and strict searches only (soft and off have no tiers).
bool ranks(SearchMode mode) { return mode == SearchMode::kHard || mode == SearchMode::kStrict; }

// A search's rows with what the store read of them; rows of items forgotten since are dropped.
struct Read {
  std::vector<Row> rows;
  std::vector<Evidence> evidence;
  std::array<std::int64_t, 3> tier_counts{0, 0, 0};
};

Read read_rows(const Store& store, Found found) {
  std::vector<std::string> ids;
  ids.reserve(found.rows.size());
  for (const auto& row : found.rows) ids.push_back(row.id);
  std::vector<Evidence> evidence = ids.empty() ? std::vector<Evidence>{} : store.read(ids, false);
  Read out;
  out.tier_counts = found.tier_counts;
  for (std::size_t i = 0; i < found.rows.size() && i < evidence.size(); ++i) {
    if (!evidence[i].found) continue;
    out.rows.push_back(std::move(found.rows[i]));
    out.evidence.push_back(std::move(evidence[i]));
  }
  return out;
}

explain::Explanation explained(const Ask& ask, int tier, const Evidence& evidence) {
  std::vector<explain::Cited> cited(ask.concept_names.size());
  for (std::size_t j = 0; j < cited.size() && j < evidence.cited.size(); ++j) {
    const auto& c = evidence.cited[j];
    cited[j] = {c.state, c.scored, c.mean, c.source};
  }
  return explain::explain_hit(tier, ask.required_count, ask.concept_names, cited, evidence.tau, evidence.delta,
                              ask.explain);
}

std::vector<Hit> hits_of(const Ask& ask, const Read& read) {
  std::vector<Hit> hits;
  hits.reserve(read.rows.size());
  for (std::size_t i = 0; i < read.rows.size(); ++i) {
    const Row& row = read.rows[i];
    hits.push_back({row.id, row.tier, row.score, explained(ask, row.tier, read.evidence[i])});
  }
  return hits;
}

// Strict for a store that cannot search it in one call: its hard top k and, when an item there
// is not verified absent, its hard top k among verified items, merged by the core's strict merge
// (the merge the local index runs under its lock).
Read strict_by_merge(const Ask& ask, const Store& store) {
  std::unordered_map<std::string, std::int64_t> keys;  // the merge's key for each item
  const auto merge_rows = [&](const Read& read) {
    std::vector<strict::Row> rows;
    for (std::size_t i = 0; i < read.rows.size(); ++i) {
      const Row& row = read.rows[i];
      const auto key = keys.emplace(row.id, static_cast<std::int64_t>(keys.size())).first->second;
      const bool verified = explained(ask, row.tier, read.evidence[i]).absence_verified;
      rows.push_back({key, static_cast<std::int8_t>(row.tier), verified, row.flags, static_cast<float>(row.score),
                      static_cast<float>(row.rank_value)});
    }
    return rows;
  };
  Read hard = read_rows(store, store.search({SearchMode::kHard, ask.k, ask.exclude_conflicts, false, true}));
  std::vector<strict::Row> hard_rows = merge_rows(hard);
  const bool forbidden = ask.concept_names.size() > ask.required_count;
  if (!strict::needs_verified_search(forbidden, hard_rows)) return hard;
  Read verified = read_rows(store, store.search({SearchMode::kHard, ask.k, ask.exclude_conflicts, true, true}));
  const std::vector<strict::Row> verified_rows = merge_rows(verified);
  std::vector<std::pair<const Row*, const Evidence*>> by_key(keys.size(), {nullptr, nullptr});
  for (const Read* read : {&hard, &verified}) {
    for (std::size_t i = 0; i < read->rows.size(); ++i) {
      auto& slot = by_key[static_cast<std::size_t>(keys.at(read->rows[i].id))];
      if (slot.first == nullptr) slot = {&read->rows[i], &read->evidence[i]};
    }
  }
  Read merged;
  merged.tier_counts = hard.tier_counts;
  for (const auto& row : strict::merge(std::move(hard_rows), verified_rows, ask.k)) {
    const auto& [found, evidence] = by_key[static_cast<std::size_t>(row.key)];
    merged.rows.push_back(*found);
    merged.evidence.push_back(*evidence);
  }
  return merged;
}

// The exact top k by (tier, s_sem + weight x recency factor) (recency.hpp): the store's top c
// candidates, c growing until the top k is proven, with the candidates' stamps.
Read with_recency(const Ask& ask, const Store& store, SearchMode mode, std::string* words) {
  std::unordered_map<std::string, Evidence> seen;  // the last candidates read, by id
  const recency::RunSearch run = [&](std::size_t c) {
    Found found = store.search({mode, c, ask.exclude_conflicts, false, ranks(mode)});
    recency::Searched searched;
    searched.tier_counts = found.tier_counts;
    for (auto& row : found.rows) searched.hits.push_back({std::move(row.id), row.tier, row.score});
    return searched;
  };
  const recency::ReadStamps read = [&](const std::vector<std::string>& ids) {
    std::vector<Evidence> evidence = store.read(ids, true);
    std::vector<std::optional<std::int64_t>> stamps;
    seen.clear();
    for (std::size_t i = 0; i < ids.size(); ++i) {
      const bool found = i < evidence.size() && evidence[i].found;
      stamps.push_back(found ? evidence[i].stamp_ms : std::nullopt);
      if (found) seen.emplace(ids[i], std::move(evidence[i]));
    }
    return stamps;
  };
  const recency::Ranked ranked =
      recency::rank(ask.k, mode == SearchMode::kHard, *ask.recency, ask.now_ms, ask.max_candidates, run, read);
  Read out;
  out.tier_counts = ranked.tier_counts;
  for (const auto& row : ranked.rows) {
    const auto found = seen.find(row.id);
    if (found == seen.end()) continue;  // (the ranked rows are the last candidates read)
    out.rows.push_back({row.id, row.tier, row.score, 0, row.score});
    out.evidence.push_back(found->second);
  }
  *words = recency::describe(ranked, *ask.recency);
  return out;
}

void append(std::string* reason, const std::string& words) {
  if (words.empty()) return;
  *reason = reason->empty() ? words : *reason + "; " + words;
}

}  // namespace

const char* mode_name(SearchMode mode) {
  switch (mode) {
    case SearchMode::kOff: return "off";
    case SearchMode::kHard: return "hard";
    case SearchMode::kSoft: return "soft";
    case SearchMode::kStrict: return "strict";
  }
  return "hard";
}

Recalled run(const Ask& ask, const Store& store) {
  Recalled out;
  SearchMode chosen = ask.mode;
  std::string reason;
  if (ask.adaptive) {
    // The rule's probes need tiers and similarities only, ranked by (tier, s_sem) alone.
    const modes::RunRuleSearch probe = [&](const modes::RuleSearch& wanted) {
      std::vector<std::pair<int, double>> hits;
      for (const auto& row : store.search({wanted.mode, wanted.k, wanted.exclude_conflicts, false, false}).rows)
        hits.emplace_back(row.tier, row.score);
      return hits;
    };
    const modes::AdaptiveChoice choice = modes::choose_adaptive(ask.uncertainty, ask.k, ask.exclude_conflicts, probe);
    chosen = choice.hard ? SearchMode::kHard : SearchMode::kSoft;
    reason = choice.reason;
  }
  Read read;
  if (chosen == SearchMode::kStrict && !store.searches_strict) {
    read = strict_by_merge(ask, store);
  } else if (ask.recency && (chosen == SearchMode::kHard || chosen == SearchMode::kOff)) {
    read = with_recency(ask, store, chosen, &out.recency_words);
    reason = out.recency_words;
  } else {
    read = read_rows(store, store.search({chosen, ask.k, ask.exclude_conflicts, false, ranks(chosen)}));
  }
  out.hits = hits_of(ask, read);
  out.tier_counts = read.tier_counts;
  const auto& counts = out.tier_counts;
  if (ask.metadata_filtered && counts[0] + counts[1] + counts[2] == 0 && reason.empty()) {
    reason = "no item matches the metadata filter";
  }
  if (chosen == SearchMode::kHard || chosen == SearchMode::kStrict) append(&reason, ask.confidence_words);
  if (!ask.rule_words.empty()) {
    reason = "no mode requested: the namespace's rule, " + ask.rule_words + (reason.empty() ? "" : "; " + reason);
  }
  out.mode_used = chosen;
  out.mode_reason = std::move(reason);

  if (ask.suppressed_k > 0 && chosen != SearchMode::kOff) {
    // What plain similarity would have shown that the logic kept out (mode_rules.hpp).
    const modes::RuleSearch wanted = modes::suppressed_search(ask.k);
    const Read plain = read_rows(store, store.search({wanted.mode, wanted.k, wanted.exclude_conflicts, false, false}));
    std::vector<std::string> kept, ids;
    std::vector<std::int8_t> tiers;
    for (const auto& hit : out.hits) kept.push_back(hit.id);
    for (const auto& row : plain.rows) {
      ids.push_back(row.id);
      tiers.push_back(static_cast<std::int8_t>(row.tier));
    }
    for (const std::size_t i : modes::suppressed(kept, ids, tiers, ask.suppressed_k)) {
      const Row& row = plain.rows[i];
      out.suppressed.push_back({row.id, row.tier, row.score, explained(ask, row.tier, plain.evidence[i])});
    }
  }
  return out;
}

}  // namespace polarmem::recall
