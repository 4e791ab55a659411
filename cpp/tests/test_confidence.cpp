// Confidence flags and weights within tiers (SearchRequest::present_level / absent_level,
// present_weight / absent_weight) against a brute-force reference: every storage, thread count,
// filter and write path (add, set_concepts, remove, compact) must give exactly the order (tier,
// confidently absent, confidently present, s_sem + confidence term, slot).
#include <algorithm>
#include <cstdio>
#include <limits>
#include <memory>
#include <random>
#include <tuple>

#include "check.hpp"
#include "polarmem/error.hpp"
#include "polarmem/index.hpp"

using namespace polarmem;

namespace {

// Random items: states per concept (HAS / NOT_HAS / neither), an independent grade per concept
// (-3 .. 3) and an independent confidence byte (0 .. 254, or kNotScored a third of the time), so
// flags, weights and states disagree as often as they agree. A concept is listed in the grades
// when it has a grade or a confidence.
struct Items {
  std::size_t n, d, vocab;
  std::vector<float> vectors;
  std::vector<std::uint8_t> kinds;
  std::vector<std::int8_t> state;  // n x vocab: 1 has, -1 not, 0 neither
  std::vector<std::int8_t> grade;  // n x vocab
  std::vector<std::uint8_t> conf;  // n x vocab: 0 .. 254, kNotScored
  std::vector<std::int64_t> has_ptr{0}, not_ptr{0}, grade_ptr{0};
  std::vector<std::uint32_t> has_ids, not_ids, grade_ids;
  std::vector<std::int8_t> grades;
  std::vector<std::uint8_t> confidences;  // parallel to grades

  Items(std::size_t n_, std::size_t d_, std::size_t vocab_, unsigned seed) : n(n_), d(d_), vocab(vocab_) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> g(0.0f, 1.0f);
    std::uniform_int_distribution<int> pick_state(0, 3), pick_grade(-3, 3), pick_conf(0, 380);
    vectors.resize(n * d);
    for (auto& x : vectors) x = g(rng);
    state.resize(n * vocab);
    grade.resize(n * vocab);
    conf.resize(n * vocab);
    for (std::size_t i = 0; i < n; ++i) {
      kinds.push_back(i % 4 == 0 ? 2 : 1);
      for (std::uint32_t c = 0; c < vocab; ++c) {
        const int s = pick_state(rng);
        state[i * vocab + c] = s == 0 ? 1 : s == 1 ? -1 : 0;
        grade[i * vocab + c] = static_cast<std::int8_t>(pick_grade(rng));
        const int b = pick_conf(rng);
        conf[i * vocab + c] = b > kConfidenceScale ? kNotScored : static_cast<std::uint8_t>(b);
      }
    }
    rebuild_lists();
  }

  void rebuild_lists() {
    has_ptr = {0}, not_ptr = {0}, grade_ptr = {0};
    has_ids.clear(), not_ids.clear(), grade_ids.clear(), grades.clear(), confidences.clear();
    for (std::size_t i = 0; i < n; ++i) {
      for (std::uint32_t c = 0; c < vocab; ++c) {
        if (state[i * vocab + c] == 1) has_ids.push_back(c);
        if (state[i * vocab + c] == -1) not_ids.push_back(c);
        if (grade[i * vocab + c] != 0 || conf[i * vocab + c] != kNotScored) {
          grade_ids.push_back(c);
          grades.push_back(grade[i * vocab + c]);
          confidences.push_back(conf[i * vocab + c]);
        }
      }
      has_ptr.push_back(static_cast<std::int64_t>(has_ids.size()));
      not_ptr.push_back(static_cast<std::int64_t>(not_ids.size()));
      grade_ptr.push_back(static_cast<std::int64_t>(grade_ids.size()));
    }
  }

  ItemBatch batch() const {
    ItemBatch b;
    b.count = n;
    b.kinds = kinds.data();
    b.vectors.push_back(VectorInput{"vis", vectors.data(), n, d, nullptr, nullptr});
    b.has = {has_ptr.data(), has_ids.data()};
    b.not_has = {not_ptr.data(), not_ids.data()};
    b.grades = {grade_ptr.data(), grade_ids.data(), grades.data(), confidences.data()};
    return b;
  }
};

