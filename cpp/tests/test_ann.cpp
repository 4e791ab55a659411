// The approximate index within tiers: tier order and tier counts never change, recall within a
// tier against the exact search, writes (add / replace / clear / remove / compact) kept in step,
// the exact flag, the small-tier fallback, the walk within a budget and the graph file round trip.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <thread>

#include "check.hpp"
#include "polarmem/ann_graph.hpp"
#include "polarmem/error.hpp"
#include "polarmem/index.hpp"
#include "polarmem/simd.hpp"

using namespace polarmem;

namespace {

struct Data {
  std::size_t n, d, vocab;
  std::vector<float> vectors;
  std::vector<std::uint8_t> kinds;
  std::vector<std::int64_t> has_ptr{0}, not_ptr{0};
  std::vector<std::uint32_t> has_ids, not_ids;

  // Each item states each concept HAS with probability p_has, NOT_HAS with p_not.
  Data(std::size_t n_, std::size_t d_, std::size_t vocab_, unsigned seed, double p_has = 0.3, double p_not = 0.2)
      : n(n_), d(d_), vocab(vocab_) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> g(0.0f, 1.0f);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    vectors.resize(n * d);
    for (auto& x : vectors) x = g(rng);
    for (std::size_t i = 0; i < n; ++i) {
      kinds.push_back(i % 4 == 0 ? 2 : 1);
      for (std::uint32_t c = 0; c < vocab; ++c) {
        const double r = u(rng);
        if (r < p_has) has_ids.push_back(c);
        else if (r < p_has + p_not) not_ids.push_back(c);
      }
      has_ptr.push_back(static_cast<std::int64_t>(has_ids.size()));
      not_ptr.push_back(static_cast<std::int64_t>(not_ids.size()));
    }
  }

  ItemBatch batch() const {
    ItemBatch b;
    b.count = n;
    b.kinds = kinds.data();
    VectorInput v;
    v.space = "vis";
    v.values = vectors.data();
    v.rows = n;
    v.dim = d;
    b.vectors.push_back(v);
    b.has = {has_ptr.data(), has_ids.data()};
    b.not_has = {not_ptr.data(), not_ids.data()};
    return b;
  }
};

// Forces the graph on every tier larger than ef (exact_below 0, no selectivity fallback).
AnnConfig graph_always() {
  AnnConfig ann;
  ann.enabled = true;
  ann.m = 16;
  ann.ef_construction = 100;
  ann.ef_search = 64;
  ann.exact_below = 0;
  ann.exact_factor = 0.0;
  return ann;
}

std::unique_ptr<Index> make(const Data& data, AnnConfig ann, Storage storage = Storage::kF32) {
  SpaceConfig space{"vis", data.d, false, storage};
  space.ann = ann;
  auto index = std::make_unique<Index>(std::vector<SpaceConfig>{space}, 2);
  index->ensure_concepts(data.vocab);
  index->add(data.batch());
  return index;
}

SearchRequest request(const float* q, std::size_t d, std::vector<std::uint32_t> required,
                      std::vector<std::uint32_t> forbidden, std::size_t k, SearchMode mode, bool exact) {
  SearchRequest r;
  r.vectors.push_back({"vis", std::vector<float>(q, q + d), 1.0f});
  r.required = std::move(required);
  r.forbidden = std::move(forbidden);
  r.k = k;
  r.mode = mode;
  r.exact = exact;
  return r;
}

std::vector<float> random_query(std::mt19937& rng, std::size_t d) {
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::vector<float> q(d);
  for (auto& x : q) x = g(rng);
  return q;
}

std::size_t count_tier(const SearchResult& r, int tier) {
  return static_cast<std::size_t>(std::count(r.tiers.begin(), r.tiers.end(), static_cast<std::int8_t>(tier)));
}

// Hits of `approx` in tier t that are among exact's hits of tier t, over exact's hits of t.
struct Recall {
  std::size_t found = 0, wanted = 0;
  double value() const { return wanted ? static_cast<double>(found) / static_cast<double>(wanted) : 1.0; }
};

void add_recall(const SearchResult& exact, const SearchResult& approx, Recall* recall) {
  for (int tier : {kEntailed, kNeutral, kConflict}) {
    std::set<std::int64_t> want;
    for (std::size_t i = 0; i < exact.slots.size(); ++i) {
      if (exact.tiers[i] == tier) want.insert(exact.slots[i]);
    }
    for (std::size_t i = 0; i < approx.slots.size(); ++i) {
      if (approx.tiers[i] == tier && want.count(approx.slots[i])) ++recall->found;
    }
    recall->wanted += want.size();
  }
}

}  // namespace

