// Index behaviour in plain C++: tiers, pruning, compact storage exactness, compaction, errors,
// and searches running while a writer mutates the index.
#include <algorithm>
#include <atomic>
#include <bit>
#include <memory>
#include <random>
#include <thread>

#include "check.hpp"
#include "polarmem/aligned_buffer.hpp"
#include "polarmem/error.hpp"
#include "polarmem/index.hpp"
#include "polarmem/metadata_postings.hpp"
#include "polarmem/prefetch.hpp"
#include "polarmem/simd.hpp"
#include "polarmem/slot_bitmap.hpp"
#include "polarmem/tier_table.hpp"

using namespace polarmem;

namespace {

struct Fixture {
  std::size_t n, d, vocab;
  std::vector<float> vectors;
  std::vector<std::uint8_t> kinds;
  std::vector<std::int64_t> has_ptr{0}, not_ptr{0};
  std::vector<std::uint32_t> has_ids, not_ids;

  Fixture(std::size_t n_, std::size_t d_, std::size_t vocab_, unsigned seed) : n(n_), d(d_), vocab(vocab_) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> g(0.0f, 1.0f);
    std::uniform_int_distribution<int> state(0, 3);  // 0 has, 1 not, 2-3 unknown
    vectors.resize(n * d);
    for (auto& x : vectors) x = g(rng);
    for (std::size_t i = 0; i < n; ++i) {
      kinds.push_back(i % 3 == 0 ? 2 : 1);
      for (std::uint32_t c = 0; c < vocab; ++c) {
        const int s = state(rng);
        if (s == 0) has_ids.push_back(c);
        if (s == 1) not_ids.push_back(c);
      }
      has_ptr.push_back(static_cast<std::int64_t>(has_ids.size()));
      not_ptr.push_back(static_cast<std::int64_t>(not_ids.size()));
    }
  }

  ItemBatch batch(const std::string& space) const {
    ItemBatch b;
    b.count = n;
    b.kinds = kinds.data();
    VectorInput v;
    v.space = space;
    v.values = vectors.data();
    v.rows = n;
    v.dim = d;
    b.vectors.push_back(v);
    b.has = {has_ptr.data(), has_ids.data()};
    b.not_has = {not_ptr.data(), not_ids.data()};
    return b;
  }
};

std::unique_ptr<Index> make_index(Storage storage, const Fixture& f) {
  auto index = std::make_unique<Index>(std::vector<SpaceConfig>{SpaceConfig{"vis", f.d, false, storage}}, 2);
  index->ensure_concepts(f.vocab);
  index->add(f.batch("vis"));
  return index;
}

SearchRequest request_for(const std::vector<float>& q, std::size_t k, SearchMode mode) {
  SearchRequest r;
  r.vectors.push_back(QueryVector{"vis", q, 1.0f});
  r.k = k;
  r.mode = mode;
  r.required = {1, 4};
  r.forbidden = {2};
  return r;
}

bool same_result(const SearchResult& a, const SearchResult& b) {
  return a.slots == b.slots && a.tiers == b.tiers && a.scores == b.scores && a.tier_counts == b.tier_counts;
}

}  // namespace

POLARMEM_TEST(hard_mode_orders_by_tier_then_score) {
  Fixture f(3000, 17, 8, 1);
  auto index_ptr = make_index(Storage::kF32, f);
  Index& index = *index_ptr;
  std::vector<float> q(f.vectors.begin(), f.vectors.begin() + 17);
  auto r = index.search(request_for(q, 50, SearchMode::kHard));
  CHECK(r.slots.size() == 50);
  for (std::size_t i = 1; i < r.slots.size(); ++i) {
    CHECK(r.tiers[i - 1] > r.tiers[i] || (r.tiers[i - 1] == r.tiers[i] && r.scores[i - 1] >= r.scores[i]));
  }
  CHECK(r.tier_counts[0] + r.tier_counts[1] + r.tier_counts[2] == 3000);
}

