#include "polarmem/index.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <thread>

#include "polarmem/error.hpp"
#include "polarmem/strict_merge.hpp"
#include "polarmem/tier_table.hpp"

namespace polarmem {
namespace {

// From this many queries of one space a batch is scored as tile products: below it, a panel of
// 16 columns mostly multiplies padding, and one memory-bound scan per query is cheaper.
constexpr std::size_t kMinTileBatch = 4;
// Below this many items to score, a second thread costs more than it saves.
constexpr std::int64_t kItemsPerThread = 16384;
// A filtered walk's row costs about this many rows of a tier scan: 0.11-0.29 ms for 600-860 rows
// against 0.24-1.6 ms for 3,400-20,000 scanned (100,000 notes, AVX2, docs/performance-core.md).
constexpr std::size_t kScanRowsPerWalkRow = 4;
// A budgeted walk stands in for the scan the cost model chose, so it walks with this many times
// ef: on bench_mix's dev questions (100,000 notes, each caption five times) the MCP answers then
// equal the scan's for 296 of 300 questions, against 285 with ef (two of those 15 with a label
// changed); four times ef gave 300 of 300 at no saving left over the scan.
constexpr std::size_t kBudgetedWalkListFactor = 2;

// One ranked candidate. rank_tier/key order the results; key is a lower bound of the rank
// value when the scan read a compact copy (upper is then its upper bound).
struct Entry {
  std::int8_t rank_tier;
  std::int8_t tier;
  float key;
  float upper;
  float score;
  std::int64_t slot;
};

// "a ranks before b": higher tier, then higher key, then lower slot.
inline bool ranks_before(const Entry& a, const Entry& b) noexcept {
  if (a.rank_tier != b.rank_tier) return a.rank_tier > b.rank_tier;
  if (a.key != b.key) return a.key > b.key;
  return a.slot < b.slot;
}

// A bounded heap of the k best entries; front() is the worst kept.
class TopK {
 public:
  // Reserves lazily past 1,024 entries: a batch holds one heap per query and worker.
  explicit TopK(std::size_t k) : k_(k) { entries_.reserve(std::min<std::size_t>(k, 1024)); }
  bool full() const noexcept { return entries_.size() >= k_; }
  const Entry& worst() const noexcept { return entries_.front(); }
  bool admits(const Entry& e) const noexcept { return !full() || ranks_before(e, worst()); }
  void push(const Entry& e) {
    if (!full()) {
      entries_.push_back(e);
      std::push_heap(entries_.begin(), entries_.end(), ranks_before);
    } else if (ranks_before(e, worst())) {
      std::pop_heap(entries_.begin(), entries_.end(), ranks_before);
      entries_.back() = e;
      std::push_heap(entries_.begin(), entries_.end(), ranks_before);
    }
  }
  std::vector<Entry>& entries() noexcept { return entries_; }

 private:
  std::size_t k_;
  std::vector<Entry> entries_;
};

template <typename Fn>
void run_parallel(std::size_t workers, Fn&& fn) {
  if (workers <= 1) {
    fn(0);
    return;
  }
  std::vector<std::thread> threads;
  threads.reserve(workers - 1);
  for (std::size_t w = 1; w < workers; ++w) threads.emplace_back([&fn, w] { fn(w); });
  fn(0);
  for (auto& t : threads) t.join();
}

// Hands out ranges of bitmap words to the workers of one search, lowest first. A fixed share per
// worker made a search as slow as its slowest thread (on a shared host one vCPU is sometimes
// descheduled for milliseconds); with chunks the other worker takes the rest. Each worker still
// sees its own slots in ascending order, which the tie rules of the scans rely on.
class WordChunks {
 public:
  WordChunks(std::size_t word_count, std::size_t workers)
      : count_(word_count), chunk_(std::max<std::size_t>(kMinWords, (word_count + 4 * workers - 1) / (4 * workers))) {}

  bool next(std::size_t* begin, std::size_t* end) noexcept {
    const std::size_t first = next_.fetch_add(chunk_, std::memory_order_relaxed);
    if (first >= count_) return false;
    *begin = first;
    *end = std::min(count_, first + chunk_);
    return true;
  }

 private:
  static constexpr std::size_t kMinWords = 64;  // 4,096 slots: a chunk is never just a few rows
  std::size_t count_;
  std::size_t chunk_;
  std::atomic<std::size_t> next_{0};
};

std::string describe_slot(std::int64_t slot) { return "slot " + std::to_string(slot); }

}  // namespace

struct Index::Prepared {
  Prepared() = default;
  // tiers.allow points into allow_words: a move keeps that buffer, a copy would not.
  Prepared(Prepared&&) = default;
  Prepared& operator=(Prepared&&) = default;
  Prepared(const Prepared&) = delete;
  Prepared& operator=(const Prepared&) = delete;

  const SearchRequest* request = nullptr;
  std::vector<std::size_t> space_ids;
  std::vector<SpaceQuery> queries;
  std::vector<float> weights;
  // What decides each slot's tier: live, kind, allow-list, the required concepts' NOT_HAS and
  // the forbidden concepts' HAS (conflict), the required concepts' HAS (entailed).
  TierTable::Sources tiers;
  // Confidence flags (empty unless the request asks for them and names such concepts).
  std::vector<const SlotBitmap*> present_flags;  // required concepts at present_level
  std::vector<const SlotBitmap*> absent_flags;   // forbidden concepts at absent_level
  ConfidenceWeights weights_term;  // inactive unless the request sets confidence weights
  std::vector<std::uint64_t> allow_words;
  std::size_t word_count = 0;
  bool compact = false;
};

Index::Index(std::vector<SpaceConfig> spaces, std::size_t threads)
    : threads_(threads == 0 ? std::max(1u, std::thread::hardware_concurrency()) : threads) {
  for (std::size_t i = 0; i < spaces.size(); ++i) {
    if (spaces[i].name.empty())
      fail(ErrorCode::kInvalidArgument, "spaces[" + std::to_string(i) + "]: name must not be empty");
    if (spaces[i].dim > kMaxDim) {
      fail(ErrorCode::kInvalidArgument, "space '" + spaces[i].name + "': dim must be <= " + std::to_string(kMaxDim));
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (spaces[j].name == spaces[i].name)
        fail(ErrorCode::kInvalidArgument, "space '" + spaces[i].name + "' is declared twice");
    }
    if (spaces[i].ann.enabled && spaces[i].multi) {
      fail(ErrorCode::kInvalidArgument,
           "space '" + spaces[i].name + "': an approximate index needs a single-vector space");
    }
    spaces_.emplace_back(spaces[i]);
    graphs_.push_back(spaces[i].ann.enabled ? std::make_unique<AnnGraph>(spaces[i].dim, spaces[i].ann) : nullptr);
  }
}

// ---- validation -------------------------------------------------------------------------

std::size_t Index::space_index(const std::string& name, const std::string& argument) const {
  for (std::size_t i = 0; i < spaces_.size(); ++i) {
    if (spaces_[i].config().name == name) return i;
  }
  std::string known;
  for (const auto& s : spaces_) known += (known.empty() ? "" : ", ") + s.config().name;
  fail(ErrorCode::kInvalidArgument,
       argument + ": unknown vector space '" + name + "' (this index has: " + (known.empty() ? "none" : known) + ")");
}

const VectorSpace& Index::space_named(const std::string& name, const std::string& argument) const {
  return spaces_[space_index(name, argument)];
}

void Index::check_concepts(ConceptLists lists, std::size_t count, const std::string& argument) const {
  if (lists.indptr == nullptr) return;
  if (lists.indptr[0] != 0) fail(ErrorCode::kInvalidArgument, argument + ": indptr must start at 0");
  const std::size_t vocabulary = has_.size();
  for (std::size_t i = 0; i < count; ++i) {
    if (lists.indptr[i + 1] < lists.indptr[i]) {
      fail(ErrorCode::kInvalidArgument, argument + ": indptr must be non-decreasing (item " + std::to_string(i) + ")");
    }
    for (std::int64_t p = lists.indptr[i]; p < lists.indptr[i + 1]; ++p) {
      if (lists.ids[p] >= vocabulary) {
        fail(ErrorCode::kOutOfRange, argument + ": concept id " + std::to_string(lists.ids[p]) + " of item " +
                                         std::to_string(i) + " is out of range [0, " + std::to_string(vocabulary) +
                                         "); grow the vocabulary with ensure_concepts() first");
      }
    }
  }
}

void Index::check_grades(ConceptGrades grades, std::size_t count) const {
  if (grades.indptr == nullptr) return;
  check_concepts(ConceptLists{grades.indptr, grades.ids}, count, "grades");
  constexpr int kLevels = static_cast<int>(kConfidenceLevels);
  // A concept graded twice for one item would be ambiguous: stamp[id] holds the last item + 1.
  std::vector<std::size_t> stamp(has_.size(), 0);
  for (std::size_t i = 0; i < count; ++i) {
    for (std::int64_t p = grades.indptr[i]; p < grades.indptr[i + 1]; ++p) {
      const int grade = grades.grades[p];
      if (grade < -kLevels || grade > kLevels) {
        fail(ErrorCode::kInvalidArgument, "grades: grade " + std::to_string(grade) + " of item " + std::to_string(i) +
                                              " is outside [-" + std::to_string(kLevels) + ", " +
                                              std::to_string(kLevels) + "]");
      }
      if (stamp[grades.ids[p]] == i + 1) {
        fail(ErrorCode::kInvalidArgument, "grades: concept id " + std::to_string(grades.ids[p]) +
                                              " is graded twice for item " + std::to_string(i) +
                                              "; give each concept one grade");
      }
      stamp[grades.ids[p]] = i + 1;
    }
  }
}

void Index::check_live_slots(const std::int64_t* slots, std::size_t count, const std::string& argument) const {
  for (std::size_t i = 0; i < count; ++i) {
    if (slots[i] < 0 || static_cast<std::size_t>(slots[i]) >= size_) {
      fail(ErrorCode::kOutOfRange,
           argument + ": " + describe_slot(slots[i]) + " is out of range [0, " + std::to_string(size_) + ")");
    }
    if (!live_.test(static_cast<std::size_t>(slots[i]))) {
      fail(ErrorCode::kFailedPrecondition, argument + ": " + describe_slot(slots[i]) + " was removed");
    }
  }
}

void Index::validate_vectors(const VectorInput& input, std::size_t count, const std::string& argument,
                             std::vector<float>* normalised) const {
  const VectorSpace& space = space_named(input.space, argument);
  const std::string where = argument + "['" + input.space + "']";
  if (input.dim != space.dim()) {
    fail(ErrorCode::kInvalidArgument,
         where + ": expected dimension " + std::to_string(space.dim()) + ", got " + std::to_string(input.dim));
  }
  if (space.config().multi) {
    if (input.counts == nullptr)
      fail(ErrorCode::kInvalidArgument, where + ": a multi-vector space needs per-item counts");
    std::int64_t total = 0;
    for (std::size_t i = 0; i < count; ++i) {
      if (input.counts[i] < 0) fail(ErrorCode::kInvalidArgument, where + ": counts must be >= 0");
      total += input.counts[i];
    }
    if (static_cast<std::size_t>(total) != input.rows) {
      fail(ErrorCode::kInvalidArgument, where + ": counts add up to " + std::to_string(total) + " rows but " +
                                            std::to_string(input.rows) + " were given");
    }
  } else if (input.rows != count) {
    fail(ErrorCode::kInvalidArgument,
         where + ": expected " + std::to_string(count) + " rows (one per item), got " + std::to_string(input.rows));
  }
  normalised->assign(input.rows * input.dim, 0.0f);
  if (space.config().multi || input.present == nullptr) {
    normalise_rows(input.values, input.rows, input.dim, where, normalised->data());
    return;
  }
  for (std::size_t r = 0; r < input.rows; ++r) {
    if (input.present[r])
      normalise_rows(input.values + r * input.dim, 1, input.dim, where + " item " + std::to_string(r),
                     normalised->data() + r * input.dim);
  }
}

// ---- writes -----------------------------------------------------------------------------

void Index::apply_vectors(std::size_t space, const std::int64_t* slots, std::size_t first_slot, std::size_t count,
                          const VectorInput& input, const std::vector<float>& normalised) {
  VectorSpace& target = spaces_[space];
  AnnGraph* graph = graphs_[space].get();
  std::vector<std::pair<std::size_t, const float*>> indexed;
  std::size_t row = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t slot = slots ? static_cast<std::size_t>(slots[i]) : first_slot + i;
    if (target.config().multi) {
      const std::size_t n = static_cast<std::size_t>(input.counts[i]);
      target.assign(slot, normalised.data() + row * input.dim, n);
      row += n;
    } else if (input.present == nullptr || input.present[i]) {
      target.assign(slot, normalised.data() + i * input.dim, 1);
      if (graph) indexed.emplace_back(slot, normalised.data() + i * input.dim);
    } else {
      target.clear(slot);
      if (graph) graph->erase(slot);
    }
  }
  // The graph is built under the writer lock, so a search sees it in step with the vectors.
  if (graph && !indexed.empty()) graph->upsert(indexed, threads_);
}

