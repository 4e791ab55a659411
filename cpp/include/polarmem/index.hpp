// The retrieval core of one namespace: dense slots holding an item kind, named vector spaces and
// HAS / NOT_HAS concept bitmaps, searched lexicographically by (logic tier, similarity, slot).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <shared_mutex>
#include <string>
#include <vector>

#include "polarmem/confidence_column.hpp"
#include "polarmem/rw_lock.hpp"
#include "polarmem/slot_bitmap.hpp"
#include "polarmem/tier_table.hpp"
#include "polarmem/vector_space.hpp"

namespace polarmem {

enum class ItemKind : std::uint8_t { kVisual = 1, kText = 2 };

enum class SearchMode : int {
  kOff = 0,   // plain dense retrieval: rank by s_sem alone (tiers still reported)
  kHard = 1,  // the paper's Algorithm 1: rank by (s_log, s_sem), logic strictly first
  kSoft = 2,  // rank by s_sem + lambda * s_log
  // hard, and within each tier the items on which every forbidden concept is NOT_HAS (absence
  // verified) first: rank by (s_log, verified, confidence flags, s_sem). Index::search_strict.
  kStrict = 3,
};

// The largest k a search accepts. Results are materialised per query (and a batch keeps one
// bounded heap per query and worker), so k bounds a search's memory: 10,000 hits of a
// 64-query batch on 2 workers is ~30 MB. Larger k is rejected as an invalid argument.
constexpr std::size_t kMaxTopK = 10000;
// The largest vector dimension a space accepts.
constexpr std::size_t kMaxDim = 65536;

// Tier values, as in the paper: conflict -1, neutral 0, entailment +1.
constexpr int kConflict = -1;
constexpr int kNeutral = 0;
constexpr int kEntailed = 1;

// Concept lists per item in compressed-sparse-row form: item i owns ids[indptr[i], indptr[i+1]).
struct ConceptLists {
  const std::int64_t* indptr = nullptr;  // count + 1 entries; nullptr = every item has none
  const std::uint32_t* ids = nullptr;
};

// Graded confidence levels per (item, concept). A concept's grade is +g when the item is
// confidently present at level g (1 .. kConfidenceLevels, higher = surer), -g when confidently
// absent at level g, and an item that lists no grade for a concept is at level 0 either way.
// The index keeps one bitmap per concept, polarity and level holding the items graded at that
// level or a surer one, so a query at level g reads one bitmap per concept it names. What the
// levels mean (e.g. P(present) > 0.9 / 0.95 / 0.99) is the caller's: the core only orders them.
constexpr std::size_t kConfidenceLevels = 3;

// Grades per item in compressed-sparse-row form: item i owns ids[p] / grades[p] for p in
// [indptr[i], indptr[i+1]); a concept appears at most once per item.
struct ConceptGrades {
  const std::int64_t* indptr = nullptr;  // count + 1 entries; nullptr = every item has none
  const std::uint32_t* ids = nullptr;
  const std::int8_t* grades = nullptr;  // -kConfidenceLevels .. kConfidenceLevels
  // Optional, one per entry: the confidence itself, 0 .. kConfidenceScale for P(present) = b / 254,
  // or kNotScored for an entry that only grades (see ConfidenceColumns); nullptr = none set one.
  const std::uint8_t* confidence = nullptr;
};

// Vectors for one space. Single spaces: `rows` x dim, row i for item i, `present` (optional,
// one byte per item) marks items that have a vector. Multi spaces: `counts[i]` rows per item,
// concatenated.
struct VectorInput {
  std::string space;
  const float* values = nullptr;
  std::size_t rows = 0;
  std::size_t dim = 0;
  const std::uint8_t* present = nullptr;
  const std::int64_t* counts = nullptr;
};

struct ItemBatch {
  std::size_t count = 0;
  const std::uint8_t* kinds = nullptr;  // ItemKind per item
  std::vector<VectorInput> vectors;
  ConceptLists has;
  ConceptLists not_has;
  ConceptGrades grades;  // optional confidence grades (see ConceptGrades)
};

struct QueryVector {
  std::string space;
  std::vector<float> values;  // any non-zero length-dim vector; normalised by the search
  float weight = 1.0f;
};

// One query: its vectors, its concept constraints and filters. A request owns its data, so a
// batch is a list of requests, each with its own constraints.
struct SearchRequest {
  std::vector<QueryVector> vectors;  // s_sem = sum of weight * cosine; none = all scores 0
  std::vector<std::uint32_t> required;
  std::vector<std::uint32_t> forbidden;
  std::size_t k = 10;  // 1 .. kMaxTopK
  SearchMode mode = SearchMode::kHard;
  float soft_lambda = 1.0f;
  bool exclude_conflicts = false;
  std::uint8_t kind_mask = 0;  // bit 1 visual, bit 2 text; 0 = any kind
  // Optional allow-list of slots; shared so the requests of a batch can hold one list.
  std::shared_ptr<const std::vector<std::int64_t>> allow;
  std::size_t threads = 0;  // 0 = the index default
  // false: a request with one vector of a space that has an approximate index (AnnConfig) has
  // each logic tier's candidates ordered by the graph (tiers stay exact; see Index::search).
  bool exact = true;
  std::size_t ef_search = 0;  // the graph's candidate list for this request; 0 = the space's
  // Confidence flags within tiers (hard mode only; 0 = not used). With absent_level > 0 an item
  // whose every forbidden concept is graded absent at that level or surer is "confidently
  // absent"; with present_level > 0 one whose every required concept is graded present at that
  // level or surer is "confidently present". Hard mode then ranks by (tier, confidently absent,
  // confidently present, s_sem, slot): binary flags inside a tier, never across tiers. Such a
  // request is always searched exactly (the graph orders by similarity alone).
  std::uint8_t present_level = 0;
  std::uint8_t absent_level = 0;
  // Confidence weights within tiers (hard mode only; both 0 = not used; finite, >= 0): inside a
  // tier and its confidence flags, items rank by s_sem + present_weight * mean P(present) of the
  // required concepts - absent_weight * mean P(present) of the forbidden ones (ConfidenceWeights),
  // so a surer consistent item can pass a slightly more similar, less sure one. SearchResult's
  // scores stay s_sem. Such a request is always searched exactly, one query at a time.
  float present_weight = 0.0f;
  float absent_weight = 0.0f;
};

struct SearchResult {
  std::vector<std::int64_t> slots;
  std::vector<std::int8_t> tiers;
  std::vector<float> scores;
  // Per hit, with confidence levels requested: bit 1 confidently absent, bit 0 confidently
  // present (empty otherwise).
  std::vector<std::int8_t> confidence;
  // Per hit, with confidence weights requested: the value it ranked by within its tier and flags,
  // s_sem + the confidence term (empty otherwise), so a caller can merge ranked lists exactly.
  std::vector<float> rank_scores;
  // Eligible items (live, kind, allow-list) per tier: [conflict, neutral, entailed].
  std::array<std::int64_t, 3> tier_counts{0, 0, 0};
  std::int64_t scored = 0;    // items whose vectors were read
  std::int64_t reranked = 0;  // items re-scored in fp32 after a compact scan
  bool approximate = false;   // some tier's order came from the approximate graph
};

class Index {
 public:
  // threads: default search parallelism (0 = all hardware threads).
  explicit Index(std::vector<SpaceConfig> spaces, std::size_t threads = 0);