// CSR lists of just the `changed` items, in that order: what set_concepts takes.
struct ChangedLists {
  std::vector<std::int64_t> hp{0}, np{0}, gp{0};
  std::vector<std::uint32_t> hi, ni, gi;
  std::vector<std::int8_t> gv;
  std::vector<std::uint8_t> cv;

  ChangedLists(const Items& items, const std::vector<std::int64_t>& changed) {
    for (auto s : changed) {
      const std::size_t i = static_cast<std::size_t>(s);
      for (std::int64_t p = items.has_ptr[i]; p < items.has_ptr[i + 1]; ++p) hi.push_back(items.has_ids[p]);
      for (std::int64_t p = items.not_ptr[i]; p < items.not_ptr[i + 1]; ++p) ni.push_back(items.not_ids[p]);
      for (std::int64_t p = items.grade_ptr[i]; p < items.grade_ptr[i + 1]; ++p) {
        gi.push_back(items.grade_ids[p]);
        gv.push_back(items.grades[p]);
        cv.push_back(items.confidences[p]);
      }
      hp.push_back(static_cast<std::int64_t>(hi.size()));
      np.push_back(static_cast<std::int64_t>(ni.size()));
      gp.push_back(static_cast<std::int64_t>(gi.size()));
    }
  }

  void apply(Index& index, const std::vector<std::int64_t>& changed, bool with_confidence) const {
    index.set_concepts(changed.data(), changed.size(), {hp.data(), hi.data()}, {np.data(), ni.data()},
                       {gp.data(), gi.data(), gv.data(), with_confidence ? cv.data() : nullptr});
  }
};

std::unique_ptr<Index> make_index(const Items& items, Storage storage, bool ann = false) {
  SpaceConfig space{"vis", items.d, false, storage};
  if (ann) space.ann = AnnConfig{true, 8, 64, 32, 16, 0.0};
  auto index = std::make_unique<Index>(std::vector<SpaceConfig>{space}, 2);
  index->ensure_concepts(items.vocab);
  index->add(items.batch());
  return index;
}

// Every eligible item's exact s_sem, from an off-mode search of every item (k = all: every
// candidate is re-scored exactly, whatever the storage).
std::vector<float> exact_scores(const Index& index, const SearchRequest& base) {
  if (base.vectors.empty()) return std::vector<float>(index.size(), 0.0f);  // no vector: every s_sem is 0
  SearchRequest all = base;
  all.mode = SearchMode::kOff;
  all.present_level = all.absent_level = 0;
  all.present_weight = all.absent_weight = 0.0f;
  all.required.clear(), all.forbidden.clear();
  all.exclude_conflicts = false;
  all.k = std::min<std::size_t>(index.size(), kMaxTopK);
  const SearchResult r = index.search(all);
  std::vector<float> score(index.size(), -1e30f);
  for (std::size_t i = 0; i < r.slots.size(); ++i) score[static_cast<std::size_t>(r.slots[i])] = r.scores[i];
  return score;
}