void Index::apply_concepts(std::size_t slot, ConceptLists has, ConceptLists not_has, ConceptGrades grades,
                           std::size_t item, bool clear_old) {
  if (clear_old) {
    for (auto& bitmap : has_) bitmap.reset(slot);
    for (auto& bitmap : not_has_) bitmap.reset(slot);
    for (std::size_t level = 0; level < kConfidenceLevels; ++level) {
      for (auto& bitmap : present_[level]) bitmap.reset(slot);
      for (auto& bitmap : absent_[level]) bitmap.reset(slot);
    }
    confidence_.clear_slot(slot);
  }
  if (grades.indptr) {
    // Cumulative: a grade of 3 sets levels 1, 2 and 3, so a query at level g reads one bitmap.
    for (std::int64_t p = grades.indptr[item]; p < grades.indptr[item + 1]; ++p) {
      const int grade = grades.grades[p];
      auto& levels = grade > 0 ? present_ : absent_;
      for (int level = 0; level < std::abs(grade); ++level)
        levels[static_cast<std::size_t>(level)][grades.ids[p]].set(slot);
      if (grades.confidence != nullptr && grades.confidence[p] != kNotScored) {
        confidence_.set(grades.ids[p], slot, grades.confidence[p]);
      }
    }
  }
  if (has.indptr) {
    for (std::int64_t p = has.indptr[item]; p < has.indptr[item + 1]; ++p) has_[has.ids[p]].set(slot);
  }
  if (not_has.indptr) {
    for (std::int64_t p = not_has.indptr[item]; p < not_has.indptr[item + 1]; ++p) not_has_[not_has.ids[p]].set(slot);
  }
}

namespace {
// A concept stated both present and absent for one item is a contradiction the caller must
// resolve (the partition never produces one).
void check_disjoint(ConceptLists has, ConceptLists not_has, std::size_t count) {
  if (!has.indptr || !not_has.indptr) return;
  for (std::size_t i = 0; i < count; ++i) {
    for (std::int64_t p = has.indptr[i]; p < has.indptr[i + 1]; ++p) {
      for (std::int64_t q = not_has.indptr[i]; q < not_has.indptr[i + 1]; ++q) {
        if (has.ids[p] == not_has.ids[q]) {
          fail(ErrorCode::kInvalidArgument, "concept id " + std::to_string(has.ids[p]) +
                                                " is in both has and not_has of item " + std::to_string(i) +
                                                "; an item states a concept at most once");
        }
      }
    }
  }
}
}  // namespace

std::int64_t Index::add(const ItemBatch& batch) {
  for (std::size_t i = 0; i < batch.count; ++i) {
    const std::uint8_t kind = batch.kinds ? batch.kinds[i] : static_cast<std::uint8_t>(ItemKind::kVisual);
    if (kind != static_cast<std::uint8_t>(ItemKind::kVisual) && kind != static_cast<std::uint8_t>(ItemKind::kText)) {
      fail(ErrorCode::kInvalidArgument,
           "kinds: item " + std::to_string(i) + " has kind " + std::to_string(kind) + "; use 1 (visual) or 2 (text)");
    }
  }
  // Normalise outside the lock: space configurations never change after construction.
  std::vector<std::vector<float>> normalised(batch.vectors.size());
  std::vector<std::size_t> space_ids(batch.vectors.size());
  for (std::size_t v = 0; v < batch.vectors.size(); ++v) {
    space_ids[v] = space_index(batch.vectors[v].space, "vectors");
    for (std::size_t u = 0; u < v; ++u) {
      if (space_ids[u] == space_ids[v])
        fail(ErrorCode::kInvalidArgument, "vectors: space '" + batch.vectors[v].space + "' given twice");
    }
    validate_vectors(batch.vectors[v], batch.count, "vectors", &normalised[v]);
  }
  check_disjoint(batch.has, batch.not_has, batch.count);

  std::unique_lock lock(mutex_);
  check_concepts(batch.has, batch.count, "has");
  check_concepts(batch.not_has, batch.count, "not_has");
  check_grades(batch.grades, batch.count);
  const std::size_t first = size_;
  const std::size_t end = first + batch.count;
  for (auto& space : spaces_) space.reserve(end);
  for (std::size_t v = 0; v < batch.vectors.size(); ++v) {
    apply_vectors(space_ids[v], nullptr, first, batch.count, batch.vectors[v], normalised[v]);
  }
  for (std::size_t i = 0; i < batch.count; ++i) {
    const std::size_t slot = first + i;
    live_.set(slot);
    visual_.assign(slot, !batch.kinds || batch.kinds[i] == static_cast<std::uint8_t>(ItemKind::kVisual));
    apply_concepts(slot, batch.has, batch.not_has, batch.grades, i, false);
  }
  size_ = end;
  live_count_ += batch.count;
  return static_cast<std::int64_t>(first);
}

void Index::set_concepts(const std::int64_t* slots, std::size_t count, ConceptLists has, ConceptLists not_has,
                         ConceptGrades grades) {
  check_disjoint(has, not_has, count);
  std::unique_lock lock(mutex_);
  check_live_slots(slots, count, "slots");
  check_concepts(has, count, "has");
  check_concepts(not_has, count, "not_has");
  check_grades(grades, count);
  for (std::size_t i = 0; i < count; ++i)
    apply_concepts(static_cast<std::size_t>(slots[i]), has, not_has, grades, i, true);
}

void Index::set_vectors(const std::int64_t* slots, std::size_t count, const VectorInput& input) {
  std::vector<float> normalised;
  const std::size_t space = space_index(input.space, "vectors");
  validate_vectors(input, count, "vectors", &normalised);
  std::unique_lock lock(mutex_);
  check_live_slots(slots, count, "slots");
  apply_vectors(space, slots, 0, count, input, normalised);
}