  // Appends a batch; returns the first new slot (the batch occupies consecutive slots).
  std::int64_t add(const ItemBatch& batch);
  // Replaces the concept states (and confidence grades) of existing live slots.
  void set_concepts(const std::int64_t* slots, std::size_t count, ConceptLists has, ConceptLists not_has,
                    ConceptGrades grades = {});
  // Replaces one space's vectors of existing live slots (`input.rows` / counts per slot).
  void set_vectors(const std::int64_t* slots, std::size_t count, const VectorInput& input);
  // Tombstones live slots; they stop matching at once and are reclaimed by compact().
  void remove(const std::int64_t* slots, std::size_t count);
  // Drops tombstones; returns new_of_old (-1 for removed slots).
  std::vector<std::int64_t> compact();
  // Grows the concept vocabulary to at least `count` ids (never shrinks).
  void ensure_concepts(std::size_t count);

  // The one search entry point: one result per request, in order. Four or more requests that
  // each hold one vector of the same single-vector space are scored together as a blocked
  // matrix product (each row read once for the whole batch); any other request is searched on
  // its own. Either way each result is exactly what the request gives alone.
  std::vector<SearchResult> search(const std::vector<SearchRequest>& requests) const;
  // One request: search({request})[0].
  //
  // A request with exact = false, one vector of positive weight, and a space with an
  // approximate index searches each logic tier apart (the tiers the exact search would read:
  // tier pruning is the same): a tier of at most AnnConfig's exact threshold is scanned exactly,
  // a larger one is searched in the graph restricted to that tier's slots. Hits are then
  // ranked exactly as the exact search ranks them (tier first in hard mode, s_sem + lambda
  // s_log in soft, s_sem in off, where the tiers are searched as one), with exact scores: only
  // which items of a large tier make its top k is approximate. Tier counts are always exact.
  SearchResult search(const SearchRequest& request) const;