// The brute-force reference: every live, eligible item ranked by the key the request defines.
// `slot_item[slot]` is the Items row a slot holds (-1 removed).
SearchResult reference(const Index& index, const Items& items, const std::vector<std::int64_t>& slot_item,
                       const SearchRequest& r) {
  const std::vector<float> score = exact_scores(index, r);
  // The confidence term, as ConfidenceWeights defines it: integer byte sums, then one scale.
  auto side = [&](std::size_t i, const std::vector<std::uint32_t>& concepts) {
    int total = 0;
    for (auto c : concepts) {
      const std::uint8_t b = items.conf[i * items.vocab + c];
      const int st = items.state[i * items.vocab + c];
      total += b != kNotScored ? b : st == 1 ? kConfidenceScale : st == -1 ? 0 : kConfidenceScale / 2;
    }
    return static_cast<float>(total) / static_cast<float>(kConfidenceScale);
  };
  const float present_scale = r.required.empty() ? 0.0f : r.present_weight / static_cast<float>(r.required.size());
  const float absent_scale = r.forbidden.empty() ? 0.0f : r.absent_weight / static_cast<float>(r.forbidden.size());
  struct Row {
    int tier, flags;
    float score;
    std::int64_t slot;
  };
  std::vector<Row> rows;
  for (std::size_t slot = 0; slot < slot_item.size(); ++slot) {
    const std::int64_t item = slot_item[slot];
    if (item < 0) continue;
    const std::size_t i = static_cast<std::size_t>(item);
    if (r.kind_mask == 1 && items.kinds[i] != 1) continue;
    if (r.kind_mask == 2 && items.kinds[i] != 2) continue;
    if (r.allow && std::find(r.allow->begin(), r.allow->end(), static_cast<std::int64_t>(slot)) == r.allow->end())
      continue;
    bool conflict = false, entailed = false;
    for (auto c : r.required) {
      conflict |= items.state[i * items.vocab + c] == -1;
      entailed |= items.state[i * items.vocab + c] == 1;
    }
    for (auto c : r.forbidden) conflict |= items.state[i * items.vocab + c] == 1;
    const int tier = conflict ? -1 : entailed ? 1 : 0;
    if (conflict && r.exclude_conflicts) continue;
    bool absent = r.absent_level > 0 && !r.forbidden.empty();
    for (auto c : r.forbidden) absent = absent && items.grade[i * items.vocab + c] <= -static_cast<int>(r.absent_level);
    bool present = r.present_level > 0 && !r.required.empty();
    for (auto c : r.required)
      present = present && items.grade[i * items.vocab + c] >= static_cast<int>(r.present_level);
    float term = 0.0f;
    if (present_scale != 0.0f) term += present_scale * side(i, r.required);
    if (absent_scale != 0.0f) term -= absent_scale * side(i, r.forbidden);
    const float key = (present_scale != 0.0f || absent_scale != 0.0f) ? score[slot] + term : score[slot];
    rows.push_back({tier, (absent ? 2 : 0) + (present ? 1 : 0), key, static_cast<std::int64_t>(slot)});
  }
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    return std::tie(b.tier, b.flags, b.score, a.slot) < std::tie(a.tier, a.flags, a.score, b.slot);
  });
  SearchResult out;
  for (std::size_t j = 0; j < std::min(rows.size(), r.k); ++j) {
    out.slots.push_back(rows[j].slot);
    out.tiers.push_back(static_cast<std::int8_t>(rows[j].tier));
    if (r.present_level > 0 || r.absent_level > 0) out.confidence.push_back(static_cast<std::int8_t>(rows[j].flags));
  }
  return out;
}

void print_first_difference(const SearchResult& got, const SearchResult& want) {
  std::size_t j = 0;
  while (j < got.slots.size() && j < want.slots.size() && got.slots[j] == want.slots[j]) ++j;
  std::printf("first difference at %zu of %zu/%zu\n", j, got.slots.size(), want.slots.size());
}

// Hits whose reported score is s_sem alone, as the weights never change SearchResult::scores.
bool scores_are_similarity(const Index& index, const SearchRequest& r, const SearchResult& got) {
  const std::vector<float> score = exact_scores(index, r);
  for (std::size_t j = 0; j < got.slots.size(); ++j) {
    if (got.scores[j] != score[static_cast<std::size_t>(got.slots[j])]) return false;
  }
  return true;
}

bool matches(const SearchResult& got, const SearchResult& want) {
  return got.slots == want.slots && got.tiers == want.tiers && got.confidence == want.confidence;
}

// Removes every 5th slot from 1, checks, compacts and checks again: what an item carries must
// follow it to its new slot. `slot_item` ends as the compacted slots' items.
void check_remove_then_compact(Index& index, const Items& items, std::vector<std::int64_t>* slot_item,
                               const SearchRequest& r) {
  std::vector<std::int64_t> gone;
  for (std::int64_t s = 1; s < static_cast<std::int64_t>(slot_item->size()); s += 5) gone.push_back(s);
  index.remove(gone.data(), gone.size());
  for (auto s : gone) (*slot_item)[static_cast<std::size_t>(s)] = -1;
  CHECK(matches(index.search(r), reference(index, items, *slot_item, r)));
  const auto new_of_old = index.compact();
  std::vector<std::int64_t> compacted(index.size(), -1);
  for (std::size_t old = 0; old < new_of_old.size(); ++old) {
    if (new_of_old[old] >= 0) compacted[static_cast<std::size_t>(new_of_old[old])] = (*slot_item)[old];
  }
  CHECK(matches(index.search(r), reference(index, items, compacted, r)));
  slot_item->swap(compacted);
}