void Index::remove(const std::int64_t* slots, std::size_t count) {
  std::unique_lock lock(mutex_);
  check_live_slots(slots, count, "slots");
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t slot = static_cast<std::size_t>(slots[i]);
    if (live_.test(slot)) {  // a slot repeated in one call is removed once
      live_.reset(slot);
      --live_count_;
      for (auto& graph : graphs_) {
        if (graph) graph->erase(slot);
      }
    }
  }
}

std::vector<std::int64_t> Index::compact() {
  std::unique_lock lock(mutex_);
  std::vector<std::int64_t> new_of_old(size_, -1);
  std::size_t next = 0;
  for (std::size_t slot = 0; slot < size_; ++slot) {
    if (live_.test(slot)) new_of_old[slot] = static_cast<std::int64_t>(next++);
  }
  auto remap = [&](const SlotBitmap& old) {
    SlotBitmap fresh;
    for (std::size_t w = 0; w * 64 < size_; ++w) {
      std::uint64_t bits = old.word(w);
      while (bits) {
        const std::size_t slot = w * 64 + static_cast<std::size_t>(std::countr_zero(bits));
        bits &= bits - 1;
        if (slot < size_ && new_of_old[slot] >= 0) fresh.set(static_cast<std::size_t>(new_of_old[slot]));
      }
    }
    return fresh;
  };
  for (auto& bitmap : has_) bitmap = remap(bitmap);
  for (auto& bitmap : not_has_) bitmap = remap(bitmap);
  for (std::size_t level = 0; level < kConfidenceLevels; ++level) {
    for (auto& bitmap : present_[level]) bitmap = remap(bitmap);
    for (auto& bitmap : absent_[level]) bitmap = remap(bitmap);
  }
  confidence_.compact(new_of_old, next);
  visual_ = remap(visual_);
  live_ = remap(live_);
  for (auto& space : spaces_) space.compact_slots(new_of_old, next);
  for (auto& graph : graphs_) {
    if (graph) graph->relabel(new_of_old);
  }
  size_ = next;
  live_count_ = next;
  return new_of_old;
}

void Index::ensure_concepts(std::size_t count) {
  constexpr std::size_t kMaxConcepts = std::size_t{1} << 32;  // concept ids are uint32
  if (count > kMaxConcepts) {
    fail(ErrorCode::kInvalidArgument, "count: a vocabulary holds at most 2^32 concepts, got " + std::to_string(count));
  }
  std::unique_lock lock(mutex_);
  if (count > has_.size()) {
    // Every reservation comes first, so a failed allocation leaves the vocabulary unchanged.
    has_.reserve(count);
    not_has_.reserve(count);
    for (std::size_t level = 0; level < kConfidenceLevels; ++level) {
      present_[level].reserve(count);
      absent_[level].reserve(count);
    }
    confidence_.ensure_concepts(count);
    has_.resize(count);
    not_has_.resize(count);
    for (std::size_t level = 0; level < kConfidenceLevels; ++level) {
      present_[level].resize(count);
      absent_[level].resize(count);
    }
  }
}

// ---- search -----------------------------------------------------------------------------

void Index::check_constraints(const SearchRequest& request) const {
  if (request.k == 0 || request.k > kMaxTopK) {
    fail(ErrorCode::kInvalidArgument,
         "k must be between 1 and " + std::to_string(kMaxTopK) + ", got " + std::to_string(request.k));
  }
  if (request.mode != SearchMode::kOff && request.mode != SearchMode::kHard && request.mode != SearchMode::kSoft &&
      request.mode != SearchMode::kStrict) {
    fail(ErrorCode::kInvalidArgument, "mode must be off, hard, soft or strict");
  }
  const bool tiered = request.mode == SearchMode::kHard || request.mode == SearchMode::kStrict;
  if (!std::isfinite(request.soft_lambda)) fail(ErrorCode::kInvalidArgument, "soft_lambda must be finite");
  if (request.kind_mask > 3)
    fail(ErrorCode::kInvalidArgument, "kind_mask must be 0 (any), 1 (visual), 2 (text) or 3 (both)");
  for (const auto& [level, name] :
       {std::pair{request.present_level, "present_level"}, {request.absent_level, "absent_level"}}) {
    if (level > kConfidenceLevels) {
      fail(ErrorCode::kInvalidArgument, std::string(name) + " must be 0 (not used) .. " +
                                            std::to_string(kConfidenceLevels) + ", got " + std::to_string(level));
    }
    if (level > 0 && !tiered) {
      fail(ErrorCode::kInvalidArgument, std::string(name) +
                                            ": confidence flags order items within logic tiers; use mode "
                                            "hard or strict (soft and off rank without tiers), or level 0");
    }
  }
  for (const auto& [weight, name] :
       {std::pair{request.present_weight, "present_weight"}, {request.absent_weight, "absent_weight"}}) {
    if (!std::isfinite(weight) || weight < 0.0f) {
      fail(ErrorCode::kInvalidArgument,
           std::string(name) + " must be finite and >= 0 (0 = not used), got " + std::to_string(weight));
    }
    if (weight > 0.0f && !tiered) {
      fail(ErrorCode::kInvalidArgument, std::string(name) +
                                            ": confidence weights order items within logic tiers; use "
                                            "mode hard or strict (soft and off rank without tiers), or weight 0");
    }
  }
}

namespace {
bool wants_flags(const SearchRequest& request) noexcept {
  return request.present_level > 0 || request.absent_level > 0;
}

// Flags, or a weight with concepts on its side (ConfidenceWeights::active): either ranks inside
// tiers by more than similarity, so the search is exact.
bool wants_confidence(const SearchRequest& request) noexcept {
  return request.present_level > 0 || request.absent_level > 0 ||
         (request.present_weight > 0.0f && !request.required.empty()) ||
         (request.absent_weight > 0.0f && !request.forbidden.empty());
}
}  // namespace

Index::Prepared Index::prepare(const SearchRequest& request) const {
  Prepared prepared;
  prepared.request = &request;
  check_constraints(request);
  for (std::size_t i = 0; i < request.vectors.size(); ++i) {
    const QueryVector& term = request.vectors[i];
    const std::size_t id = space_index(term.space, "query");
    const VectorSpace& space = spaces_[id];
    if (term.values.size() != space.dim()) {
      fail(ErrorCode::kInvalidArgument, "query['" + term.space + "']: expected dimension " +
                                            std::to_string(space.dim()) + ", got " +
                                            std::to_string(term.values.size()));
    }
    if (!std::isfinite(term.weight))
      fail(ErrorCode::kInvalidArgument, "query['" + term.space + "']: weight must be finite");
    std::vector<float> normalised(space.dim());
    normalise_rows(term.values.data(), 1, space.dim(), "query['" + term.space + "']", normalised.data());
    prepared.space_ids.push_back(id);
    prepared.queries.push_back(space.prepare(normalised.data()));
    prepared.weights.push_back(term.weight);
    prepared.compact = prepared.compact || space.compact();
  }
  return prepared;
}

SearchResult Index::search(const SearchRequest& request) const {
  if (request.mode == SearchMode::kStrict) return search_strict(request);
  Prepared prepared = prepare(request);
  std::shared_lock lock(mutex_);
  bind(prepared);
  return run_prepared(prepared);
}

SearchResult Index::run_prepared(const Prepared& prepared) const {
  if (const AnnGraph* graph = approximate_graph(prepared)) return run_approximate(prepared, *graph);
  return run_search(prepared);
}

bool Index::absence_verified(std::int64_t slot, const std::vector<std::uint32_t>& forbidden) const noexcept {
  if (forbidden.empty()) return false;
  for (const std::uint32_t id : forbidden) {
    if (!not_has_[id].test(static_cast<std::size_t>(slot))) return false;
  }
  return true;
}

namespace {

strict::Row strict_row(const SearchResult& from, std::size_t i, bool verified) {
  return {from.slots[i],  from.tiers[i],
          verified,       from.confidence.empty() ? std::int8_t{0} : from.confidence[i],
          from.scores[i], from.rank_scores.empty() ? from.scores[i] : from.rank_scores[i]};
}

}  // namespace

// Strict's two hard searches merged by the one merge (strict_merge.hpp), both under one read
// lock, so a write cannot fall between them. Tier counts are the hard search's (the eligible items).
SearchResult Index::search_strict(const SearchRequest& request) const {
  SearchRequest hard = request;
  hard.mode = SearchMode::kHard;
  Prepared first = prepare(hard);
  Prepared verified_only = prepare(hard);
  std::shared_lock lock(mutex_);
  bind(first);
  SearchResult result = run_prepared(first);
  std::vector<strict::Row> hard_rows;
  for (std::size_t i = 0; i < result.slots.size(); ++i) {
    hard_rows.push_back(strict_row(result, i, absence_verified(result.slots[i], request.forbidden)));
  }
  if (!strict::needs_verified_search(!request.forbidden.empty(), hard_rows)) return result;
  bind(verified_only);  // the concept ids were checked by the first bind
  std::vector<std::uint64_t>& allow = verified_only.allow_words;
  if (allow.empty()) allow.assign(verified_only.word_count, ~std::uint64_t{0});
  for (std::size_t w = 0; w < verified_only.word_count; ++w) {
    for (const std::uint32_t id : request.forbidden) allow[w] &= not_has_[id].word(w);
  }
  verified_only.tiers.allow = allow.data();
  const SearchResult more = run_prepared(verified_only);
  std::vector<strict::Row> more_rows;
  for (std::size_t i = 0; i < more.slots.size(); ++i) more_rows.push_back(strict_row(more, i, true));

  SearchResult merged;
  merged.tier_counts = result.tier_counts;
  merged.scored = result.scored + more.scored;
  merged.reranked = result.reranked + more.reranked;
  merged.approximate = result.approximate || more.approximate;
  for (const strict::Row& row : strict::merge(std::move(hard_rows), more_rows, request.k)) {
    merged.slots.push_back(row.key);
    merged.tiers.push_back(row.tier);
    merged.scores.push_back(row.score);
    if (!result.confidence.empty()) merged.confidence.push_back(row.flags);
    if (!result.rank_scores.empty()) merged.rank_scores.push_back(row.rank_value);
  }
  return merged;
}