POLARMEM_TEST(strict_mode_is_hard_with_verified_absence_first_in_each_tier) {
  // Against a brute-force order over every slot: (tier, every forbidden concept NOT_HAS, s_sem,
  // slot), with s_sem read back from an off search of all items; a k small enough that the
  // hard top k alone misses verified items (the second search and the merge run) and one that
  // takes everything. Tier counts are hard's.
  Fixture f(4000, 17, 8, 11);
  auto index_ptr = make_index(Storage::kF32, f);
  Index& index = *index_ptr;
  std::vector<float> q(f.vectors.begin() + 17, f.vectors.begin() + 34);
  SearchRequest all = request_for(q, kMaxTopK, SearchMode::kOff);
  const SearchResult every = index.search(all);
  std::vector<float> score(f.n);
  std::vector<int> tier(f.n);
  for (std::size_t i = 0; i < every.slots.size(); ++i) {
    score[static_cast<std::size_t>(every.slots[i])] = every.scores[i];
    tier[static_cast<std::size_t>(every.slots[i])] = every.tiers[i];
  }
  auto verified = [&](std::size_t slot) {  // forbidden = {2}: NOT_HAS 2
    for (std::int64_t p = f.not_ptr[slot]; p < f.not_ptr[slot + 1]; ++p)
      if (f.not_ids[static_cast<std::size_t>(p)] == 2) return true;
    return false;
  };
  std::vector<std::size_t> order(f.n);
  for (std::size_t i = 0; i < f.n; ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    if (tier[a] != tier[b]) return tier[a] > tier[b];
    if (verified(a) != verified(b)) return verified(a);
    if (score[a] != score[b]) return score[a] > score[b];
    return a < b;
  });
  for (std::size_t k : {std::size_t{7}, std::size_t{60}, f.n}) {
    const SearchResult strict = index.search(request_for(q, k, SearchMode::kStrict));
    const SearchResult hard = index.search(request_for(q, k, SearchMode::kHard));
    CHECK(strict.slots.size() == std::min(k, f.n));
    for (std::size_t i = 0; i < strict.slots.size(); ++i) CHECK(static_cast<std::size_t>(strict.slots[i]) == order[i]);
    CHECK(strict.tier_counts == hard.tier_counts);
    if (k == 7) CHECK(strict.slots != hard.slots);  // the merge changed the answer
  }
  // No forbidden concept: nothing to verify, strict is hard.
  SearchRequest none = request_for(q, 25, SearchMode::kStrict);
  none.forbidden.clear();
  SearchRequest none_hard = none;
  none_hard.mode = SearchMode::kHard;
  CHECK(same_result(index.search(none), index.search(none_hard)));
}

POLARMEM_TEST(metadata_postings_match_every_pair_and_follow_writes_and_compaction) {
  MetadataPostings postings;
  const MetadataPair red{"colour", "red"}, blue{"colour", "blue"}, big{"size", "big"};
  for (std::int64_t slot = 0; slot < 10; ++slot) {
    postings.add(slot, {slot % 2 ? red : blue});
    if (slot % 3 == 0) postings.add(slot, {big});
  }
  using Slots = std::vector<std::int64_t>;
  CHECK(postings.matching({red}) == (Slots{1, 3, 5, 7, 9}));
  CHECK(postings.matching({red, big}) == (Slots{3, 9}));
  CHECK(postings.matching({red, blue}).empty());
  CHECK(postings.matching({{"colour", "green"}}).empty());
  // No pair spells another: any byte may sit in a key or a value.
  postings.add(20, {{std::string("a\0b", 3), "c"}});
  CHECK(postings.matching({{"a", std::string("b\0c", 3)}}).empty());
  CHECK(postings.matching({{"colour", "re"}}).empty() && postings.matching({{"colou", "rred"}}).empty());
  postings.remove(20, {{std::string("a\0b", 3), "c"}});
  CHECK(postings.matching({}).empty());
  postings.remove(3, {red, big});  // a new version without the pairs
  postings.add(4, {big});          // an item given a pair (its slot sorts into place)
  CHECK(postings.matching({red, big}) == (Slots{9}));
  CHECK(postings.matching({big}) == (Slots{0, 4, 6, 9}));
  // Compaction drops slots 0 and 1 and moves the rest down by two.
  std::vector<std::int64_t> new_of_old{-1, -1};
  for (std::int64_t slot = 2; slot < 10; ++slot) new_of_old.push_back(slot - 2);
  postings.renumber(new_of_old);
  CHECK(postings.matching({big}) == (Slots{2, 4, 7}));
  CHECK(postings.matching({red}) == (Slots{3, 5, 7}));
  postings.remove(0, {blue});  // old slot 2, now 0: its pair's list shrinks, the others stay
  CHECK(postings.matching({blue}) == (Slots{2, 4, 6}));
}