SearchRequest request(const Items& items, std::size_t query_item, std::vector<std::uint32_t> required,
                      std::vector<std::uint32_t> forbidden, std::size_t k, std::uint8_t present, std::uint8_t absent) {
  SearchRequest r;
  r.vectors.push_back(QueryVector{"vis",
                                  std::vector<float>(items.vectors.begin() + query_item * items.d,
                                                     items.vectors.begin() + (query_item + 1) * items.d),
                                  1.0f});
  r.required = std::move(required);
  r.forbidden = std::move(forbidden);
  r.k = k;
  r.present_level = present;
  r.absent_level = absent;
  return r;
}

std::vector<std::int64_t> identity(std::size_t n) {
  std::vector<std::int64_t> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<std::int64_t>(i);
  return out;
}

}  // namespace

POLARMEM_TEST(confidence_order_matches_brute_force_for_every_storage_and_level) {
  const Items items(2500, 12, 6, 7);
  for (Storage storage : {Storage::kF32, Storage::kF16, Storage::kI8}) {
    auto index = make_index(items, storage);
    const auto slots = identity(items.n);
    int checked = 0;
    for (std::uint8_t present = 0; present <= kConfidenceLevels; ++present) {
      for (std::uint8_t absent = 0; absent <= kConfidenceLevels; ++absent) {
        for (std::size_t k : {1u, 7u, 60u, 2500u}) {
          const std::vector<std::vector<std::uint32_t>> required{{0}, {1, 3}, {}};
          const std::vector<std::vector<std::uint32_t>> forbidden{{2}, {4, 5}, {}};
          for (std::size_t v = 0; v < required.size(); ++v) {
            const SearchRequest r =
                request(items, (present * 7 + absent + k) % items.n, required[v], forbidden[v], k, present, absent);
            const SearchResult got = index->search(r);
            const SearchResult want = reference(*index, items, slots, r);
            if (!matches(got, want)) {
              std::printf("  storage %d present %d absent %d k %zu v %zu: ", static_cast<int>(storage), present, absent,
                          k, v);
              print_first_difference(got, want);
            }
            CHECK(matches(got, want));
            CHECK(got.confidence.size() == ((present || absent) ? got.slots.size() : 0u));
            ++checked;
          }
        }
      }
    }
    CHECK(checked == 16 * 4 * 3);
  }
}

// `base` on one and two threads, each kind, with and without conflicts, then with an
// allow-list, then with no vector (every s_sem 0: the confidence order and the slot decide).
void check_filters_threads_and_no_vector(const Index& index, const Items& items, const SearchRequest& base) {
  const auto slots = identity(items.n);
  auto allow = std::make_shared<std::vector<std::int64_t>>();
  for (std::int64_t s = 0; s < static_cast<std::int64_t>(items.n); s += 3) allow->push_back(s);
  for (std::size_t threads : {1u, 2u}) {
    for (std::uint8_t kind_mask : {0, 1, 2}) {
      for (bool exclude : {false, true}) {
        SearchRequest r = base;
        r.threads = threads;
        r.kind_mask = kind_mask;
        r.exclude_conflicts = exclude;
        CHECK(matches(index.search(r), reference(index, items, slots, r)));
        r.allow = allow;
        CHECK(matches(index.search(r), reference(index, items, slots, r)));
        r.vectors.clear();
        CHECK(matches(index.search(r), reference(index, items, slots, r)));
      }
    }
  }
}

POLARMEM_TEST(confidence_with_filters_threads_and_no_vector) {
  const Items items(40000, 8, 5, 11);  // > 2 x 16,384 items: two workers split the scan
  check_filters_threads_and_no_vector(*make_index(items, Storage::kF32), items, request(items, 5, {0}, {1}, 25, 2, 1));
}