POLARMEM_TEST(tier_order_and_counts_match_exact_in_every_mode) {
  Data data(6000, 24, 6, 11);
  auto index = make(data, graph_always());
  std::mt19937 rng(5);
  std::uniform_int_distribution<std::uint32_t> concept_id(0, 5);
  for (SearchMode mode : {SearchMode::kHard, SearchMode::kSoft, SearchMode::kOff}) {
    Recall recall;
    bool any_approximate = false;
    for (int trial = 0; trial < 40; ++trial) {
      const auto q = random_query(rng, data.d);
      std::vector<std::uint32_t> required{concept_id(rng)};
      if (trial % 3 == 0) required.push_back(concept_id(rng));
      std::vector<std::uint32_t> forbidden;
      if (trial % 2 == 0) forbidden.push_back(concept_id(rng));
      const std::size_t k = trial % 4 == 0 ? 100 : 10;
      SearchRequest r = request(q.data(), data.d, required, forbidden, k, mode, true);
      if (trial % 5 == 0) r.exclude_conflicts = true;
      const SearchResult exact = index->search(r);
      r.exact = false;
      const SearchResult approx = index->search(r);
      any_approximate = any_approximate || approx.approximate;
      CHECK(approx.tier_counts == exact.tier_counts);
      CHECK(approx.slots.size() == exact.slots.size());
      if (mode == SearchMode::kHard) {
        // Logic first: tiers never rise along the ranking, and each tier holds exactly the
        // share of the top k it holds in the exact answer.
        for (std::size_t i = 1; i < approx.tiers.size(); ++i) CHECK(approx.tiers[i - 1] >= approx.tiers[i]);
        for (int tier : {kEntailed, kNeutral, kConflict}) CHECK(count_tier(approx, tier) == count_tier(exact, tier));
      }
      // Scores are exact for the items returned, and ranked as the mode ranks.
      for (std::size_t i = 1; i < approx.slots.size(); ++i) {
        const float prev = approx.scores[i - 1] + (mode == SearchMode::kSoft ? approx.tiers[i - 1] : 0.0f);
        const float cur = approx.scores[i] + (mode == SearchMode::kSoft ? approx.tiers[i] : 0.0f);
        if (mode != SearchMode::kHard || approx.tiers[i - 1] == approx.tiers[i]) CHECK(prev >= cur);
      }
      add_recall(exact, approx, &recall);
    }
    std::printf("  mode %d: recall within tier %.4f\n", static_cast<int>(mode), recall.value());
    CHECK(any_approximate);
    CHECK(recall.value() >= 0.95);
  }
}

POLARMEM_TEST(exact_flag_gives_exactly_the_exact_answer) {
  Data data(3000, 16, 4, 3);
  auto with_graph = make(data, graph_always());
  auto plain = make(data, AnnConfig{});
  std::mt19937 rng(9);
  for (int trial = 0; trial < 20; ++trial) {
    const auto q = random_query(rng, data.d);
    const SearchRequest r = request(q.data(), data.d, {1}, {2}, 20, SearchMode::kHard, true);
    const SearchResult a = with_graph->search(r);
    const SearchResult b = plain->search(r);
    CHECK(!a.approximate);
    CHECK(a.slots == b.slots && a.tiers == b.tiers && a.scores == b.scores && a.tier_counts == b.tier_counts);
  }
}

POLARMEM_TEST(small_tiers_fall_back_to_the_exact_scan) {
  Data data(4000, 16, 4, 21);
  AnnConfig ann = graph_always();
  ann.exact_below = 100000;  // every tier is "small"
  auto index = make(data, ann);
  std::mt19937 rng(2);
  for (int trial = 0; trial < 10; ++trial) {
    const auto q = random_query(rng, data.d);
    SearchRequest r = request(q.data(), data.d, {0, 3}, {1}, 15, SearchMode::kHard, true);
    const SearchResult exact = index->search(r);
    r.exact = false;
    const SearchResult approx = index->search(r);
    CHECK(!approx.approximate);
    CHECK(approx.slots == exact.slots && approx.scores == exact.scores);
  }
}