POLARMEM_TEST(pruning_skips_lower_tiers) {
  Fixture f(20000, 16, 6, 2);
  auto index_ptr = make_index(Storage::kF32, f);
  Index& index = *index_ptr;
  std::vector<float> q(16, 1.0f);
  auto r = index.search(request_for(q, 10, SearchMode::kHard));
  CHECK(r.tier_counts[2] >= 10);
  CHECK(r.scored == r.tier_counts[2]);  // only the entailed tier was read
  for (auto t : r.tiers) CHECK(t == kEntailed);
}

POLARMEM_TEST(compact_storage_is_exact_after_rerank) {
  Fixture f(20000, 65, 6, 3);
  auto exact_ptr = make_index(Storage::kF32, f);
  Index& exact = *exact_ptr;
  for (Storage storage : {Storage::kF16, Storage::kI8}) {
    auto compact_ptr = make_index(storage, f);
    Index& compact = *compact_ptr;
    std::mt19937 rng(5);
    std::normal_distribution<float> g(0.0f, 1.0f);
    for (int trial = 0; trial < 5; ++trial) {
      std::vector<float> q(65);
      for (auto& x : q) x = g(rng);
      for (SearchMode mode : {SearchMode::kOff, SearchMode::kHard, SearchMode::kSoft}) {
        auto a = exact.search(request_for(q, 25, mode));
        auto b = compact.search(request_for(q, 25, mode));
        CHECK(same_result(a, b));
        CHECK(b.reranked >= 25 && b.reranked < 5000);
      }
    }
  }
}

POLARMEM_TEST(batch_equals_single_searches_at_every_level) {
  // A batch with per-query constraints (three constraint groups, several modes, one query
  // without neighbours in its group) gives exactly what each request gives on its own, on
  // every SIMD level and every storage, through the tile product and the exact re-rank.
  Fixture f(9000, 33, 8, 9);
  const SimdLevel before = active_simd_level();
  for (Storage storage : {Storage::kF32, Storage::kF16, Storage::kI8}) {
    auto index_ptr = make_index(storage, f);
    Index& index = *index_ptr;
    std::mt19937 rng(21);
    std::normal_distribution<float> g(0.0f, 1.0f);
    std::vector<SearchRequest> requests;
    for (int i = 0; i < 21; ++i) {
      std::vector<float> q(33);
      for (auto& x : q) x = g(rng);
      const SearchMode mode = i % 3 == 0 ? SearchMode::kHard : (i % 3 == 1 ? SearchMode::kSoft : SearchMode::kOff);
      SearchRequest r = request_for(q, 1 + (i % 4) * 10, mode);
      if (i % 2) r.required = {3};
      if (i == 20) r.exclude_conflicts = true;
      if (i == 5) r.vectors[0].weight = -0.5f;
      requests.push_back(r);
    }
    for (SimdLevel level : {SimdLevel::kScalar, SimdLevel::kAvx2, SimdLevel::kAvx512}) {
      if (!cpu_supports(level)) continue;
      set_simd_level(level);
      const auto batch = index.search(requests);
      CHECK(batch.size() == requests.size());
      for (std::size_t i = 0; i < requests.size(); ++i) {
        const auto single = index.search(requests[i]);
        CHECK(same_result(batch[i], single));
      }
    }
  }
  set_simd_level(before);
}