std::vector<SearchResult> Index::search(const std::vector<SearchRequest>& requests) const {
  std::vector<std::size_t> exact_ids;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    if (!wants_graph(requests[i])) exact_ids.push_back(i);
  }
  if (exact_ids.size() == requests.size()) return search_each(requests);
  // Approximate requests run one by one (a graph walk reads few rows); the exact rest of the
  // batch still goes through the tile product.
  std::vector<SearchResult> results(requests.size());
  std::vector<SearchRequest> exact_requests;
  exact_requests.reserve(exact_ids.size());
  for (std::size_t i : exact_ids) exact_requests.push_back(requests[i]);
  std::vector<SearchResult> exact_results = search_each(exact_requests);
  for (std::size_t j = 0; j < exact_ids.size(); ++j) results[exact_ids[j]] = std::move(exact_results[j]);
  for (std::size_t i = 0; i < requests.size(); ++i) {
    if (!wants_graph(requests[i])) continue;
    results[i] = search(requests[i]);
  }
  return results;
}

std::vector<SearchResult> Index::search_each(const std::vector<SearchRequest>& requests) const {
  if (requests.size() >= kMinTileBatch && batchable(requests)) return run_batch(requests);
  std::vector<SearchResult> results;
  results.reserve(requests.size());
  for (const SearchRequest& request : requests) results.push_back(search(request));
  return results;
}

void Index::bind(Prepared& prepared) const {
  // Constraint and allow-list checks need the current vocabulary and size: done under the lock.
  const SearchRequest& request = *prepared.request;
  auto resolve = [&](const std::vector<std::uint32_t>& ids, const char* argument, const std::vector<SlotBitmap>& from,
                     std::vector<const SlotBitmap*>* out) {
    for (std::uint32_t id : ids) {
      if (id >= has_.size()) {
        fail(ErrorCode::kOutOfRange, std::string(argument) + ": concept id " + std::to_string(id) +
                                         " is out of range [0, " + std::to_string(has_.size()) + ")");
      }
      out->push_back(&from[id]);
    }
  };
  TierTable::Sources& tiers = prepared.tiers;
  tiers = TierTable::Sources{};
  tiers.live = &live_;
  if (request.kind_mask == 1 || request.kind_mask == 2) {  // 0 or both bits: any kind
    tiers.kind = &visual_;
    tiers.kind_negated = request.kind_mask == 2;
  }
  resolve(request.required, "required", not_has_, &tiers.conflict);
  resolve(request.forbidden, "forbidden", has_, &tiers.conflict);
  resolve(request.required, "required", has_, &tiers.entailed);
  prepared.present_flags.clear();
  prepared.absent_flags.clear();
  if (request.present_level > 0)
    resolve(request.required, "required", present_[request.present_level - 1u], &prepared.present_flags);
  if (request.absent_level > 0)
    resolve(request.forbidden, "forbidden", absent_[request.absent_level - 1u], &prepared.absent_flags);
  prepared.weights_term = ConfidenceWeights();
  if (request.present_weight > 0.0f || request.absent_weight > 0.0f) {
    auto concepts = [&](const std::vector<std::uint32_t>& ids) {  // ids checked by resolve above
      std::vector<ConfidenceWeights::Concept> out;
      for (const std::uint32_t id : ids) out.push_back({&confidence_.column(id), &has_[id], &not_has_[id]});
      return out;
    };
    prepared.weights_term = ConfidenceWeights(concepts(request.required), concepts(request.forbidden),
                                              request.present_weight, request.absent_weight);
  }
  prepared.word_count = (size_ + 63) / 64;
  if (request.allow) {
    prepared.allow_words.assign(prepared.word_count, 0);
    for (const std::int64_t slot : *request.allow) {
      if (slot < 0 || static_cast<std::size_t>(slot) >= size_) {
        fail(ErrorCode::kOutOfRange,
             "allow: " + describe_slot(slot) + " is out of range [0, " + std::to_string(size_) + ")");
      }
      prepared.allow_words[static_cast<std::size_t>(slot) / 64] |= std::uint64_t{1} << (slot % 64);
    }
    tiers.allow = prepared.allow_words.data();
  }
  tiers.word_count = prepared.word_count;
}

std::array<std::int64_t, 3> Index::count_tiers(const Prepared& prepared) {
  return TierTable(prepared.tiers, false, active_kernels()).counts();
}

Index::TierChoice Index::choose_tiers(const SearchRequest& request,
                                      const std::array<std::int64_t, 3>& counts) noexcept {
  // Tier pruning: in hard mode, a lower tier can only reach the top k if the tiers above it
  // hold fewer than k items, so its vectors need not be read otherwise.
  TierChoice choice{!request.exclude_conflicts, true};
  if (request.mode == SearchMode::kHard) {
    const auto k = static_cast<std::int64_t>(request.k);
    if (counts[2] >= k) choice.conflict = choice.neutral = false;
    else if (counts[2] + counts[1] >= k) choice.conflict = false;
  }
  return choice;
}

namespace {

// Merges per-worker heaps and, when the scan ranked by bounds (a compact copy, or a batch
// product whose rounding differs from the single-query kernel), re-scores every candidate
// that could still be in the top k with `exact`, so the answer is the exact one.
template <typename ExactScore>
std::vector<Entry> finish_ranking(std::vector<Entry> merged, const std::vector<const std::vector<Entry>*>& candidates,
                                  bool by_bounds, const SearchRequest& request, ExactScore&& exact,
                                  const ConfidenceWeights& weights, std::int64_t* reranked) {
  std::sort(merged.begin(), merged.end(), ranks_before);
  if (by_bounds) {
    // The k-th best lower bound is a floor the true top k all reach, so every item whose
    // upper bound is below it is out; the rest are re-scored in fp32.
    const bool have_floor = merged.size() >= request.k;
    const Entry floor = have_floor ? merged[request.k - 1] : Entry{};
    std::vector<Entry> rescored;
    for (const auto* list : candidates) {
      for (const Entry& e : *list) {
        if (have_floor && (e.rank_tier < floor.rank_tier || (e.rank_tier == floor.rank_tier && e.upper < floor.key)))
          continue;
        const float score = exact(static_cast<std::size_t>(e.slot));
        const float rank_value = request.mode == SearchMode::kSoft
                                     ? score + request.soft_lambda * e.tier
                                     : score + weights.term(static_cast<std::size_t>(e.slot));
        rescored.push_back(Entry{e.rank_tier, e.tier, rank_value, rank_value, score, e.slot});
      }
    }
    *reranked = static_cast<std::int64_t>(rescored.size());
    std::sort(rescored.begin(), rescored.end(), ranks_before);
    merged.swap(rescored);
  }
  if (merged.size() > request.k) merged.resize(request.k);
  return merged;
}

// A hard-mode rank of run_search: tier * kFlagSpan + confidence flags (bit 1 confidently
// absent, bit 0 confidently present; 0 without confidence levels), so one int8 comparison
// orders (tier, flags) and `rank >> 2` is the tier (an arithmetic shift floors negatives).
constexpr int kFlagSpan = 4;
inline int tier_of_rank(int rank) noexcept { return rank >> 2; }

// `rank_scores`: the entries' keys are exact here (no bounds left after finish_ranking).
void fill_result(const std::vector<Entry>& ranked, SearchResult* result, bool confidence = false,
                 bool rank_scores = false) {
  for (const Entry& e : ranked) {
    result->slots.push_back(e.slot);
    result->tiers.push_back(e.tier);
    result->scores.push_back(e.score);
    if (confidence) result->confidence.push_back(static_cast<std::int8_t>(e.rank_tier & (kFlagSpan - 1)));
    if (rank_scores) result->rank_scores.push_back(e.key);
  }
}

// The slots of word `word` that are flagged: every listed bitmap has them (none listed: none).
inline std::uint64_t all_flagged(const std::vector<const SlotBitmap*>& bitmaps, std::size_t word) noexcept {
  if (bitmaps.empty()) return 0;
  std::uint64_t bits = ~std::uint64_t{0};
  for (const SlotBitmap* b : bitmaps) bits &= b->word(word);
  return bits;
}

}  // namespace