// Two tiers of the same size, both past exact_below and under the cost model's scan bound: one
// lies around the query (the notes holding concept 0 are those along axis 0, and the query points
// there), one is spread through the graph (concept 1 on every tenth note). The first is walked
// within its budget (approximate, a walk's candidates scored, not the tier); the second's walk
// gives up and the request is the exact search's, answer for answer.
POLARMEM_TEST(a_tier_around_the_query_is_walked_a_spread_one_scanned) {
  const std::size_t n = 40000, d = 16;
  std::mt19937 rng(17);
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::vector<float> vectors(n * d);
  for (auto& x : vectors) x = g(rng);
  std::vector<std::uint8_t> kinds(n, 1);
  std::vector<std::int64_t> has_ptr{0}, not_ptr(n + 1, 0);
  std::vector<std::uint32_t> has_ids;
  std::size_t around = 0, spread = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (vectors[i * d] > 0.55f) has_ids.push_back(0), ++around;  // ~29 % of notes, all along axis 0
    if (i % 10 == 0) has_ids.push_back(1), ++spread;
    has_ptr.push_back(static_cast<std::int64_t>(has_ids.size()));
  }
  ItemBatch batch;
  batch.count = n;
  batch.kinds = kinds.data();
  batch.vectors.push_back(VectorInput{"vis", vectors.data(), n, d});
  batch.has = {has_ptr.data(), has_ids.data()};
  batch.not_has = {not_ptr.data(), nullptr};
  AnnConfig ann;
  ann.enabled = true;
  ann.exact_below = 256;  // both tiers past it; count^2 <= 4 * 64 * 16 * 40000 for both (cost model: scan)
  SpaceConfig space{"vis", d, false, Storage::kF32};
  space.ann = ann;
  Index index(std::vector<SpaceConfig>{space}, 2);
  index.ensure_concepts(2);
  index.add(batch);
  CHECK(around > 256 && around * around <= 4 * 64 * 16 * n);
  CHECK(spread > 256 && spread * spread <= 4 * 64 * 16 * n);

  Recall recall;
  for (int trial = 0; trial < 20; ++trial) {
    auto q = random_query(rng, d);
    q[0] = 6.0f;  // along axis 0: the concept-0 notes are the query's neighbourhood
    SearchRequest r = request(q.data(), d, {0}, {}, 10, SearchMode::kHard, true);
    const SearchResult exact = index.search(r);
    r.exact = false;
    const SearchResult walked = index.search(r);
    CHECK(walked.approximate);
    CHECK(walked.tier_counts == exact.tier_counts);
    CHECK(walked.scored < static_cast<std::int64_t>(around) / 4);  // the walk's rows, not the tier's
    add_recall(exact, walked, &recall);

    SearchRequest far = request(q.data(), d, {1}, {}, 10, SearchMode::kHard, true);
    const SearchResult far_exact = index.search(far);
    far.exact = false;
    const SearchResult scanned = index.search(far);
    CHECK(!scanned.approximate);
    CHECK(scanned.slots == far_exact.slots && scanned.scores == far_exact.scores &&
          scanned.tier_counts == far_exact.tier_counts);
  }
  std::printf("  recall within the walked tier %.4f\n", recall.value());
  CHECK(recall.value() >= 0.9);
}

// A group that is the whole graph has no filter for a walk to meet: under the cost model's bound
// it is scanned, as before the budgeted walk (3,000 notes: past exact_below, 3000^2 <= 4 * 64 * 16 * 3000).
POLARMEM_TEST(a_whole_graph_under_the_cost_models_bound_is_scanned) {
  Data data(3000, 16, 3, 13);
  AnnConfig ann;
  ann.enabled = true;
  auto index = make(data, ann);
  std::mt19937 rng(6);
  for (int trial = 0; trial < 5; ++trial) {
    const auto q = random_query(rng, data.d);
    SearchRequest r = request(q.data(), data.d, {}, {}, 10, SearchMode::kOff, true);
    const SearchResult exact = index->search(r);
    r.exact = false;
    const SearchResult approx = index->search(r);
    CHECK(!approx.approximate);
    CHECK(approx.slots == exact.slots && approx.scores == exact.scores);
  }
}