POLARMEM_TEST(levels_zero_leave_every_search_as_before) {
  // The same items without grades: a request that asks for no confidence must not see them.
  Items plain(3000, 10, 5, 3);
  auto graded = make_index(plain, Storage::kF32);
  ItemBatch no_grades = plain.batch();
  no_grades.grades = {};
  auto bare = std::make_unique<Index>(std::vector<SpaceConfig>{SpaceConfig{"vis", plain.d, false, Storage::kF32}}, 2);
  bare->ensure_concepts(plain.vocab);
  bare->add(no_grades);
  for (SearchMode mode : {SearchMode::kHard, SearchMode::kSoft, SearchMode::kOff}) {
    SearchRequest r = request(plain, 9, {0, 1}, {2}, 40, 0, 0);
    r.mode = mode;
    const SearchResult a = graded->search(r), b = bare->search(r);
    CHECK(a.slots == b.slots && a.tiers == b.tiers && a.scores == b.scores && a.tier_counts == b.tier_counts);
    CHECK(a.scored == b.scored && a.confidence.empty());
    // A batch of such requests (the tile product) gives the same.
    std::vector<SearchRequest> batch(5, r);
    for (const auto& result : graded->search(batch)) CHECK(result.slots == a.slots);
  }
}

POLARMEM_TEST(writes_keep_grades_in_step) {
  Items items(3000, 10, 5, 21);
  auto index = make_index(items, Storage::kF32);
  std::vector<std::int64_t> slot_item = identity(items.n);
  const SearchRequest r = request(items, 3, {0}, {1, 2}, 80, 1, 3);
  CHECK(matches(index->search(r), reference(*index, items, slot_item, r)));

  // set_concepts replaces states and grades of some slots (flip every grade of those items).
  std::vector<std::int64_t> changed;
  for (std::int64_t s = 0; s < 3000; s += 7) changed.push_back(s);
  for (auto s : changed) {
    for (std::size_t c = 0; c < items.vocab; ++c) {
      auto& g = items.grade[static_cast<std::size_t>(s) * items.vocab + c];
      g = static_cast<std::int8_t>(-g);
    }
  }
  items.rebuild_lists();
  ChangedLists(items, changed).apply(*index, changed, true);
  CHECK(matches(index->search(r), reference(*index, items, slot_item, r)));

  // remove, then compact: grades follow their items to the new slots.
  check_remove_then_compact(*index, items, &slot_item, r);
}

POLARMEM_TEST(approximate_requests_with_confidence_run_exactly) {
  const Items items(3000, 10, 5, 5);
  auto index = make_index(items, Storage::kF32, true);
  SearchRequest r = request(items, 2, {0}, {1}, 30, 3, 2);
  r.exact = false;
  const SearchResult got = index->search(r);
  CHECK(!got.approximate);
  CHECK(matches(got, reference(*index, items, identity(items.n), r)));
}

POLARMEM_TEST(bad_grades_and_levels_change_nothing) {
  const Items items(200, 4, 3, 9);
  auto index = make_index(items, Storage::kF32);
  const SearchRequest r = request(items, 0, {0}, {1}, 200, 1, 1);
  const SearchResult before = index->search(r);
  const std::int64_t slot = 4;
  const std::int64_t ptr[] = {0, 2};
  const std::uint32_t twice[] = {1, 1};
  const std::int8_t ok_grades[] = {2, -1}, out_of_range[] = {4, -1};
  const std::uint32_t ids[] = {0, 1};
  const std::uint32_t unknown[] = {0, 9};
  CHECK_THROWS(index->set_concepts(&slot, 1, {}, {}, {ptr, twice, ok_grades}));
  CHECK_THROWS(index->set_concepts(&slot, 1, {}, {}, {ptr, ids, out_of_range}));
  CHECK_THROWS(index->set_concepts(&slot, 1, {}, {}, {ptr, unknown, ok_grades}));
  CHECK(matches(index->search(r), before));
  SearchRequest too_high = r;
  too_high.present_level = kConfidenceLevels + 1;
  CHECK_THROWS(index->search(too_high));
  for (SearchMode mode : {SearchMode::kSoft, SearchMode::kOff}) {
    SearchRequest wrong_mode = r;
    wrong_mode.mode = mode;
    CHECK_THROWS(index->search(wrong_mode));
  }
}