SearchResult Index::run_search(const Prepared& prepared) const {
  const SearchRequest& request = *prepared.request;
  SearchResult result;
  // One pass gives the counts (for pruning and threads) and the words the scan selects from
  // (3 bits per slot for the query's lifetime: 375 KB at 1M items).
  const TierTable table(prepared.tiers, true, active_kernels());
  result.tier_counts = table.counts();
  const TierChoice choice = choose_tiers(request, result.tier_counts);
  const bool take_conflict = choice.conflict;
  const bool take_neutral = choice.neutral;
  const std::int64_t to_score =
      result.tier_counts[2] + (take_neutral ? result.tier_counts[1] : 0) + (take_conflict ? result.tier_counts[0] : 0);
  const std::size_t wanted_threads = request.threads ? request.threads : threads_;
  const std::size_t workers = std::max<std::size_t>(
      1, std::min<std::size_t>(wanted_threads, static_cast<std::size_t>(to_score / kItemsPerThread)));

  const Kernels& kernels = active_kernels();
  const bool has_vectors = !prepared.queries.empty();
  const VectorSpace* single_space = prepared.queries.size() == 1 && !spaces_[prepared.space_ids[0]].config().multi
                                        ? &spaces_[prepared.space_ids[0]]
                                        : nullptr;
  std::vector<TopK> heaps(workers, TopK(request.k));
  std::vector<std::vector<Entry>> candidates(workers);
  std::vector<std::int64_t> scored(workers, 0);
  WordChunks chunks(prepared.word_count, workers);

  run_parallel(workers, [&](std::size_t worker) {
    TopK& heap = heaps[worker];
    std::vector<Entry>& kept = candidates[worker];
    std::int64_t reads = 0;
    // Slots are visited in slot order (so the hardware prefetcher sees a forward stream) and
    // the next selected item's row is prefetched while this one is scored (so sparse tiers do
    // not pay full memory latency per item).
    auto score_slot = [&](std::size_t slot, float* bound_sum) {
      float score = 0.0f;
      *bound_sum = 0.0f;
      if (single_space != nullptr) {
        if (!single_space->present(slot)) return 0.0f;
        if (!prepared.compact) return prepared.weights[0] * single_space->exact(prepared.queries[0], slot, kernels);
        float item_bound = 0.0f;
        score = prepared.weights[0] * single_space->estimate(prepared.queries[0], slot, kernels, &item_bound);
        *bound_sum = std::fabs(prepared.weights[0]) * item_bound;
        return score;
      }
      for (std::size_t q = 0; q < prepared.queries.size(); ++q) {
        const VectorSpace& space = spaces_[prepared.space_ids[q]];
        if (!space.present(slot)) continue;  // a missing vector contributes 0
        float item_bound = 0.0f;
        const float value = prepared.compact ? space.estimate(prepared.queries[q], slot, kernels, &item_bound)
                                             : space.exact(prepared.queries[q], slot, kernels);
        score += prepared.weights[q] * value;
        *bound_sum += std::fabs(prepared.weights[q]) * item_bound;
      }
      return score;
    };
    auto prefetch = [&](std::size_t slot) {
      for (std::size_t q = 0; q < prepared.queries.size(); ++q) spaces_[prepared.space_ids[q]].prefetch(slot);
    };
    const bool hard = request.mode == SearchMode::kHard;
    const bool confidence = wants_flags(request);
    const bool weighted = prepared.weights_term.active();
    // Selected items are gathered a block at a time so rows can be prefetched several items
    // ahead: sparse tiers would otherwise pay a full memory latency per item.
    constexpr std::size_t kBlock = 256;
    constexpr std::size_t kPrefetchDistance = 6;
    std::pair<std::size_t, std::int8_t> block[kBlock + 64];
    std::size_t block_size = 0;
    auto flush = [&] {
      // A dense block (most slots of its range selected) is a forward stream the hardware
      // prefetcher already covers; explicit prefetches only pay off for sparse selections.
      const bool sparse = block_size > 0 && (block[block_size - 1].first - block[0].first) > 2 * block_size;
      if (has_vectors && sparse) {
        for (std::size_t i = 0; i < std::min(kPrefetchDistance, block_size); ++i) prefetch(block[i].first);
      }
      for (std::size_t i = 0; i < block_size; ++i) {
        const auto [slot, code] = block[i];  // tier * kFlagSpan + flags
        const std::int8_t tier = static_cast<std::int8_t>(tier_of_rank(code));
        const std::int8_t rank_tier = hard ? code : 0;
        if (hard && heap.full() && rank_tier < heap.worst().rank_tier) continue;
        float score = 0.0f;
        float bound_sum = 0.0f;
        if (has_vectors) {
          if (sparse && i + kPrefetchDistance < block_size) prefetch(block[i + kPrefetchDistance].first);
          ++reads;
          score = score_slot(slot, &bound_sum);
        }
        float rank_value = request.mode == SearchMode::kSoft ? score + request.soft_lambda * tier : score;
        if (weighted) rank_value += prepared.weights_term.term(slot);  // exact: the bounds stay s_sem's
        const Entry entry{
            rank_tier, tier, rank_value - bound_sum, rank_value + bound_sum, score, static_cast<std::int64_t>(slot)};
        if (prepared.compact) {
          // Keep every item whose upper bound could still reach this worker's top k.
          const Entry optimistic{rank_tier, tier, entry.upper, entry.upper, score, entry.slot};
          if (heap.admits(optimistic)) kept.push_back(entry);
        }
        heap.push(entry);
      }
      block_size = 0;
    };
    std::size_t begin = 0, end = 0;
    while (chunks.next(&begin, &end)) {
      for (std::size_t w = begin; w < end; ++w) {
        const TierTable::Word t = table.word(w);
        std::uint64_t selected = t.entailed | (take_neutral ? t.neutral : 0) | (take_conflict ? t.conflict : 0);
        // A full heap of a better tier makes lower tiers unrankable: skip their vectors.
        if (hard && heap.full()) {
          const int worst_tier = tier_of_rank(heap.worst().rank_tier);
          if (worst_tier == kEntailed) selected &= t.entailed;
          else if (worst_tier == kNeutral) selected &= ~t.conflict;
        }
        // Confidence flags as rank bits: absent (bit 1) outranks present (bit 0) within a tier.
        const std::uint64_t absent = confidence ? all_flagged(prepared.absent_flags, w) : 0;
        const std::uint64_t present = confidence ? all_flagged(prepared.present_flags, w) : 0;
        while (selected) {
          const unsigned bit = static_cast<unsigned>(std::countr_zero(selected));
          selected &= selected - 1;
          const int tier = ((t.entailed >> bit) & 1u) ? kEntailed : ((t.conflict >> bit) & 1u) ? kConflict : kNeutral;
          const int flags = static_cast<int>(((absent >> bit) & 1u) << 1 | ((present >> bit) & 1u));
          block[block_size++] = {w * 64 + bit, static_cast<std::int8_t>(tier * kFlagSpan + flags)};
        }
        if (block_size >= kBlock) flush();
      }
    }
    flush();
    scored[worker] = reads;
  });

  std::vector<Entry> merged;
  for (auto& heap : heaps) merged.insert(merged.end(), heap.entries().begin(), heap.entries().end());
  for (std::int64_t s : scored) result.scored += s;
  std::vector<const std::vector<Entry>*> candidate_lists;
  for (const auto& list : candidates) candidate_lists.push_back(&list);
  auto exact = [&](std::size_t slot) {
    float score = 0.0f;
    for (std::size_t q = 0; q < prepared.queries.size(); ++q) {
      const VectorSpace& space = spaces_[prepared.space_ids[q]];
      if (space.present(slot)) score += prepared.weights[q] * space.exact(prepared.queries[q], slot, kernels);
    }
    return score;
  };
  fill_result(finish_ranking(std::move(merged), candidate_lists, prepared.compact, request, exact,
                             prepared.weights_term, &result.reranked),
              &result, wants_flags(request), prepared.weights_term.active());
  return result;
}

// ---- approximate search within tiers ---------------------------------------------------

bool Index::wants_graph(const SearchRequest& request) const noexcept {
  // Confidence flags split tiers further than the graph's per-tier walk does: searched exactly.
  if (request.exact || request.vectors.size() != 1 || wants_confidence(request)) return false;
  for (std::size_t i = 0; i < spaces_.size(); ++i) {
    if (spaces_[i].config().name == request.vectors[0].space)
      return graphs_[i] != nullptr && request.vectors[0].weight > 0.0f;
  }
  return false;  // unknown space: the exact path reports it
}

const AnnGraph* Index::approximate_graph(const Prepared& prepared) const noexcept {
  const SearchRequest& request = *prepared.request;
  // A negative weight ranks by the least similar, which a nearest-neighbour graph cannot find.
  if (request.exact || prepared.queries.size() != 1 || !(prepared.weights[0] > 0.0f) || wants_confidence(request)) {
    return nullptr;
  }
  return graphs_[prepared.space_ids[0]].get();
}