  // The approximate index of a space: save to a file (hnswlib's format) and load one back.
  // A loaded graph must hold exactly the slots that have a vector in the space; `new_of_old`
  // (when not empty) first renumbers the file's slots, as compact() does.
  void save_ann(const std::string& space, const std::string& path) const;
  void load_ann(const std::string& space, const std::string& path, const std::vector<std::int64_t>& new_of_old = {});
  // Every graph stops taking writes until load_ann replaces it (a start-up that loads saved graphs).
  void defer_ann();
  // Live nodes of a space's approximate index (0 when it has none).
  std::size_t ann_size(const std::string& space) const;

  std::size_t size() const;        // slots, tombstones included
  std::size_t live_count() const;
  std::size_t num_concepts() const;
  bool is_live(std::int64_t slot) const;
  // Live slots that state HAS for every id in `has` and NOT_HAS for every id in `not_has`
  // (every live slot when both are empty), ascending: one AND over the concepts' bitmaps.
  std::vector<std::int64_t> slots_with(const std::vector<std::uint32_t>& has,
                                       const std::vector<std::uint32_t>& not_has) const;
  // The stated polarity of each concept for each slot, row-major (slot i, concept j at
  // i * concepts + j): +1 HAS, -1 NOT_HAS, 0 neither or the slot is not live. What a hit's
  // explanation-free answer needs, read from the bitmaps in one call.
  std::vector<std::int8_t> concept_states(const std::int64_t* slots, std::size_t count,
                                          const std::vector<std::uint32_t>& concepts) const;
  std::vector<SpaceConfig> spaces() const;
  std::size_t memory_bytes() const;

 private:
  struct Prepared;

  const VectorSpace& space_named(const std::string& name, const std::string& argument) const;
  std::size_t space_index(const std::string& name, const std::string& argument) const;
  void check_concepts(ConceptLists lists, std::size_t count, const std::string& argument) const;
  void check_grades(ConceptGrades grades, std::size_t count) const;
  void check_live_slots(const std::int64_t* slots, std::size_t count, const std::string& argument) const;
  void validate_vectors(const VectorInput& input, std::size_t count, const std::string& argument,
                        std::vector<float>* normalised) const;
  void apply_vectors(std::size_t space, const std::int64_t* slots, std::size_t first_slot, std::size_t count,
                     const VectorInput& input, const std::vector<float>& normalised);
  void apply_concepts(std::size_t slot, ConceptLists has, ConceptLists not_has, ConceptGrades grades, std::size_t item,
                      bool clear_old);
  struct TierChoice {
    bool conflict;
    bool neutral;
  };

  struct BatchPlan;
  Prepared prepare(const SearchRequest& request) const;
  void check_constraints(const SearchRequest& request) const;
  bool batchable(const std::vector<SearchRequest>& requests) const;
  std::vector<SearchResult> run_batch(const std::vector<SearchRequest>& requests) const;
  void bind(Prepared& prepared) const;  // under the lock
  static std::array<std::int64_t, 3> count_tiers(const Prepared& prepared);
  static TierChoice choose_tiers(const SearchRequest& request, const std::array<std::int64_t, 3>& counts) noexcept;
  SearchResult run_search(const Prepared& prepared) const;
  SearchResult run_prepared(const Prepared& prepared) const;  // the graph's path or the exact one
  SearchResult search_strict(const SearchRequest& request) const;
  bool absence_verified(std::int64_t slot, const std::vector<std::uint32_t>& forbidden) const noexcept;
  const AnnGraph* approximate_graph(const Prepared& prepared) const noexcept;
  bool wants_graph(const SearchRequest& request) const noexcept;
  SearchResult run_approximate(const Prepared& prepared, const AnnGraph& graph) const;
  std::vector<SearchResult> search_each(const std::vector<SearchRequest>& requests) const;

  std::vector<VectorSpace> spaces_;
  std::vector<std::unique_ptr<AnnGraph>> graphs_;  // per space; null where it has none
  std::vector<SlotBitmap> has_;
  std::vector<SlotBitmap> not_has_;
  // [level - 1][concept]: items graded present (absent) at that level or surer.
  std::array<std::vector<SlotBitmap>, kConfidenceLevels> present_;
  std::array<std::vector<SlotBitmap>, kConfidenceLevels> absent_;
  ConfidenceColumns confidence_;
  SlotBitmap live_;
  SlotBitmap visual_;
  std::size_t size_ = 0;
  std::size_t live_count_ = 0;
  std::size_t threads_;
  mutable RwLock mutex_;  // searches share it; writes take it alone, ahead of new searches
};

}  // namespace polarmem