SearchRequest weighted(SearchRequest r, float present_weight, float absent_weight) {
  r.present_weight = present_weight;
  r.absent_weight = absent_weight;
  return r;
}

POLARMEM_TEST(weights_order_matches_brute_force_for_every_storage) {
  const Items items(2500, 12, 6, 17);
  const std::vector<std::pair<float, float>> weights{
      {0.6f, 0.4f}, {1.0f, 0.0f}, {0.0f, 0.8f}, {0.05f, 0.05f}, {3.0f, 2.0f}};
  for (Storage storage : {Storage::kF32, Storage::kF16, Storage::kI8}) {
    auto index = make_index(items, storage);
    const auto slots = identity(items.n);
    int checked = 0;
    for (const auto& [wp, wa] : weights) {
      for (std::uint8_t level : {0, 1, 3}) {
        for (std::size_t k : {1u, 7u, 60u, 2500u}) {
          const std::vector<std::vector<std::uint32_t>> required{{0}, {1, 3}, {}, {2}};
          const std::vector<std::vector<std::uint32_t>> forbidden{{2}, {4, 5}, {1}, {}};
          for (std::size_t v = 0; v < required.size(); ++v) {
            const SearchRequest r = weighted(
                request(items, (level * 5 + k + v) % items.n, required[v], forbidden[v], k, level, level == 0 ? 0 : 2),
                wp, wa);
            const SearchResult got = index->search(r);
            const SearchResult want = reference(*index, items, slots, r);
            if (!matches(got, want)) {
              std::printf("  storage %d weights %.2f/%.2f level %d k %zu v %zu: ", static_cast<int>(storage), wp, wa,
                          level, k, v);
              print_first_difference(got, want);
            }
            CHECK(matches(got, want));
            CHECK(scores_are_similarity(*index, r, got));
            ++checked;
          }
        }
      }
    }
    CHECK(checked == 5 * 3 * 4 * 4);
  }
}

POLARMEM_TEST(weights_change_the_order_within_tiers_only) {
  // Large weights must reorder items inside a tier (else the test proves nothing) but never
  // move an item across tiers or flags.
  const Items items(3000, 10, 5, 23);
  auto index = make_index(items, Storage::kF32);
  const SearchRequest plain = request(items, 4, {0}, {1}, 200, 1, 1);
  const SearchResult a = index->search(plain), b = index->search(weighted(plain, 5.0f, 5.0f));
  CHECK(a.slots != b.slots);
  CHECK(a.tiers == b.tiers && a.confidence == b.confidence && a.tier_counts == b.tier_counts);
}

POLARMEM_TEST(weights_with_filters_threads_and_no_vector) {
  const Items items(40000, 8, 5, 29);  // > 2 x 16,384 items: two workers split the scan
  check_filters_threads_and_no_vector(*make_index(items, Storage::kI8), items,
                                      weighted(request(items, 5, {0, 2}, {1}, 25, 0, 1), 0.7f, 0.3f));
}