POLARMEM_TEST(writes_keep_the_graph_in_step) {
  Data data(3000, 16, 3, 8);
  auto index = make(data, graph_always());
  std::mt19937 rng(4);
  const auto q = random_query(rng, data.d);
  SearchRequest r = request(q.data(), data.d, {}, {}, 10, SearchMode::kOff, false);
  SearchResult before = index->search(r);
  CHECK(before.approximate && before.slots.size() == 10);

  // Removed slots never come back.
  index->remove(before.slots.data(), 5);
  SearchResult after = index->search(r);
  for (std::size_t i = 0; i < 5; ++i) {
    CHECK(std::find(after.slots.begin(), after.slots.end(), before.slots[i]) == after.slots.end());
  }
  CHECK(index->ann_size("vis") == 3000 - 5);

  // A replaced vector is found at its new place: slot 7 becomes the query itself.
  const std::int64_t slot = 7;
  VectorInput v;
  v.space = "vis";
  v.values = q.data();
  v.rows = 1;
  v.dim = data.d;
  index->set_vectors(&slot, 1, v);
  after = index->search(r);
  CHECK(after.slots[0] == 7);
  CHECK(after.scores[0] > 0.9999f);

  // A cleared vector leaves the graph but the item stays searchable with score 0.
  const std::uint8_t absent = 0;
  v.present = &absent;
  index->set_vectors(&slot, 1, v);
  after = index->search(r);
  CHECK(std::find(after.slots.begin(), after.slots.end(), 7) == after.slots.end());
  CHECK(index->ann_size("vis") == 3000 - 6);

  // Added items join the graph (reusing removed nodes); compaction renumbers it.
  Data more(500, 16, 3, 99);
  index->add(more.batch());
  CHECK(index->ann_size("vis") == 3000 - 6 + 500);
  std::vector<std::int64_t> doomed;
  for (std::int64_t s = 0; s < 1500; s += 2) doomed.push_back(s);
  doomed.erase(std::remove_if(doomed.begin(), doomed.end(), [&](std::int64_t s) { return !index->is_live(s); }),
               doomed.end());
  index->remove(doomed.data(), doomed.size());
  index->compact();
  CHECK(index->ann_size("vis") == index->live_count() - 1);  // slot 7's item has no vector
  Recall recall;
  for (int trial = 0; trial < 30; ++trial) {
    const auto query = random_query(rng, data.d);
    SearchRequest qr = request(query.data(), data.d, {0}, {1}, 10, SearchMode::kHard, true);
    const SearchResult exact = index->search(qr);
    qr.exact = false;
    const SearchResult approx = index->search(qr);
    CHECK(approx.tier_counts == exact.tier_counts);
    add_recall(exact, approx, &recall);
    for (auto s : approx.slots) CHECK(index->is_live(s));
  }
  std::printf("  recall after writes and compaction %.4f\n", recall.value());
  CHECK(recall.value() >= 0.95);
}

POLARMEM_TEST(graph_file_round_trip) {
  Data data(2000, 16, 3, 12);
  auto index = make(data, graph_always());
  const std::string path = "/tmp/polarmem_test_ann_" + std::to_string(::getpid()) + ".hnsw";
  const std::int64_t gone = 5;
  index->remove(&gone, 1);
  index->save_ann("vis", path);
  auto copy = make(data, graph_always());
  copy->remove(&gone, 1);
  copy->load_ann("vis", path);
  std::mt19937 rng(1);
  for (int trial = 0; trial < 10; ++trial) {
    const auto q = random_query(rng, data.d);
    const SearchRequest r = request(q.data(), data.d, {0}, {}, 10, SearchMode::kHard, false);
    const SearchResult a = index->search(r);
    const SearchResult b = copy->search(r);
    CHECK(a.slots == b.slots && a.scores == b.scores);
  }
  // A graph of other slots is refused, and the index keeps its own.
  auto other = make(data, graph_always());
  CHECK_THROWS(other->load_ann("vis", path));
  CHECK(other->ann_size("vis") == 2000);
  std::remove(path.c_str());
}

