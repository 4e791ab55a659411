#include "polarmem/index.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <mutex>
#include <thread>

#include "polarmem/error.hpp"

namespace polarmem {
namespace {

constexpr std::size_t kMaxDim = 65536;
// Below this many items to score, a second thread costs more than it saves.
constexpr std::int64_t kItemsPerThread = 16384;

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
  explicit TopK(std::size_t k) : k_(k) { entries_.reserve(k); }
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

std::string describe_slot(std::int64_t slot) { return "slot " + std::to_string(slot); }

}  // namespace

struct Index::TierWords {
  std::uint64_t conflict;
  std::uint64_t neutral;
  std::uint64_t entailed;
};

struct Index::Prepared {
  const SearchRequest* request = nullptr;
  std::vector<std::size_t> space_ids;
  std::vector<SpaceQuery> queries;
  std::vector<float> weights;
  std::vector<const SlotBitmap*> required_has;
  std::vector<const SlotBitmap*> required_not;
  std::vector<const SlotBitmap*> forbidden_has;
  std::vector<std::uint64_t> allow_words;
  std::size_t word_count = 0;
  bool compact = false;
};

Index::Index(std::vector<SpaceConfig> spaces, std::size_t threads)
    : threads_(threads == 0 ? std::max(1u, std::thread::hardware_concurrency()) : threads) {
  for (std::size_t i = 0; i < spaces.size(); ++i) {
    if (spaces[i].name.empty()) fail(ErrorCode::kInvalidArgument, "spaces[" + std::to_string(i) + "]: name must not be empty");
    if (spaces[i].dim > kMaxDim) {
      fail(ErrorCode::kInvalidArgument, "space '" + spaces[i].name + "': dim must be <= " + std::to_string(kMaxDim));
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (spaces[j].name == spaces[i].name) fail(ErrorCode::kInvalidArgument, "space '" + spaces[i].name + "' is declared twice");
    }
    spaces_.emplace_back(spaces[i]);
  }
}

// ---- validation -------------------------------------------------------------------------

std::size_t Index::space_index(const std::string& name, const std::string& argument) const {
  for (std::size_t i = 0; i < spaces_.size(); ++i) {
    if (spaces_[i].config().name == name) return i;
  }
  std::string known;
  for (const auto& s : spaces_) known += (known.empty() ? "" : ", ") + s.config().name;
  fail(ErrorCode::kInvalidArgument, argument + ": unknown vector space '" + name + "' (this index has: " +
                                        (known.empty() ? "none" : known) + ")");
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

void Index::check_live_slots(const std::int64_t* slots, std::size_t count, const std::string& argument) const {
  for (std::size_t i = 0; i < count; ++i) {
    if (slots[i] < 0 || static_cast<std::size_t>(slots[i]) >= size_) {
      fail(ErrorCode::kOutOfRange, argument + ": " + describe_slot(slots[i]) + " is out of range [0, " +
                                       std::to_string(size_) + ")");
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
    fail(ErrorCode::kInvalidArgument, where + ": expected dimension " + std::to_string(space.dim()) + ", got " +
                                          std::to_string(input.dim));
  }
  if (space.config().multi) {
    if (input.counts == nullptr) fail(ErrorCode::kInvalidArgument, where + ": a multi-vector space needs per-item counts");
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
    fail(ErrorCode::kInvalidArgument, where + ": expected " + std::to_string(count) + " rows (one per item), got " +
                                          std::to_string(input.rows));
  }
  normalised->assign(input.rows * input.dim, 0.0f);
  if (space.config().multi || input.present == nullptr) {
    normalise_rows(input.values, input.rows, input.dim, where, normalised->data());
    return;
  }
  for (std::size_t r = 0; r < input.rows; ++r) {
    if (input.present[r]) normalise_rows(input.values + r * input.dim, 1, input.dim, where + " item " + std::to_string(r),
                                         normalised->data() + r * input.dim);
  }
}

// ---- writes -----------------------------------------------------------------------------

void Index::apply_vectors(std::size_t space, const std::int64_t* slots, std::size_t first_slot, std::size_t count,
                          const VectorInput& input, const std::vector<float>& normalised) {
  VectorSpace& target = spaces_[space];
  std::size_t row = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t slot = slots ? static_cast<std::size_t>(slots[i]) : first_slot + i;
    if (target.config().multi) {
      const std::size_t n = static_cast<std::size_t>(input.counts[i]);
      target.assign(slot, normalised.data() + row * input.dim, n);
      row += n;
    } else if (input.present == nullptr || input.present[i]) {
      target.assign(slot, normalised.data() + i * input.dim, 1);
    } else {
      target.clear(slot);
    }
  }
}

void Index::apply_concepts(std::size_t slot, ConceptLists has, ConceptLists not_has, std::size_t item, bool clear_old) {
  if (clear_old) {
    for (auto& bitmap : has_) bitmap.reset(slot);
    for (auto& bitmap : not_has_) bitmap.reset(slot);
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
          fail(ErrorCode::kInvalidArgument, "concept id " + std::to_string(has.ids[p]) + " is in both has and not_has of item " +
                                                std::to_string(i) + "; an item states a concept at most once");
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
      fail(ErrorCode::kInvalidArgument, "kinds: item " + std::to_string(i) + " has kind " + std::to_string(kind) +
                                            "; use 1 (visual) or 2 (text)");
    }
  }
  // Normalise outside the lock: space configurations never change after construction.
  std::vector<std::vector<float>> normalised(batch.vectors.size());
  std::vector<std::size_t> space_ids(batch.vectors.size());
  for (std::size_t v = 0; v < batch.vectors.size(); ++v) {
    space_ids[v] = space_index(batch.vectors[v].space, "vectors");
    for (std::size_t u = 0; u < v; ++u) {
      if (space_ids[u] == space_ids[v]) fail(ErrorCode::kInvalidArgument, "vectors: space '" + batch.vectors[v].space + "' given twice");
    }
    validate_vectors(batch.vectors[v], batch.count, "vectors", &normalised[v]);
  }
  check_disjoint(batch.has, batch.not_has, batch.count);

  std::unique_lock lock(mutex_);
  check_concepts(batch.has, batch.count, "has");
  check_concepts(batch.not_has, batch.count, "not_has");
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
    apply_concepts(slot, batch.has, batch.not_has, i, false);
  }
  size_ = end;
  live_count_ += batch.count;
  return static_cast<std::int64_t>(first);
}

