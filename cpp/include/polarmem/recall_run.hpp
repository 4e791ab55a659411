// One Recall's modes, run once for every door: given the query's bound concepts and what was
// asked (mode, k, the recency term, suppressed hits...), it chooses the rule (adaptive), makes
// the searches the chosen mode needs (strict's merge, recency's growing candidates, the
// suppressed hits' plain-similarity search), explains each hit from its evidence and writes
// mode_reason. The library (polarmem_server/library/recall.py) runs it with any backend's
// searches (Milvus included); the compiled front runs it with the namespace's index. Parsing,
// binding names and encoding come before it; the context and the response's message after.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "polarmem/hit_explanation.hpp"
#include "polarmem/index.hpp"
#include "polarmem/mode_rules.hpp"
#include "polarmem/recency.hpp"

namespace polarmem::recall {

// One search the run asks of its store: the Recall's search (its vectors, concepts and filters,
// which the store holds) in this mode, with this k and conflict rule. `absent_verified`: only
// items on which every forbidden concept is NOT_HAS (strict's second search, for a store that
// cannot search strict in one call). `ranked`: the Recall's confidence ranking applies (levels
// and weights: the Recall's own hard and strict searches, never a rule's probe, never soft or off).
struct Search {
  SearchMode mode = SearchMode::kHard;
  std::size_t k = 10;
  bool exclude_conflicts = false;
  bool absent_verified = false;
  bool ranked = false;
};

// One ranked item of a search; an item forgotten since the search is left out by the store.
struct Row {
  std::string id;
  int tier = 0;
  double score = 0.0;       // s_sem (as the store gives it: a backend may score in double)
  std::int8_t flags = 0;    // confidence flags within the tier (ranked searches)
  double rank_value = 0.0;  // what the order ranked by within (tier, flags): s_sem without weights
};

struct Found {
  std::vector<Row> rows;                          // in rank order
  std::array<std::int64_t, 3> tier_counts{0, 0, 0};  // eligible items: conflict, neutral, entailed
};

// The state of one query concept on an item, and (explained) the evidence behind it.
struct Cited {
  int state = 0;        // +1 HAS, -1 NOT_HAS, 0 no state
  bool scored = false;  // the state comes from verifier scores (p = their mean), else from `source`
  double mean = 0.0;
  std::string source;
};

// What the run reads of an item: its query concepts' states (one per concept, required first),
// with their evidence and the item's partition when explained, and its recency stamp
// (updated_ms, else created_ms) when the Recall has a recency term. found false: forgotten
// since the search (the hit is dropped).
struct Evidence {
  bool found = false;
  std::vector<Cited> cited;
  double tau = 0.0, delta = 0.0;
  std::optional<std::int64_t> stamp_ms;
};

// The store's side. `search` runs a search (a store error propagates to the caller); `read`
// returns one Evidence per id, in order, right after the search that found them: the states
// (with their evidence when the Recall is explained) and, with `stamps`, the recency stamps
// (only the recency term's candidates need them). `searches_strict`: the store searches strict in one
// call (the local index); otherwise strict is its hard search and, when needed, its verified
// one, merged by the core's strict merge.
struct Store {
  std::function<Found(const Search&)> search;
  std::function<std::vector<Evidence>(const std::vector<std::string>& ids, bool stamps)> read;
  bool searches_strict = true;
};

// What the Recall asks, its concepts bound and its vectors known.
struct Ask {
  SearchMode mode = SearchMode::kHard;  // the mode to run (adaptive: ignored, the choice's)
  bool adaptive = false;
  modes::AdaptiveQuery uncertainty;  // what adaptive's choice reads of the query
  std::size_t k = 10;
  bool exclude_conflicts = false;
  std::size_t suppressed_k = 0;
  std::optional<recency::Term> recency;  // hard and off only
  std::int64_t now_ms = 0;               // the recency term's "now"
  std::size_t max_candidates = kMaxTopK;  // the most candidates the recency term reads
  bool explain = true;                   // hits cite evidence (p, tau, delta) from the items' records
  std::vector<std::string> concept_names;  // the query's concepts: required first, then forbidden
  std::size_t required_count = 0;
  bool metadata_filtered = false;  // the Recall has a metadata filter
  // The words mode_reason ends with when confidence ranks the hard searches ("" when it does
  // not), and the namespace rule's when no mode was named: "<mode> (<why>)".
  std::string confidence_words;
  std::string rule_words;
};

struct Hit {
  std::string id;
  int tier = 0;
  double score = 0.0;
  explain::Explanation why;  // positions in Ask::concept_names
};

struct Recalled {
  std::vector<Hit> hits, suppressed;
  std::array<std::int64_t, 3> tier_counts{0, 0, 0};
  SearchMode mode_used = SearchMode::kHard;
  std::string mode_reason;
  std::string recency_words;  // the recency term's description (mode_reason ends with it)
};

// Runs the Recall `ask` against `store`.
Recalled run(const Ask& ask, const Store& store);

// The name the API gives a search mode ("off", "hard", "soft", "strict").
const char* mode_name(SearchMode mode);

}  // namespace polarmem::recall