SearchResult Index::run_approximate(const Prepared& prepared, const AnnGraph& graph) const {
  const SearchRequest& request = *prepared.request;
  const AnnConfig& config = graph.config();
  const VectorSpace& space = spaces_[prepared.space_ids[0]];
  const SpaceQuery& query = prepared.queries[0];
  const float weight = prepared.weights[0];
  // A list of only k entries finds the k-th neighbour poorly: at least 2k.
  const std::size_t ef = std::max(request.ef_search ? request.ef_search : config.ef_search, 2 * request.k);
  const Kernels& kernels = active_kernels();
  // One pass over the bitmaps gives the counts, each walked group's filter and every hit's tier.
  const TierTable table(prepared.tiers, true, kernels);
  const std::array<std::int64_t, 3> counts = table.counts();
  const TierChoice choice = choose_tiers(request, counts);

  // Tiers searched as one: each tier apart where tiers rank apart (hard: logic first; soft: a
  // constant offset per tier, so a tier's share of the top k is that tier's own top by s_sem),
  // all of them together where they do not (off). Index 0 conflict, 1 neutral, 2 entailed.
  std::vector<std::array<bool, 3>> groups;
  if (request.mode == SearchMode::kOff) {
    groups.push_back({choice.conflict, choice.neutral, true});
  } else {
    groups.push_back({false, false, true});
    if (choice.neutral) groups.push_back({false, true, false});
    if (choice.conflict) groups.push_back({true, false, false});
  }
  auto group_size = [&](const std::array<bool, 3>& g) {
    return (g[0] ? counts[0] : 0) + (g[1] ? counts[1] : 0) + (g[2] ? counts[2] : 0);
  };
  // How a group is searched. A tier of at most max(exact_below, ef) items is scanned. Past
  // count^2 <= exact_factor * ef * m * N the cost model gives a tier to the scan too, for a tier
  // spread through the graph: a filtered walk meets its slots at their share of the graph. But a
  // tier of what the query asks about (an agent's question names its own topics) lies around the
  // query, and the walk fills its list in a few hundred rows: at 100,000 notes 0.11-0.29 ms where
  // the scan of a 3,000-20,000-note tier took 0.24-1.6 ms. Such a tier is walked within a
  // budget, count / kScanRowsPerWalkRow rows (a walk's row costs about as many scanned rows:
  // random reads, heap work), with kBudgetedWalkListFactor times the list; a walk that gives up
  // hands the tier back to the scan. Still scanned as before: a group that is the whole graph
  // (its walk is the unchecked one, which keeps no budget) and a tier whose budget is under the
  // walk's list (it could never fill it: count < 4 x 2 ef, once k or ef_search is large).
  // The graph holds exactly the live slots with a vector: a group holding every live slot
  // (no kind or allow-list limit, every non-empty tier in it) needs no filter on the walk.
  auto is_whole_graph = [&](const std::array<bool, 3>& g) {
    bool whole = !prepared.tiers.allow && !prepared.tiers.kind;
    for (int t = 0; t < 3; ++t) whole = whole && (g[t] || counts[t] == 0);
    return whole;
  };
  enum class Way { kScan, kBudgetedWalk, kWalk };
  auto way_for = [&](const std::array<bool, 3>& g) {
    const std::int64_t count = group_size(g);
    const double n = static_cast<double>(count);
    if (static_cast<std::size_t>(count) <= std::max(config.exact_below, ef)) return Way::kScan;
    if (n * n > config.exact_factor * static_cast<double>(ef) * static_cast<double>(config.m) *
                    static_cast<double>(graph.size()))
      return Way::kWalk;
    const bool fillable = static_cast<std::size_t>(count) / kScanRowsPerWalkRow >= kBudgetedWalkListFactor * ef;
    return fillable && !is_whole_graph(g) ? Way::kBudgetedWalk : Way::kScan;
  };
  std::vector<Way> ways;
  bool any_walk = false, only_budgeted = true;
  for (const auto& g : groups) {
    ways.push_back(way_for(g));
    any_walk = any_walk || ways.back() != Way::kScan;
    only_budgeted = only_budgeted && ways.back() != Way::kWalk;
  }
  // Every tier small: the exact search (threads, compact scans, pruning) is the right tool.
  if (!any_walk) return run_search(prepared);

  SearchResult result;
  result.tier_counts = counts;
  result.approximate = true;
  const bool hard = request.mode == SearchMode::kHard;
  auto entry_for = [&](std::size_t slot, std::int8_t tier, float score) {
    const float rank_value = request.mode == SearchMode::kSoft ? score + request.soft_lambda * tier : score;
    return Entry{static_cast<std::int8_t>(hard ? tier : 0),
                 tier,
                 rank_value,
                 rank_value,
                 score,
                 static_cast<std::int64_t>(slot)};
  };
  auto tier_of = [&](std::size_t slot) { return static_cast<std::int8_t>(table.tier_index(slot) - 1); };

  std::vector<Entry> merged;
  std::vector<std::uint64_t> union_words;
  for (std::size_t group = 0; group < groups.size(); ++group) {
    const std::array<bool, 3>& g = groups[group];
    const Way way = ways[group];
    const std::int64_t count = group_size(g);
    if (count == 0) continue;
    // The group's words: its one non-empty tier's own, or the union of several (mode off).
    int non_empty = 0, last_tier = 0;
    for (int t = 0; t < 3; ++t) {
      if (g[t] && counts[t] > 0) ++non_empty, last_tier = t;
    }
    const std::uint64_t* words = table.words(last_tier);
    if (non_empty > 1) {
      union_words.assign(prepared.word_count, 0);
      for (int t = 0; t < 3; ++t) {
        if (!g[t]) continue;
        const std::uint64_t* tier = table.words(t);
        for (std::size_t w = 0; w < prepared.word_count; ++w) union_words[w] |= tier[w];
      }
      words = union_words.data();
    }
    const bool whole_graph = is_whole_graph(g);
    TopK heap(request.k);
    auto scan_exactly = [&] {
      heap = TopK(request.k);
      for (std::size_t w = 0; w < prepared.word_count; ++w) {
        for (std::uint64_t bits = words[w]; bits; bits &= bits - 1) {
          const std::size_t slot = w * 64 + static_cast<std::size_t>(std::countr_zero(bits));
          float score = 0.0f;
          if (space.present(slot)) {
            score = weight * space.exact(query, slot, kernels);
            ++result.scored;
          }
          heap.push(entry_for(slot, tier_of(slot), score));
        }
      }
    };
    if (way == Way::kScan) {
      scan_exactly();
    } else {
      // The graph holds the items that have a vector; the tier's items without one score 0
      // and rank by slot, so its first k of them by slot are the only ones that can enter.
      // (Where every live item has a vector there are none: no pass.)
      std::size_t missing = 0;
      const bool none_missing = graph.size() == live_count_;
      for (std::size_t w = 0; w < prepared.word_count && missing < request.k && !none_missing; ++w) {
        for (std::uint64_t bits = words[w] & ~space.present_word(w); bits && missing < request.k; bits &= bits - 1) {
          const std::size_t slot = w * 64 + static_cast<std::size_t>(std::countr_zero(bits));
          heap.push(entry_for(slot, tier_of(slot), 0.0f));
          ++missing;
        }
      }
      // The walk ranks by the graph's int8 codes: its best 2k are scored again with the exact
      // path's kernel and the best k of those kept, so a near tie at the k-th place is decided
      // by the exact score (with only k taken, recall stopped at ~0.994 however large ef).
      const std::size_t candidates = std::min(ef, 2 * request.k);
      const std::size_t budget = way == Way::kBudgetedWalk
                                     ? std::max<std::size_t>(1, static_cast<std::size_t>(count) / kScanRowsPerWalkRow)
                                     : 0;
      bool gave_up = false;
      const std::size_t list = way == Way::kBudgetedWalk ? kBudgetedWalkListFactor * ef : ef;
      const auto found = graph.search(query.values.data(), candidates, list, whole_graph ? nullptr : words,
                                      prepared.word_count, budget, &gave_up);
      // Every tier the scan's: the exact search as a whole (threads, compact scans), as without the walk.
      if (gave_up && only_budgeted) return run_search(prepared);
      for (const auto& [slot, cosine] : found) space.prefetch_exact(slot);  // scattered rows: overlap their misses
      for (const auto& [slot, cosine] : found) {
        ++result.scored;
        heap.push(entry_for(slot, tier_of(slot), weight * space.exact(query, slot, kernels)));
      }
      // A walk that gave up hands its tier to the scan; one that found fewer than k of a tier
      // holding more (a tier cut off in the graph) would shorten the answer: the scan keeps its length.
      if (gave_up || found.size() + missing < std::min<std::size_t>(request.k, static_cast<std::size_t>(count)))
        scan_exactly();
    }
    merged.insert(merged.end(), heap.entries().begin(), heap.entries().end());
  }
  std::sort(merged.begin(), merged.end(), ranks_before);
  if (merged.size() > request.k) merged.resize(request.k);
  fill_result(merged, &result);
  return result;
}

void Index::save_ann(const std::string& space, const std::string& path) const {
  std::shared_lock lock(mutex_);
  const std::size_t id = space_index(space, "space");
  if (!graphs_[id]) fail(ErrorCode::kFailedPrecondition, "space '" + space + "' has no approximate index");
  graphs_[id]->save(path);
}

void Index::load_ann(const std::string& space, const std::string& path, const std::vector<std::int64_t>& new_of_old) {
  const std::size_t id = space_index(space, "space");
  if (!graphs_[id]) fail(ErrorCode::kFailedPrecondition, "space '" + space + "' has no approximate index");
  auto loaded = std::make_unique<AnnGraph>(spaces_[id].dim(), graphs_[id]->config());
  loaded->load(path);
  if (!new_of_old.empty()) loaded->relabel(new_of_old);
  std::unique_lock lock(mutex_);
  // The graph must index exactly the live slots holding a vector, or searches would miss items.
  std::vector<std::size_t> expected;
  for (std::size_t slot = 0; slot < size_; ++slot) {
    if (live_.test(slot) && spaces_[id].present(slot)) expected.push_back(slot);
  }
  if (loaded->slots() != expected) {
    fail(ErrorCode::kFailedPrecondition, "ann graph file " + path + " indexes other slots than space '" + space +
                                             "' holds (" + std::to_string(loaded->size()) + " vs " +
                                             std::to_string(expected.size()) + "); rebuild it instead");
  }
  graphs_[id] = std::move(loaded);
}

void Index::defer_ann() {
  std::unique_lock lock(mutex_);
  for (auto& graph : graphs_) {
    if (graph) graph->defer();
  }
}