void Index::set_concepts(const std::int64_t* slots, std::size_t count, ConceptLists has, ConceptLists not_has) {
  check_disjoint(has, not_has, count);
  std::unique_lock lock(mutex_);
  check_live_slots(slots, count, "slots");
  check_concepts(has, count, "has");
  check_concepts(not_has, count, "not_has");
  for (std::size_t i = 0; i < count; ++i) apply_concepts(static_cast<std::size_t>(slots[i]), has, not_has, i, true);
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
  visual_ = remap(visual_);
  live_ = remap(live_);
  for (auto& space : spaces_) space.compact_slots(new_of_old, next);
  size_ = next;
  live_count_ = next;
  return new_of_old;
}

void Index::ensure_concepts(std::size_t count) {
  std::unique_lock lock(mutex_);
  if (count > has_.size()) {
    has_.resize(count);
    not_has_.resize(count);
  }
}

// ---- search -----------------------------------------------------------------------------

Index::Prepared Index::prepare(const SearchRequest& request) const {
  Prepared prepared;
  prepared.request = &request;
  if (request.k == 0) fail(ErrorCode::kInvalidArgument, "k must be >= 1");
  if (request.mode != SearchMode::kOff && request.mode != SearchMode::kHard && request.mode != SearchMode::kSoft) {
    fail(ErrorCode::kInvalidArgument, "mode must be off, hard or soft");
  }
  if (!std::isfinite(request.soft_lambda)) fail(ErrorCode::kInvalidArgument, "soft_lambda must be finite");
  if (request.kind_mask > 3) fail(ErrorCode::kInvalidArgument, "kind_mask must be 0 (any), 1 (visual), 2 (text) or 3 (both)");
  for (std::size_t i = 0; i < request.vectors.size(); ++i) {
    const QueryVector& term = request.vectors[i];
    const std::size_t id = space_index(term.space, "query");
    const VectorSpace& space = spaces_[id];
    if (term.dim != space.dim()) {
      fail(ErrorCode::kInvalidArgument, "query['" + term.space + "']: expected dimension " + std::to_string(space.dim()) +
                                            ", got " + std::to_string(term.dim));
    }
    if (!std::isfinite(term.weight)) fail(ErrorCode::kInvalidArgument, "query['" + term.space + "']: weight must be finite");
    std::vector<float> normalised(term.dim);
    normalise_rows(term.values, 1, term.dim, "query['" + term.space + "']", normalised.data());
    prepared.space_ids.push_back(id);
    prepared.queries.push_back(space.prepare(normalised.data()));
    prepared.weights.push_back(term.weight);
    prepared.compact = prepared.compact || space.compact();
  }
  return prepared;
}