POLARMEM_TEST(writes_keep_confidences_in_step) {
  Items items(3000, 10, 5, 31);
  auto index = make_index(items, Storage::kF32);
  std::vector<std::int64_t> slot_item = identity(items.n);
  const SearchRequest r = weighted(request(items, 3, {0}, {1, 2}, 80, 0, 0), 0.8f, 0.6f);
  CHECK(matches(index->search(r), reference(*index, items, slot_item, r)));

  // set_concepts: first without confidences (a replaced item must not keep its old ones), then
  // every 7th item with new ones and every 11th with none.
  std::vector<std::int64_t> changed;
  for (std::int64_t s = 0; s < 3000; s += 7) changed.push_back(s);
  for (std::int64_t s = 0; s < 3000; s += 11) {
    if (s % 7) changed.push_back(s);
  }
  items.rebuild_lists();
  ChangedLists(items, changed).apply(*index, changed, false);
  for (auto s : changed) {
    for (std::size_t c = 0; c < items.vocab; ++c)
      items.conf[static_cast<std::size_t>(s) * items.vocab + c] = kNotScored;
  }
  CHECK(matches(index->search(r), reference(*index, items, slot_item, r)));  // no confidences given: none kept
  for (auto s : changed) {
    const std::size_t i = static_cast<std::size_t>(s);
    for (std::uint32_t c = 0; c < items.vocab; ++c) {
      items.conf[i * items.vocab + c] =
          s % 7 == 0 ? static_cast<std::uint8_t>((i + c * 37) % (kConfidenceScale + 1)) : kNotScored;
    }
  }
  items.rebuild_lists();
  ChangedLists(items, changed).apply(*index, changed, true);
  CHECK(matches(index->search(r), reference(*index, items, slot_item, r)));

  // remove, then compact: confidences follow their items to the new slots.
  check_remove_then_compact(*index, items, &slot_item, r);
  // Items appended after a compact start with no confidence where their batch gives none.
  Items more(50, 10, 5, 37);
  ItemBatch bare = more.batch();
  bare.grades = {};
  index->add(bare);
  CHECK(index->search(r).slots.size() == r.k);
}

POLARMEM_TEST(weighted_requests_run_exactly_alone_and_in_batches) {
  const Items items(3000, 10, 5, 41);
  auto index = make_index(items, Storage::kF32, true);
  SearchRequest r = weighted(request(items, 2, {0}, {1}, 30, 0, 0), 0.6f, 0.4f);
  r.exact = false;
  const SearchResult got = index->search(r);
  CHECK(!got.approximate);
  CHECK(matches(got, reference(*index, items, identity(items.n), r)));
  std::vector<SearchRequest> batch;
  for (std::size_t q = 0; q < 6; ++q)
    batch.push_back(weighted(
        request(items, q, {static_cast<std::uint32_t>(q % 5u)}, {static_cast<std::uint32_t>((q + 1) % 5u)}, 20, 0, 0),
        0.5f, 0.5f));
  const auto results = index->search(batch);
  for (std::size_t q = 0; q < batch.size(); ++q)
    CHECK(matches(results[q], reference(*index, items, identity(items.n), batch[q])));
  // A weight with no concept on its side adds nothing: the request keeps the approximate path.
  SearchRequest unweighted = request(items, 2, {0}, {}, 30, 0, 0);
  unweighted.exact = false;
  const SearchResult plain = index->search(unweighted);
  const SearchResult idle = index->search(weighted(unweighted, 0.0f, 0.4f));
  CHECK(plain.approximate && idle.approximate && idle.slots == plain.slots && idle.rank_scores.empty());
}

POLARMEM_TEST(bad_weights_and_confidences_change_nothing) {
  const Items items(200, 4, 3, 43);
  auto index = make_index(items, Storage::kF32);
  const SearchRequest r = weighted(request(items, 0, {0}, {1}, 200, 0, 0), 0.5f, 0.5f);
  const SearchResult before = index->search(r);
  for (float bad : {-0.1f, std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    CHECK_THROWS(index->search(weighted(r, bad, 0.0f)));
    CHECK_THROWS(index->search(weighted(r, 0.0f, bad)));
  }
  for (SearchMode mode : {SearchMode::kSoft, SearchMode::kOff}) {
    SearchRequest wrong_mode = r;
    wrong_mode.mode = mode;
    CHECK_THROWS(index->search(wrong_mode));
  }
  const std::int64_t slot = 4;
  const std::int64_t ptr[] = {0, 2};
  const std::uint32_t ids[] = {0, 1};
  const std::uint32_t twice[] = {1, 1};
  const std::int8_t grades[] = {0, 1}, out_of_range[] = {0, 4};
  const std::uint8_t confidences[] = {10, 200};
  // A bad grade list with confidences is refused whole: no confidence of it lands.
  CHECK_THROWS(index->set_concepts(&slot, 1, {}, {}, {ptr, ids, out_of_range, confidences}));
  CHECK_THROWS(index->set_concepts(&slot, 1, {}, {}, {ptr, twice, grades, confidences}));
  CHECK(matches(index->search(r), before));
}

int main() { return polarmem::testing::run_all(); }