POLARMEM_TEST(k_is_bounded) {
  Fixture f(100, 8, 6, 10);
  auto index_ptr = make_index(Storage::kF32, f);
  std::vector<float> q(8, 1.0f);
  for (std::size_t k : {kMaxTopK + 1, std::size_t{1} << 30, std::size_t{4294967295u}}) {
    auto r = request_for(q, k, SearchMode::kHard);
    bool invalid = false;
    try {
      index_ptr->search(r);
    } catch (const Error& e) {
      invalid = e.code() == ErrorCode::kInvalidArgument;
    }
    CHECK(invalid);
    invalid = false;
    try {
      index_ptr->search(std::vector<SearchRequest>{r, r});
    } catch (const Error& e) {
      invalid = e.code() == ErrorCode::kInvalidArgument;
    }
    CHECK(invalid);
  }
  CHECK(index_ptr->search(request_for(q, kMaxTopK, SearchMode::kHard)).slots.size() == 100);
}

POLARMEM_TEST(remove_and_compact_keep_results) {
  Fixture f(5000, 9, 5, 4);
  auto index_ptr = make_index(Storage::kF32, f);
  Index& index = *index_ptr;
  std::vector<std::int64_t> gone;
  for (std::int64_t s = 0; s < 5000; s += 3) gone.push_back(s);
  index.remove(gone.data(), gone.size());
  CHECK(index.live_count() == 5000 - gone.size());
  std::vector<float> q(9, 0.5f);
  auto before = index.search(request_for(q, 40, SearchMode::kHard));
  for (auto s : before.slots) CHECK(s % 3 != 0);
  auto new_of_old = index.compact();
  auto after = index.search(request_for(q, 40, SearchMode::kHard));
  CHECK(after.scores == before.scores);
  for (std::size_t i = 0; i < after.slots.size(); ++i) CHECK(after.slots[i] == new_of_old[before.slots[i]]);
  CHECK(index.size() == index.live_count());
}

POLARMEM_TEST(bad_input_changes_nothing) {
  Fixture f(100, 8, 4, 5);
  auto index_ptr = make_index(Storage::kF32, f);
  Index& index = *index_ptr;
  std::vector<float> nan_row(8, 0.0f);
  nan_row[3] = std::nanf("");
  ItemBatch bad;
  bad.count = 1;
  bad.vectors.push_back(VectorInput{"vis", nan_row.data(), 1, 8, nullptr, nullptr});
  CHECK_THROWS(index.add(bad));
  bad.vectors[0].space = "nope";
  CHECK_THROWS(index.add(bad));
  std::vector<float> zero(8, 0.0f);
  bad.vectors[0] = VectorInput{"vis", zero.data(), 1, 8, nullptr, nullptr};
  CHECK_THROWS(index.add(bad));
  std::vector<std::int64_t> ptr{0, 1};
  std::vector<std::uint32_t> ids{99};
  ItemBatch out_of_range;
  out_of_range.count = 1;
  out_of_range.has = {ptr.data(), ids.data()};
  CHECK_THROWS(index.add(out_of_range));
  CHECK(index.size() == 100);
  std::vector<float> q(8, 1.0f);
  auto r = request_for(q, 0, SearchMode::kHard);
  CHECK_THROWS(index.search(r));
  r.k = 5;
  r.required = {42};
  CHECK_THROWS(index.search(r));
  std::vector<float> short_q(7, 1.0f);
  CHECK_THROWS(index.search(request_for(short_q, 5, SearchMode::kHard)));
  std::int64_t missing = 1000;
  CHECK_THROWS(index.remove(&missing, 1));
}