Index::TierWords Index::tier_words(const Prepared& prepared, std::size_t word) const noexcept {
  const SearchRequest& request = *prepared.request;
  std::uint64_t eligible = live_.word(word);
  if (request.kind_mask == 1) eligible &= visual_.word(word);
  else if (request.kind_mask == 2) eligible &= ~visual_.word(word);
  if (request.use_allow) eligible &= prepared.allow_words[word];
  std::uint64_t conflict = 0;
  std::uint64_t entailed = 0;
  for (const SlotBitmap* b : prepared.required_not) conflict |= b->word(word);
  for (const SlotBitmap* b : prepared.forbidden_has) conflict |= b->word(word);
  for (const SlotBitmap* b : prepared.required_has) entailed |= b->word(word);
  conflict &= eligible;
  entailed &= eligible & ~conflict;
  return {conflict, eligible & ~conflict & ~entailed, entailed};
}

SearchResult Index::search(const SearchRequest& request) const {
  Prepared prepared = prepare(request);
  std::shared_lock lock(mutex_);
  bind(prepared);
  return run_search(prepared);
}

void Index::bind(Prepared& prepared) const {
  // Constraint and allow-list checks need the current vocabulary and size: done under the lock.
  const SearchRequest& request = *prepared.request;
  auto resolve = [&](const std::vector<std::uint32_t>& ids, const char* argument, const std::vector<SlotBitmap>& from,
                     std::vector<const SlotBitmap*>* out) {
    out->clear();
    for (std::uint32_t id : ids) {
      if (id >= has_.size()) {
        fail(ErrorCode::kOutOfRange, std::string(argument) + ": concept id " + std::to_string(id) + " is out of range [0, " +
                                         std::to_string(has_.size()) + ")");
      }
      out->push_back(&from[id]);
    }
  };
  resolve(request.required, "required", has_, &prepared.required_has);
  resolve(request.required, "required", not_has_, &prepared.required_not);
  resolve(request.forbidden, "forbidden", has_, &prepared.forbidden_has);
  prepared.word_count = (size_ + 63) / 64;
  if (request.use_allow) {
    prepared.allow_words.assign(prepared.word_count, 0);
    for (std::size_t i = 0; i < request.allow_count; ++i) {
      const std::int64_t slot = request.allow[i];
      if (slot < 0 || static_cast<std::size_t>(slot) >= size_) {
        fail(ErrorCode::kOutOfRange, "allow: " + describe_slot(slot) + " is out of range [0, " + std::to_string(size_) + ")");
      }
      prepared.allow_words[static_cast<std::size_t>(slot) / 64] |= std::uint64_t{1} << (slot % 64);
    }
  }
}