std::size_t Index::ann_size(const std::string& space) const {
  std::shared_lock lock(mutex_);
  const std::size_t id = space_index(space, "space");
  return graphs_[id] ? graphs_[id]->size() : 0;
}

// ---- batch search -----------------------------------------------------------------------

bool Index::batchable(const std::vector<SearchRequest>& requests) const {
  const std::string& space = requests[0].vectors.empty() ? std::string() : requests[0].vectors[0].space;
  for (const SearchRequest& r : requests) {
    if (r.vectors.size() != 1 || r.vectors[0].space != space || wants_confidence(r) || r.mode == SearchMode::kStrict) {
      return false;
    }
  }
  for (const auto& s : spaces_) {
    if (s.config().name == space) return !s.config().multi;
  }
  return false;  // unknown space: the one-by-one path reports it
}

namespace {

// Requests with equal constraints share one tier pass and one selection of rows.
bool same_constraints(const SearchRequest& a, const SearchRequest& b) {
  const bool same_allow = a.allow == b.allow || (a.allow && b.allow && *a.allow == *b.allow);
  return a.required == b.required && a.forbidden == b.forbidden && a.k == b.k && a.mode == b.mode &&
         (a.mode != SearchMode::kSoft || a.soft_lambda == b.soft_lambda) &&
         a.exclude_conflicts == b.exclude_conflicts && a.kind_mask == b.kind_mask && same_allow;
}

constexpr std::int8_t kNotFull = -128;  // worst-tier sentinel of a heap with room left

}  // namespace

// Many queries of one single-vector space, each with its own constraints. The rows any query
// selects are taken kTileRows at a time and scored against every query of the batch with one
// register-blocked tile product (each row read once for the whole batch), and each query then
// keeps the rows its own tiers select. Products round differently from the single-query
// kernel, so they are ranked as bounds and the candidates re-scored exactly: the answer is
// identical to searching each request on its own.
std::vector<SearchResult> Index::run_batch(const std::vector<SearchRequest>& requests) const {
  const std::size_t query_count = requests.size();
  const std::size_t space_id = space_index(requests[0].vectors[0].space, "query");
  const VectorSpace& space = spaces_[space_id];
  const std::size_t dim = space.dim();

  // Validate and normalise every query, then group equal constraints.
  std::vector<float> normalised(query_count * dim);
  std::vector<std::size_t> group_of(query_count);
  std::vector<std::size_t> leaders;
  for (std::size_t q = 0; q < query_count; ++q) {
    const SearchRequest& r = requests[q];
    check_constraints(r);
    const QueryVector& term = r.vectors[0];
    const std::string where = "requests[" + std::to_string(q) + "].query['" + term.space + "']";
    if (term.values.size() != dim) {
      fail(ErrorCode::kInvalidArgument,
           where + ": expected dimension " + std::to_string(dim) + ", got " + std::to_string(term.values.size()));
    }
    if (!std::isfinite(term.weight)) fail(ErrorCode::kInvalidArgument, where + ": weight must be finite");
    normalise_rows(term.values.data(), 1, dim, where, normalised.data() + q * dim);
    std::size_t g = 0;
    while (g < leaders.size() && !same_constraints(requests[leaders[g]], r)) ++g;
    if (g == leaders.size()) leaders.push_back(q);
    group_of[q] = g;
  }
  const std::size_t group_count = leaders.size();
  // Columns are ordered by group so a group's queries are one contiguous column range.
  std::vector<std::size_t> column_of(query_count);
  std::vector<std::size_t> query_of_column;
  std::vector<std::size_t> group_begin(group_count + 1, 0);
  for (std::size_t g = 0; g < group_count; ++g) {
    group_begin[g] = query_of_column.size();
    for (std::size_t q = 0; q < query_count; ++q) {
      if (group_of[q] == g) {
        column_of[q] = query_of_column.size();
        query_of_column.push_back(q);
      }
    }
  }
  group_begin[group_count] = query_count;

  // Queries packed in panels of kPanelColumns (weights folded in, zero columns as padding).
  const std::size_t panel_count = (query_count + kPanelColumns - 1) / kPanelColumns;
  const std::size_t columns = panel_count * kPanelColumns;
  AlignedBuffer<float> panels(panel_count * dim * kPanelColumns);
  std::vector<float> abs_weight(query_count);
  std::vector<SpaceQuery> exact_queries;
  exact_queries.reserve(query_count);
  for (std::size_t c = 0; c < query_count; ++c) {
    const std::size_t q = query_of_column[c];
    const float weight = requests[q].vectors[0].weight;
    abs_weight[c] = std::fabs(weight);
    const std::size_t p = c / kPanelColumns, j = c % kPanelColumns;
    for (std::size_t i = 0; i < dim; ++i) panels[(p * dim + i) * kPanelColumns + j] = weight * normalised[q * dim + i];
    exact_queries.push_back(space.prepare(normalised.data() + q * dim));
  }

  std::vector<SearchRequest> group_requests;
  group_requests.reserve(group_count);
  for (std::size_t leader : leaders) {
    group_requests.push_back(requests[leader]);
    group_requests.back().vectors.clear();
  }
  std::vector<Prepared> groups;
  groups.reserve(group_count);
  for (const SearchRequest& r : group_requests) groups.push_back(prepare(r));

  std::shared_lock lock(mutex_);
  std::vector<std::array<std::int64_t, 3>> counts(group_count);
  std::vector<TierChoice> choices(group_count);
  std::int64_t widest = 0;
  for (std::size_t g = 0; g < group_count; ++g) {
    bind(groups[g]);
    counts[g] = count_tiers(groups[g]);
    choices[g] = choose_tiers(group_requests[g], counts[g]);
    widest = std::max(
        widest, counts[g][2] + (choices[g].neutral ? counts[g][1] : 0) + (choices[g].conflict ? counts[g][0] : 0));
  }
  const std::size_t word_count = (size_ + 63) / 64;
  std::size_t wanted_threads = 0;
  for (const SearchRequest& r : requests) wanted_threads = std::max(wanted_threads, r.threads);
  if (wanted_threads == 0) wanted_threads = threads_;
  // A batch row costs query_count products: split sooner than a single query does.
  const std::size_t workers = std::max<std::size_t>(
      1, std::min<std::size_t>(wanted_threads, static_cast<std::size_t>(widest) * query_count / kItemsPerThread));
  WordChunks chunks(word_count, workers);
  const Kernels& kernels = active_kernels();
  const bool compact = space.compact();

  struct WorkerState {
    std::vector<TopK> heaps;
    std::vector<std::vector<Entry>> kept;
    std::vector<std::int64_t> scored;  // per group
  };
  std::vector<WorkerState> states(workers);

  run_parallel(workers, [&](std::size_t worker) {
    WorkerState& state = states[worker];
    state.heaps.reserve(query_count);
    for (std::size_t c = 0; c < query_count; ++c) state.heaps.emplace_back(requests[query_of_column[c]].k);
    state.kept.resize(query_count);
    state.scored.assign(group_count, 0);
    // Each column's admission test, kept in plain arrays: the worst kept (tier, key), or
    // kNotFull while its heap has room.
    std::vector<float> worst_tier(query_count, kNotFull);  // a float so the test vectorises
    std::vector<float> worst_key(query_count, 0.0f);
    std::vector<std::uint8_t> passes(query_count, 0);
    AlignedBuffer<float> products(kTileRows * columns);
    // The tile's rows, contiguous: compact rows decoded, fp32 rows copied. The kernel then
    // broadcasts from L1 instead of from six scattered rows still in memory (measured on an
    // AVX-512 host: the copy made the fp32 batch as fast as the decoded compact ones).
    AlignedBuffer<float> decoded(kTileRows * dim);
    AlignedBuffer<float> zero_row(dim);
    std::size_t tile_slots[kTileRows];
    // Per tile row and group: 0 = not selected, else tier + 2.
    std::vector<std::int8_t> tile_codes(kTileRows * group_count);
    std::vector<std::uint64_t> selected(group_count);
    std::vector<TierTable::Word> words(group_count);
    std::size_t tile_size = 0;

    auto score_tile = [&] {
      const float* rows[kTileRows];
      float bounds[kTileRows];
      for (std::size_t r = 0; r < kTileRows; ++r) {
        bounds[r] = 0.0f;
        if (r >= tile_size || !space.present(tile_slots[r])) {
          rows[r] = zero_row.data();  // scores exactly 0, like a missing vector
          continue;
        }
        bounds[r] = space.batch_bound(tile_slots[r]);
        if (compact) {
          space.decode(tile_slots[r], decoded.data() + r * dim, kernels);
        } else {
          std::memcpy(decoded.data() + r * dim, space.row(tile_slots[r]), dim * sizeof(float));
        }
        rows[r] = decoded.data() + r * dim;
      }
      kernels.dot_f32_tile(rows, panels.data(), panel_count, dim, products.data());
      for (std::size_t r = 0; r < tile_size; ++r) {
        const std::int64_t slot = static_cast<std::int64_t>(tile_slots[r]);
        const float* row_products = products.data() + r * columns;
        for (std::size_t g = 0; g < group_count; ++g) {
          const std::int8_t code = tile_codes[r * group_count + g];
          if (code == 0) continue;
          ++state.scored[g];
          const SearchRequest& request = group_requests[g];
          const std::int8_t tier = static_cast<std::int8_t>(code - 2);
          const std::int8_t rank_tier = request.mode == SearchMode::kHard ? tier : 0;
          const float offset = request.mode == SearchMode::kSoft ? request.soft_lambda * tier : 0.0f;
          const float rank_tier_f = rank_tier;
          // The admission test first, branch-free over the group's columns (it vectorises):
          // most rows enter no heap once the heaps are full.
          const std::size_t first = group_begin[g], last = group_begin[g + 1];
          const float* __restrict products_of_row = row_products;
          const float* __restrict weights_of_column = abs_weight.data();
          const float* __restrict tiers_of_column = worst_tier.data();
          const float* __restrict keys_of_column = worst_key.data();
          std::uint8_t* __restrict pass_of_column = passes.data();
          const float row_bound = bounds[r];
          std::uint8_t any_pass = 0;
          for (std::size_t c = first; c < last; ++c) {
            const float upper = products_of_row[c] + offset + weights_of_column[c] * row_bound;
            // Slots arrive in ascending order, so an equal upper bound can never rank first.
            const std::uint8_t pass =
                static_cast<std::uint8_t>((rank_tier_f > tiers_of_column[c]) |
                                          ((rank_tier_f == tiers_of_column[c]) & (upper > keys_of_column[c])));
            pass_of_column[c] = pass;
            any_pass |= pass;
          }
          if (any_pass == 0) continue;
          for (std::size_t c = first; c < last; ++c) {
            if (!passes[c]) continue;
            const float score = row_products[c];
            const float value = request.mode == SearchMode::kSoft ? score + offset : score;
            const float bound = abs_weight[c] * bounds[r];
            const Entry entry{rank_tier, tier, value - bound, value + bound, score, slot};
            state.kept[c].push_back(entry);
            TopK& heap = state.heaps[c];
            heap.push(entry);
            if (heap.full()) {
              worst_tier[c] = heap.worst().rank_tier;
              worst_key[c] = heap.worst().key;
            }
          }
        }
      }
      tile_size = 0;
    };

    std::size_t begin = 0, end = 0;
    while (chunks.next(&begin, &end)) {
      for (std::size_t w = begin; w < end; ++w) {
        std::uint64_t any = 0;
        for (std::size_t g = 0; g < group_count; ++g) {
          const TierTable::Word t = TierTable::word_at(groups[g].tiers, w);
          std::uint64_t sel =
              t.entailed | (choices[g].neutral ? t.neutral : 0) | (choices[g].conflict ? t.conflict : 0);
          if (group_requests[g].mode == SearchMode::kHard) {
            // Tiers below every one of the group's full heaps cannot rank: skip them.
            float lowest = kEntailed;
            for (std::size_t c = group_begin[g]; c < group_begin[g + 1]; ++c) lowest = std::min(lowest, worst_tier[c]);
            if (lowest == kEntailed) sel &= t.entailed;
            else if (lowest == kNeutral) sel &= ~t.conflict;
          }
          words[g] = t;
          selected[g] = sel;
          any |= sel;
        }
        while (any) {
          const unsigned bit = static_cast<unsigned>(std::countr_zero(any));
          any &= any - 1;
          for (std::size_t g = 0; g < group_count; ++g) {
            std::int8_t code = 0;
            if ((selected[g] >> bit) & 1u) {
              const TierTable::Word& t = words[g];
              code = static_cast<std::int8_t>(2 + (((t.entailed >> bit) & 1u)   ? kEntailed
                                                   : ((t.conflict >> bit) & 1u) ? kConflict
                                                                                : kNeutral));
            }
            tile_codes[tile_size * group_count + g] = code;
          }
          tile_slots[tile_size++] = w * 64 + bit;
          if (tile_size == kTileRows) score_tile();
        }
      }
    }
    if (tile_size > 0) score_tile();
  });

  std::vector<SearchResult> results(query_count);
  for (std::size_t c = 0; c < query_count; ++c) {
    const std::size_t q = query_of_column[c];
    const std::size_t g = group_of[q];
    const SearchRequest& request = requests[q];
    SearchResult& result = results[q];
    result.tier_counts = counts[g];
    std::vector<Entry> merged;
    std::vector<const std::vector<Entry>*> candidate_lists;
    for (auto& state : states) {
      merged.insert(merged.end(), state.heaps[c].entries().begin(), state.heaps[c].entries().end());
      candidate_lists.push_back(&state.kept[c]);
      result.scored += state.scored[g];
    }
    const float weight = request.vectors[0].weight;
    auto exact = [&](std::size_t slot) {
      return space.present(slot) ? weight * space.exact(exact_queries[c], slot, kernels) : 0.0f;
    };
    // Batched requests carry no confidence weights (batchable): an inactive term.
    fill_result(
        finish_ranking(std::move(merged), candidate_lists, true, request, exact, ConfidenceWeights(), &result.reranked),
        &result);
  }
  return results;
}