// The same items in the opposite slot order (start-up numbers slots in key order, a running
// index in arrival order).
Data reversed(const Data& data) {
  Data out(0, data.d, data.vocab, 0);
  out.n = data.n;
  for (std::size_t i = data.n; i-- > 0;) {
    out.vectors.insert(out.vectors.end(), data.vectors.begin() + i * data.d, data.vectors.begin() + (i + 1) * data.d);
    out.kinds.push_back(data.kinds[i]);
    out.has_ids.insert(out.has_ids.end(), data.has_ids.begin() + data.has_ptr[i],
                       data.has_ids.begin() + data.has_ptr[i + 1]);
    out.not_ids.insert(out.not_ids.end(), data.not_ids.begin() + data.not_ptr[i],
                       data.not_ids.begin() + data.not_ptr[i + 1]);
    out.has_ptr.push_back(static_cast<std::int64_t>(out.has_ids.size()));
    out.not_ptr.push_back(static_cast<std::int64_t>(out.not_ids.size()));
  }
  return out;
}

POLARMEM_TEST(deferred_graph_loads_a_saved_one_with_slots_renumbered) {
  Data data(2000, 16, 3, 13);
  auto index = make(data, graph_always());
  const std::int64_t gone = 7;
  index->remove(&gone, 1);
  const std::string path = "/tmp/polarmem_test_ann_defer_" + std::to_string(::getpid()) + ".hnsw";
  index->save_ann("vis", path);

  const Data flipped = reversed(data);
  SpaceConfig space{"vis", data.d, false, Storage::kF32};
  space.ann = graph_always();
  Index copy(std::vector<SpaceConfig>{space}, 2);
  copy.ensure_concepts(data.vocab);
  copy.defer_ann();
  copy.add(flipped.batch());
  CHECK(copy.ann_size("vis") == 0);  // deferred: nothing was built
  const std::int64_t gone_there = static_cast<std::int64_t>(data.n - 1 - gone);
  copy.remove(&gone_there, 1);
  // Without the renumbering the file names other slots (the one removed differs): refused.
  CHECK_THROWS(copy.load_ann("vis", path));
  std::vector<std::int64_t> new_of_old(data.n);
  for (std::size_t old = 0; old < data.n; ++old) new_of_old[old] = static_cast<std::int64_t>(data.n - 1 - old);
  new_of_old[gone] = -1;
  copy.load_ann("vis", path, new_of_old);
  CHECK(copy.ann_size("vis") == data.n - 1);
  std::mt19937 rng(2);
  for (int trial = 0; trial < 10; ++trial) {
    const auto q = random_query(rng, data.d);
    const SearchRequest r = request(q.data(), data.d, {0}, {1}, 10, SearchMode::kHard, false);
    const SearchResult a = index->search(r);
    const SearchResult b = copy.search(r);
    CHECK(a.slots.size() == b.slots.size() && a.scores == b.scores && a.tiers == b.tiers);
    for (std::size_t i = 0; i < a.slots.size() && i < b.slots.size(); ++i) {
      CHECK(b.slots[i] == static_cast<std::int64_t>(data.n - 1) - a.slots[i]);
    }
  }
  // A loaded graph takes writes again.
  const std::int64_t slot = 3;
  copy.remove(&slot, 1);
  CHECK(copy.ann_size("vis") == data.n - 2);
  std::remove(path.c_str());
}

POLARMEM_TEST(bad_settings_are_refused) {
  AnnConfig ann = graph_always();
  ann.m = 1;
  CHECK_THROWS(Index({SpaceConfig{"vis", 8, false, Storage::kF32, ann}}, 1));
  SpaceConfig multi{"mv", 8, true, Storage::kF32, graph_always()};
  CHECK_THROWS(Index({multi}, 1));
}

POLARMEM_TEST(searches_run_while_the_graph_is_written) {
  Data data(2000, 16, 3, 31);
  auto index = make(data, graph_always());
  std::atomic<bool> stop{false};
  std::atomic<int> errors{0}, searches{0};
  auto reader = [&](unsigned seed) {
    std::mt19937 rng(seed);
    while (!stop) {
      const auto q = random_query(rng, data.d);
      try {
        const SearchResult r = index->search(request(q.data(), data.d, {0}, {1}, 10, SearchMode::kHard, false));
        for (std::size_t i = 1; i < r.tiers.size(); ++i) {
          if (r.tiers[i - 1] < r.tiers[i]) ++errors;
        }
        if (r.slots.size() != std::min<std::size_t>(10, r.tier_counts[0] + r.tier_counts[1] + r.tier_counts[2]))
          ++errors;
        ++searches;
      } catch (...) {
        ++errors;
      }
    }
  };
  std::thread a(reader, 1), b(reader, 2);
  Data more(200, 16, 3, 32);
  for (int round = 0; round < 10; ++round) {
    const std::int64_t first = index->add(more.batch());
    std::vector<std::int64_t> doomed;
    for (std::int64_t s = first; s < first + 200; s += 3) doomed.push_back(s);
    index->remove(doomed.data(), doomed.size());
    if (round == 5) index->compact();
  }
  stop = true;
  a.join();
  b.join();
  CHECK(errors == 0);
  CHECK(searches > 0);
  CHECK(index->ann_size("vis") == index->live_count());
}