std::array<std::int64_t, 3> Index::count_tiers(const Prepared& prepared) const noexcept {
  std::array<std::int64_t, 3> counts{0, 0, 0};
  for (std::size_t w = 0; w < prepared.word_count; ++w) {
    const TierWords t = tier_words(prepared, w);
    counts[0] += std::popcount(t.conflict);
    counts[1] += std::popcount(t.neutral);
    counts[2] += std::popcount(t.entailed);
  }
  return counts;
}

Index::TierChoice Index::choose_tiers(const SearchRequest& request, const std::array<std::int64_t, 3>& counts) noexcept {
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

SearchResult Index::run_search(const Prepared& prepared) const {
  const SearchRequest& request = *prepared.request;
  SearchResult result;
  result.tier_counts = count_tiers(prepared);
  const TierChoice choice = choose_tiers(request, result.tier_counts);
  const bool take_conflict = choice.conflict;
  const bool take_neutral = choice.neutral;
  const std::int64_t to_score = result.tier_counts[2] + (take_neutral ? result.tier_counts[1] : 0) +
                                (take_conflict ? result.tier_counts[0] : 0);
  const std::size_t wanted_threads = request.threads ? request.threads : threads_;
  const std::size_t workers = std::max<std::size_t>(
      1, std::min<std::size_t>(wanted_threads, static_cast<std::size_t>(to_score / kItemsPerThread)));

  const Kernels& kernels = active_kernels();
  const bool has_vectors = !prepared.queries.empty();
  const VectorSpace* single_space =
      prepared.queries.size() == 1 && !spaces_[prepared.space_ids[0]].config().multi ? &spaces_[prepared.space_ids[0]] : nullptr;
  std::vector<TopK> heaps(workers, TopK(request.k));
  std::vector<std::vector<Entry>> candidates(workers);
  std::vector<std::int64_t> scored(workers, 0);
  const std::size_t words_per_worker = (prepared.word_count + workers - 1) / workers;

  run_parallel(workers, [&](std::size_t worker) {
    TopK& heap = heaps[worker];
    std::vector<Entry>& kept = candidates[worker];
    std::int64_t reads = 0;
    const std::size_t begin = worker * words_per_worker;
    const std::size_t end = std::min(prepared.word_count, begin + words_per_worker);
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
    // Selected items are gathered a block at a time so rows can be prefetched several items
    // ahead: sparse tiers would otherwise pay a full memory latency per item.
    constexpr std::size_t kBlock = 256;
    constexpr std::size_t kPrefetchDistance = 6;
    std::pair<std::size_t, std::int8_t> block[kBlock + 64];
    std::size_t block_size = 0;
    auto flush = [&] {
      if (has_vectors) {
        for (std::size_t i = 0; i < std::min(kPrefetchDistance, block_size); ++i) prefetch(block[i].first);
      }
      for (std::size_t i = 0; i < block_size; ++i) {
        const auto [slot, tier] = block[i];
        const std::int8_t rank_tier = hard ? tier : 0;
        if (hard && heap.full() && rank_tier < heap.worst().rank_tier) continue;
        float score = 0.0f;
        float bound_sum = 0.0f;
        if (has_vectors) {
          if (i + kPrefetchDistance < block_size) prefetch(block[i + kPrefetchDistance].first);
          ++reads;
          score = score_slot(slot, &bound_sum);
        }
        const float rank_value = request.mode == SearchMode::kSoft ? score + request.soft_lambda * tier : score;
        const Entry entry{rank_tier, tier, rank_value - bound_sum, rank_value + bound_sum, score,
                          static_cast<std::int64_t>(slot)};
        if (prepared.compact) {
          // Keep every item whose upper bound could still reach this worker's top k.
          const Entry optimistic{rank_tier, tier, entry.upper, entry.upper, score, entry.slot};
          if (heap.admits(optimistic)) kept.push_back(entry);
        }
        heap.push(entry);
      }
      block_size = 0;
    };
    for (std::size_t w = begin; w < end; ++w) {
      const TierWords t = tier_words(prepared, w);
      std::uint64_t selected = t.entailed | (take_neutral ? t.neutral : 0) | (take_conflict ? t.conflict : 0);
      // A full heap of a better tier makes lower tiers unrankable: skip their vectors.
      if (hard && heap.full()) {
        const int worst_tier = heap.worst().rank_tier;
        if (worst_tier == kEntailed) selected &= t.entailed;
        else if (worst_tier == kNeutral) selected &= ~t.conflict;
      }
      while (selected) {
        const unsigned bit = static_cast<unsigned>(std::countr_zero(selected));
        selected &= selected - 1;
        const std::int8_t tier = static_cast<std::int8_t>(((t.entailed >> bit) & 1u) ? kEntailed
                                                          : ((t.conflict >> bit) & 1u) ? kConflict
                                                                                       : kNeutral);
        block[block_size++] = {w * 64 + bit, tier};
      }
      if (block_size >= kBlock) flush();
    }
    flush();
    scored[worker] = reads;
  });

  std::vector<Entry> merged;
  for (auto& heap : heaps) merged.insert(merged.end(), heap.entries().begin(), heap.entries().end());
  std::sort(merged.begin(), merged.end(), ranks_before);
  for (std::int64_t s : scored) result.scored += s;

  if (prepared.compact) {
    // Exact re-rank: the k-th best lower bound is a floor the true top k all reach, so every
    // item whose upper bound is below it is out; the rest are re-scored in fp32.
    const bool have_floor = merged.size() >= request.k;
    const Entry floor = have_floor ? merged[request.k - 1] : Entry{};
    std::vector<Entry> exact;
    for (auto& list : candidates) {
      for (const Entry& e : list) {
        if (have_floor && (e.rank_tier < floor.rank_tier || (e.rank_tier == floor.rank_tier && e.upper < floor.key))) continue;
        float score = 0.0f;
        for (std::size_t q = 0; q < prepared.queries.size(); ++q) {
          const VectorSpace& space = spaces_[prepared.space_ids[q]];
          if (space.present(static_cast<std::size_t>(e.slot))) {
            score += prepared.weights[q] * space.exact(prepared.queries[q], static_cast<std::size_t>(e.slot), kernels);
          }
        }
        const float rank_value = request.mode == SearchMode::kSoft ? score + request.soft_lambda * e.tier : score;
        exact.push_back(Entry{e.rank_tier, e.tier, rank_value, rank_value, score, e.slot});
      }
    }
    result.reranked = static_cast<std::int64_t>(exact.size());
    std::sort(exact.begin(), exact.end(), ranks_before);
    merged.swap(exact);
  }
  if (merged.size() > request.k) merged.resize(request.k);
  for (const Entry& e : merged) {
    result.slots.push_back(e.slot);
    result.tiers.push_back(e.tier);
    result.scores.push_back(e.score);
  }
  return result;
}

std::vector<SearchResult> Index::search_batch(const SearchRequest& shared, const std::string& space_name,
                                              const float* queries, std::size_t query_count, std::size_t dim) const {
  SearchRequest constraints = shared;
  constraints.vectors.clear();
  Prepared prepared = prepare(constraints);
  const std::size_t space_id = space_index(space_name, "queries");
  const VectorSpace& space = spaces_[space_id];
  if (space.config().multi) fail(ErrorCode::kInvalidArgument, "queries: batch search needs a single-vector space");
  if (dim != space.dim()) {
    fail(ErrorCode::kInvalidArgument, "queries: expected dimension " + std::to_string(space.dim()) + ", got " + std::to_string(dim));
  }
  std::vector<float> normalised(query_count * dim);
  normalise_rows(queries, query_count, dim, "queries", normalised.data());

  std::shared_lock lock(mutex_);
  bind(prepared);
  // The tier pass, counts and pruning decisions are shared by every query of the batch.
  const std::array<std::int64_t, 3> counts = count_tiers(prepared);
  const TierChoice choice = choose_tiers(shared, counts);
  const bool take_conflict = choice.conflict;
  const bool take_neutral = choice.neutral;
  const std::size_t workers = std::max<std::size_t>(1, shared.threads ? shared.threads : threads_);
  const std::size_t words_per_worker = (prepared.word_count + workers - 1) / workers;
  const Kernels& kernels = active_kernels();
  std::vector<std::vector<TopK>> heaps(workers, std::vector<TopK>(query_count, TopK(shared.k)));

  run_parallel(workers, [&](std::size_t worker) {
    // Items are taken in blocks small enough to stay in L2 while every query reads them.
    constexpr std::size_t kBlock = 128;
    std::vector<std::pair<std::size_t, std::int8_t>> block;
    block.reserve(kBlock + 64);
    auto flush = [&] {
      for (std::size_t q = 0; q < query_count; ++q) {
        TopK& heap = heaps[worker][q];
        const float* query = normalised.data() + q * dim;
        for (const auto& [slot, tier] : block) {
          const std::int8_t rank_tier = shared.mode == SearchMode::kHard ? tier : 0;
          if (heap.full() && rank_tier < heap.worst().rank_tier) continue;
          const float score = space.present(slot) ? kernels.dot_f32(query, space.row(slot), dim) : 0.0f;
          const float rank_value = shared.mode == SearchMode::kSoft ? score + shared.soft_lambda * tier : score;
          heap.push(Entry{rank_tier, tier, rank_value, rank_value, score, static_cast<std::int64_t>(slot)});
        }
      }
      block.clear();
    };
    const std::size_t begin = worker * words_per_worker;
    const std::size_t end = std::min(prepared.word_count, begin + words_per_worker);
    for (std::size_t w = begin; w < end; ++w) {
      const TierWords t = tier_words(prepared, w);
      const std::uint64_t groups[3] = {t.entailed, take_neutral ? t.neutral : 0, take_conflict ? t.conflict : 0};
      for (int g = 0; g < 3; ++g) {
        std::uint64_t bits = groups[g];
        while (bits) {
          block.emplace_back(w * 64 + static_cast<std::size_t>(std::countr_zero(bits)), static_cast<std::int8_t>(kEntailed - g));
          bits &= bits - 1;
        }
      }
      if (block.size() >= kBlock) flush();
    }
    flush();
  });

  std::vector<SearchResult> results(query_count);
  for (std::size_t q = 0; q < query_count; ++q) {
    std::vector<Entry> merged;
    for (std::size_t w = 0; w < workers; ++w) {
      auto& entries = heaps[w][q].entries();
      merged.insert(merged.end(), entries.begin(), entries.end());
    }
    std::sort(merged.begin(), merged.end(), ranks_before);
    if (merged.size() > shared.k) merged.resize(shared.k);
    SearchResult& r = results[q];
    r.tier_counts = counts;
    for (const Entry& e : merged) {
      r.slots.push_back(e.slot);
      r.tiers.push_back(e.tier);
      r.scores.push_back(e.score);
    }
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
        fail(ErrorCode::kOutOfRange, std::string(ids == &has ? "has" : "not_has") + ": concept id " + std::to_string(id) +
                                         " is out of range [0, " + std::to_string(has_.size()) + ")");
      }
    }
  }
  std::vector<std::int64_t> out;
  const std::size_t words = (size_ + 63) / 64;
  for (std::size_t w = 0; w < words; ++w) {
    std::uint64_t bits = live_.word(w);
    for (std::uint32_t id : has) bits &= has_[id].word(w);
    for (std::uint32_t id : not_has) bits &= not_has_[id].word(w);
    while (bits != 0) {
      out.push_back(static_cast<std::int64_t>(w * 64 + static_cast<std::size_t>(std::countr_zero(bits))));
      bits &= bits - 1;
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
  for (const auto& b : has_) total += b.memory_bytes() + sizeof(b);
  for (const auto& b : not_has_) total += b.memory_bytes() + sizeof(b);
  return total;
}

}  // namespace polarmem