// ---- introspection ----------------------------------------------------------------------

std::size_t Index::size() const {
  std::shared_lock lock(mutex_);
  return size_;
}

std::size_t Index::live_count() const {
  std::shared_lock lock(mutex_);
  return live_count_;
}

std::size_t Index::num_concepts() const {
  std::shared_lock lock(mutex_);
  return has_.size();
}

bool Index::is_live(std::int64_t slot) const {
  std::shared_lock lock(mutex_);
  return slot >= 0 && static_cast<std::size_t>(slot) < size_ && live_.test(static_cast<std::size_t>(slot));
}

std::vector<std::int64_t> Index::slots_with(const std::vector<std::uint32_t>& has,
                                            const std::vector<std::uint32_t>& not_has) const {
  std::shared_lock lock(mutex_);
  for (const auto* ids : {&has, &not_has}) {
    for (std::uint32_t id : *ids) {
      if (id >= has_.size()) {
        fail(ErrorCode::kOutOfRange, std::string(ids == &has ? "has" : "not_has") + ": concept id " +
                                         std::to_string(id) + " is out of range [0, " + std::to_string(has_.size()) +
                                         ")");
      }
    }
  }
  // Chunk by chunk: a chunk where a named concept was never stated holds none of the slots, so a
  // concept verified absent nowhere (answer mode asks that of every topic) costs no word reads.
  std::vector<std::int64_t> out;
  const std::size_t words = (size_ + 63) / 64;
  std::vector<const std::uint64_t*> named;
  for (std::size_t chunk = 0; chunk * SlotBitmap::kWordsPerChunk < words; ++chunk) {
    const std::uint64_t* live = live_.chunk(chunk);
    named.clear();
    for (std::uint32_t id : has) named.push_back(has_[id].chunk(chunk));
    for (std::uint32_t id : not_has) named.push_back(not_has_[id].chunk(chunk));
    if (live == nullptr || std::find(named.begin(), named.end(), nullptr) != named.end()) continue;
    const std::size_t first = chunk * SlotBitmap::kWordsPerChunk;
    const std::size_t end = std::min(words, first + SlotBitmap::kWordsPerChunk);
    for (std::size_t w = first; w < end; ++w) {
      std::uint64_t bits = live[w - first];
      for (const std::uint64_t* words_of : named) bits &= words_of[w - first];
      while (bits != 0) {
        out.push_back(static_cast<std::int64_t>(w * 64 + static_cast<std::size_t>(std::countr_zero(bits))));
        bits &= bits - 1;
      }
    }
  }
  return out;
}

std::vector<std::int8_t> Index::concept_states(const std::int64_t* slots, std::size_t count,
                                               const std::vector<std::uint32_t>& concepts) const {
  std::shared_lock lock(mutex_);
  for (std::uint32_t id : concepts) {
    if (id >= has_.size()) {
      fail(ErrorCode::kOutOfRange,
           "concepts: concept id " + std::to_string(id) + " is out of range [0, " + std::to_string(has_.size()) + ")");
    }
  }
  std::vector<std::int8_t> out(count * concepts.size(), 0);
  for (std::size_t i = 0; i < count; ++i) {
    if (slots[i] < 0 || static_cast<std::size_t>(slots[i]) >= size_) {
      fail(ErrorCode::kOutOfRange,
           "slots: " + describe_slot(slots[i]) + " is out of range [0, " + std::to_string(size_) + ")");
    }
    const auto slot = static_cast<std::size_t>(slots[i]);
    if (!live_.test(slot)) continue;
    for (std::size_t j = 0; j < concepts.size(); ++j) {
      const std::uint32_t id = concepts[j];
      out[i * concepts.size() + j] = has_[id].test(slot) ? 1 : not_has_[id].test(slot) ? -1 : 0;
    }
  }
  return out;
}

std::vector<SpaceConfig> Index::spaces() const {
  std::vector<SpaceConfig> out;
  for (const auto& s : spaces_) out.push_back(s.config());
  return out;
}

std::size_t Index::memory_bytes() const {
  std::shared_lock lock(mutex_);
  std::size_t total = live_.memory_bytes() + visual_.memory_bytes();
  for (const auto& s : spaces_) total += s.memory_bytes();
  for (const auto& g : graphs_) total += g ? g->memory_bytes() : 0;
  for (const auto& b : has_) total += b.memory_bytes() + sizeof(b);
  for (const auto& b : not_has_) total += b.memory_bytes() + sizeof(b);
  for (std::size_t level = 0; level < kConfidenceLevels; ++level) {
    for (const auto& b : present_[level]) total += b.memory_bytes() + sizeof(b);
    for (const auto& b : absent_[level]) total += b.memory_bytes() + sizeof(b);
  }
  total += confidence_.memory_bytes();
  return total;
}

}  // namespace polarmem