// The graph stores int8 rows (one scale per row) and scores int16 query codes against them: the
// cosine a walk ranks by is within the quantisation bound of the fp32 one, on every SIMD level
// the CPU has, dimensions with a tail (37 = 32 + 5) included.
POLARMEM_TEST(int8_rows_rank_by_the_fp32_cosine_on_every_level) {
  const std::size_t d = 37, n = 500;
  std::mt19937 rng(4);
  std::vector<float> rows(n * d);
  for (std::size_t i = 0; i < n; ++i) {
    const auto v = random_query(rng, d);
    float norm = 0.0f;
    for (float x : v) norm += x * x;
    for (std::size_t j = 0; j < d; ++j) rows[i * d + j] = v[j] / std::sqrt(norm);
  }
  auto max_abs = [&](const float* v) {
    float m = 0.0f;
    for (std::size_t j = 0; j < d; ++j) m = std::max(m, std::fabs(v[j]));
    return m;
  };
  std::vector<std::pair<std::size_t, const float*>> items;
  for (std::size_t i = 0; i < n; ++i) items.emplace_back(i, rows.data() + i * d);
  const SimdLevel before = active_simd_level();
  for (SimdLevel level : {SimdLevel::kScalar, SimdLevel::kAvx2, SimdLevel::kAvx512}) {
    if (!cpu_supports(level)) continue;
    set_simd_level(level);
    AnnConfig config = graph_always();
    AnnGraph graph(d, config);
    graph.upsert(items, 2);
    for (std::size_t probe = 0; probe < 20; ++probe) {
      const float* q = rows.data() + probe * d;
      const auto hits = graph.search(q, 5, 64, nullptr, 0);
      CHECK(!hits.empty() && hits[0].first == probe);  // a stored row finds itself first
      for (const auto& [slot, cosine] : hits) {
        const float* x = rows.data() + slot * d;
        float exact = 0.0f, q_l1 = 0.0f, x_l1 = 0.0f;
        for (std::size_t j = 0; j < d; ++j) {
          exact += q[j] * x[j];
          q_l1 += std::fabs(q[j]);
          x_l1 += std::fabs(x[j]);
        }
        // Each row code is off by at most half its step (max |x| / 127), each query code by half
        // of a finer step (int16 codes; the bound takes the row's step for it); plus rounding.
        const float row_step = max_abs(x) / 127.0f, query_step = max_abs(q) / 127.0f;
        const float bound = 0.5f * (q_l1 * row_step + x_l1 * query_step) + 0.25f * d * row_step * query_step + 1e-5f;
        CHECK(std::fabs(cosine - exact) <= bound);
        CHECK(std::fabs(cosine - exact) < 0.02f);
      }
    }
  }
  set_simd_level(before);
}

// A graph file whose rows have another size (fp32 or binary16 graphs saved before the graph
// stored int8 rows, a graph of another dimension) is refused.
POLARMEM_TEST(graph_file_with_other_row_format_is_refused) {
  const std::size_t d = 8;
  std::vector<float> rows(2 * d * 300, 0.0f);
  std::vector<std::pair<std::size_t, const float*>> items;
  for (std::size_t i = 0; i < 300; ++i) {
    rows[i * 2 * d + i % (2 * d)] = 1.0f;
    items.emplace_back(i, rows.data() + i * 2 * d);
  }
  AnnGraph wide(2 * d, graph_always());
  wide.upsert(items, 1);
  const std::string path = "/tmp/polarmem_test_ann_format_" + std::to_string(::getpid()) + ".hnsw";
  wide.save(path);
  AnnGraph narrow(d, graph_always());
  CHECK_THROWS(narrow.load(path));
  CHECK(narrow.size() == 0);
  std::remove(path.c_str());
}

int main() { return polarmem::testing::run_all(); }