POLARMEM_TEST(large_buffers_start_on_huge_page_boundaries_and_keep_their_contents) {
  AlignedBuffer<float> buffer(1000);  // 4 KB: cache-line aligned only
  CHECK(reinterpret_cast<std::uintptr_t>(buffer.data()) % AlignedBuffer<float>::kAlignment == 0);
  for (std::size_t i = 0; i < buffer.size(); ++i) buffer[i] = static_cast<float>(i);
  buffer.resize(std::size_t{1} << 20);  // 4 MiB: crosses the huge-page threshold
  CHECK(reinterpret_cast<std::uintptr_t>(buffer.data()) % kHugePageBytes == 0);
  bool kept = true;
  for (std::size_t i = 0; i < 1000; ++i) kept = kept && buffer[i] == static_cast<float>(i);
  CHECK(kept);
  CHECK(buffer[1000] == 0.0f && buffer[buffer.size() - 1] == 0.0f);  // new elements are zero
  for (std::size_t i = 0; i < buffer.size(); i += 997) prefetch_line(buffer.data() + i);  // a hint only
  advise_huge_pages(buffer.data() + 1, 100);  // no whole huge page inside: nothing happens
  buffer.resize(10);
  CHECK(buffer[9] == 9.0f);
}

POLARMEM_TEST(inline_popcount_equals_std_popcount) {
  std::mt19937_64 rng(7);
  for (std::uint64_t word : {std::uint64_t{0}, ~std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{1} << 63}) {
    CHECK(popcount64(word) == std::popcount(word));
  }
  for (int i = 0; i < 100000; ++i) {
    const std::uint64_t word = rng() & rng();  // sparser words too
    CHECK(popcount64(word) == std::popcount(word));
  }
}

POLARMEM_TEST(slots_with_is_the_and_of_the_bitmaps) {
  Fixture f(70000, 8, 5, 11);  // crosses a 65,536-slot bitmap chunk
  auto index = make_index(Storage::kF32, f);
  std::vector<std::int64_t> gone{5, 65537};
  index->remove(gone.data(), gone.size());
  const std::vector<std::uint32_t> has{1}, not_has{0, 3};
  std::vector<std::int64_t> expected;
  for (std::size_t i = 0; i < f.n; ++i) {
    if (i == 5 || i == 65537) continue;
    auto holds = [&](const std::vector<std::int64_t>& ptr, const std::vector<std::uint32_t>& ids, std::uint32_t c) {
      for (std::int64_t p = ptr[i]; p < ptr[i + 1]; ++p) {
        if (ids[static_cast<std::size_t>(p)] == c) return true;
      }
      return false;
    };
    if (holds(f.has_ptr, f.has_ids, 1) && holds(f.not_ptr, f.not_ids, 0) && holds(f.not_ptr, f.not_ids, 3)) {
      expected.push_back(static_cast<std::int64_t>(i));
    }
  }
  CHECK(!expected.empty());
  CHECK(index->slots_with(has, not_has) == expected);
  CHECK(index->slots_with({}, {}).size() == f.n - 2);
  CHECK_THROWS(index->slots_with({}, {5}));
}

POLARMEM_TEST(tier_table_equals_per_slot_tiers) {
  // The table and TierTable::word_at against each slot's tier. Over three chunks (the last partial) where some bitmaps
  // have no chunk at all, with and without a kind and an allow-list, at every kernel level: each slot's tier and the
  // counts.
  const std::size_t n = 2 * SlotBitmap::kSlotsPerChunk + 1000;
  const std::size_t word_count = (n + 63) / 64;
  std::mt19937_64 rng(31);
  SlotBitmap live, visual, required_not, forbidden_has, required_has, other_has;
  std::vector<std::uint64_t> allow(word_count, 0);
  for (std::size_t slot = 0; slot < n; ++slot) {
    const std::uint64_t r = rng();
    if (r % 10 != 0) live.set(slot);
    if ((r >> 8) % 2) visual.set(slot);
    if (slot >= SlotBitmap::kSlotsPerChunk && (r >> 16) % 7 == 0) required_not.set(slot);  // no first chunk
    if ((r >> 24) % 9 == 0) forbidden_has.set(slot);
    if ((r >> 32) % 3 == 0) required_has.set(slot);
    if (slot < SlotBitmap::kSlotsPerChunk && (r >> 40) % 5 == 0) other_has.set(slot);  // first chunk only
    if ((r >> 48) % 4 != 0) allow[slot / 64] |= std::uint64_t{1} << (slot % 64);
  }
  for (SimdLevel level : {SimdLevel::kScalar, SimdLevel::kAvx2, SimdLevel::kAvx512}) {
    if (!cpu_supports(level)) continue;
    for (int variant = 0; variant < 4; ++variant) {
      TierTable::Sources sources;
      sources.live = &live;
      sources.kind = variant >= 2 ? &visual : nullptr;
      sources.kind_negated = variant == 3;
      sources.allow = variant % 2 ? allow.data() : nullptr;
      sources.conflict = {&required_not, &forbidden_has};
      sources.entailed = {&required_has, &other_has};
      sources.word_count = word_count;
      const TierTable kept(sources, true, kernels_for(level));
      const TierTable counted(sources, false, kernels_for(level));
      std::array<std::int64_t, 3> want{0, 0, 0};
      for (std::size_t slot = 0; slot < n; ++slot) {
        bool eligible = live.test(slot);
        if (sources.kind) eligible = eligible && (visual.test(slot) != sources.kind_negated);
        if (sources.allow) eligible = eligible && ((allow[slot / 64] >> (slot % 64)) & 1u);
        const bool conflict = required_not.test(slot) || forbidden_has.test(slot);
        const bool entailed = required_has.test(slot) || other_has.test(slot);
        const int tier = !eligible ? -1 : conflict ? 0 : entailed ? 2 : 1;
        if (tier >= 0) {
          ++want[tier];
          CHECK(kept.tier_index(slot) == tier);
        }
        for (int t = 0; t < 3; ++t)
          CHECK(((kept.words(t)[slot / 64] >> (slot % 64)) & 1u) == static_cast<std::uint64_t>(t == tier));
      }
      CHECK(kept.counts() == want);
      CHECK(counted.counts() == want);
      for (std::size_t w = 0; w < word_count; ++w) {  // the per-word reading scans use
        const TierTable::Word t = TierTable::word_at(sources, w);
        CHECK(t.conflict == kept.words(0)[w]);
        CHECK(t.neutral == kept.words(1)[w]);
        CHECK(t.entailed == kept.words(2)[w]);
      }
    }
  }
}

POLARMEM_TEST(concurrent_search_with_writer) {
  Fixture f(40000, 32, 6, 6);
  auto index_ptr = make_index(Storage::kF32, f);
  Index& index = *index_ptr;
  std::atomic<bool> stop{false};
  std::atomic<int> errors{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 3; ++t) {
    readers.emplace_back([&] {
      std::vector<float> q(32, 0.3f);
      while (!stop) {
        auto r = index.search(request_for(q, 10, SearchMode::kHard));
        if (r.slots.size() != 10) ++errors;
      }
    });
  }
  Fixture more(200, 32, 6, 7);
  for (int round = 0; round < 20; ++round) {
    index.add(more.batch("vis"));
    std::vector<std::int64_t> gone{static_cast<std::int64_t>(round * 7)};
    index.remove(gone.data(), 1);
  }
  index.compact();
  stop = true;
  for (auto& t : readers) t.join();
  CHECK(errors == 0);
  CHECK(index.live_count() == 40000 + 20 * 200 - 20);
}

int main() { return polarmem::testing::run_all(); }
