// One Recall's modes (recall_run.hpp) against a store held in memory: which searches each mode
// makes, strict's merge for a store that cannot search strict, the recency term, suppressed hits,
// explanations, dropped forgotten items and how mode_reason is written. The library's and the
// server's tests run it end to end (tests/integration/test_memory.py, test_core_recall.py).
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "check.hpp"
#include "polarmem/recall_run.hpp"

using namespace polarmem;
using namespace polarmem::recall;

namespace {

struct Item {
  std::string id;
  int tier = 0;
  float score = 0.0f;
  int forbidden_state = 0;  // the one forbidden concept's state (-1 NOT_HAS: absence verified)
  std::int64_t stamp_ms = 0;
};

// A store that ranks its items as the index does: hard by (tier, s_sem), strict by (tier,
// verified, s_sem), soft by s_sem + tier, off by s_sem.
struct MemoryStore {
  std::vector<Item> items;
  bool strict_in_one_call = true;
  std::set<std::string> forgotten;  // gone between the search and the read
  std::vector<Search> asked;
  std::vector<bool> reads_stamped;  // per read, whether it asked for the recency stamps

  Store store() {
    Store out;
    out.searches_strict = strict_in_one_call;
    out.search = [this](const Search& wanted) {
      asked.push_back(wanted);
      CHECK(wanted.mode != SearchMode::kStrict || strict_in_one_call);
      std::vector<Item> eligible;
      Found found;
      for (const auto& item : items) {
        if (wanted.exclude_conflicts && item.tier < 0) continue;
        if (wanted.absent_verified && item.forbidden_state != -1) continue;
        eligible.push_back(item);
        ++found.tier_counts[static_cast<std::size_t>(item.tier + 1)];
      }
      const auto key = [&](const Item& item) {
        switch (wanted.mode) {
          case SearchMode::kHard: return std::make_tuple(static_cast<float>(item.tier), 0.0f, item.score);
          case SearchMode::kStrict:
            return std::make_tuple(static_cast<float>(item.tier), item.forbidden_state == -1 ? 1.0f : 0.0f, item.score);
          case SearchMode::kSoft: return std::make_tuple(item.score + item.tier, 0.0f, 0.0f);
          case SearchMode::kOff: break;
        }
        return std::make_tuple(item.score, 0.0f, 0.0f);
      };
      std::stable_sort(eligible.begin(), eligible.end(), [&](const Item& a, const Item& b) { return key(a) > key(b); });
      for (std::size_t i = 0; i < eligible.size() && i < wanted.k; ++i) {
        const auto& item = eligible[i];
        found.rows.push_back({item.id, item.tier, item.score, 0, item.score});
      }
      return found;
    };
    out.read = [this](const std::vector<std::string>& ids, bool stamps) {
      reads_stamped.push_back(stamps);
      std::vector<Evidence> evidence(ids.size());
      for (std::size_t i = 0; i < ids.size(); ++i) {
        if (forgotten.count(ids[i])) continue;
        const auto item = std::find_if(items.begin(), items.end(), [&](const Item& it) { return it.id == ids[i]; });
        auto& e = evidence[i];
        e.found = true;
        e.cited = {{item->tier > 0 ? 1 : 0, true, 0.9, ""}, {item->forbidden_state, false, 0.0, "client"}};
        e.tau = 0.5;
        if (stamps) e.stamp_ms = item->stamp_ms;
      }
      return evidence;
    };
    return out;
  }
};

Ask asked(SearchMode mode, std::size_t k) {
  Ask ask;
  ask.mode = mode;
  ask.k = k;
  ask.concept_names = {"dog", "cat"};  // dog required, cat forbidden
  ask.required_count = 1;
  ask.uncertainty.constrained = true;
  ask.uncertainty.similarity = true;
  return ask;
}

std::vector<std::string> ids_of(const std::vector<Hit>& hits) {
  std::vector<std::string> ids;
  for (const auto& hit : hits) ids.push_back(hit.id);
  return ids;
}

MemoryStore five() {
  MemoryStore store;
  store.items = {{"a", 1, 0.5f, 0, 100},
                 {"b", 1, 0.4f, -1, 200},
                 {"c", 0, 0.9f, -1, 300},
                 {"d", -1, 0.95f, 1, 400},
                 {"e", -1, 0.3f, 1, 500}};
  return store;
}

}  // namespace

POLARMEM_TEST(hard_ranks_logic_first_and_explains_each_hit) {
  MemoryStore store = five();
  const Recalled out = run(asked(SearchMode::kHard, 3), store.store());
  CHECK(ids_of(out.hits) == (std::vector<std::string>{"a", "b", "c"}));
  CHECK(out.mode_used == SearchMode::kHard && out.mode_reason.empty());
  CHECK(out.tier_counts == (std::array<std::int64_t, 3>{2, 1, 2}));
  // b: dog HAS (entailed), cat NOT_HAS (absence verified); explained with reasons
  CHECK(out.hits[1].why.entailed == std::vector<std::size_t>{0} && out.hits[1].why.absence_verified);
  CHECK(out.hits[1].why.reasons.size() == 1);  // the HAS it is entailed by (an absence is no reason)
  CHECK(store.asked.size() == 1 && store.asked[0].ranked);
}

POLARMEM_TEST(without_explanations_hits_carry_states_and_no_reasons) {
  MemoryStore store = five();
  Ask ask = asked(SearchMode::kOff, 2);
  ask.explain = false;
  const Recalled out = run(ask, store.store());
  CHECK(ids_of(out.hits) == (std::vector<std::string>{"d", "c"}));
  CHECK(out.hits[0].why.conflicted == std::vector<std::size_t>{1} && out.hits[0].why.reasons.empty());
}

POLARMEM_TEST(strict_merged_from_two_searches_equals_strict_in_one_call) {
  for (std::size_t k = 1; k <= 5; ++k) {
    MemoryStore one = five(), two = five();
    two.strict_in_one_call = false;
    const auto native = run(asked(SearchMode::kStrict, k), one.store());
    const auto merged = run(asked(SearchMode::kStrict, k), two.store());
    CHECK(ids_of(native.hits) == ids_of(merged.hits));
    CHECK(native.tier_counts == merged.tier_counts);
    CHECK(one.asked.size() == 1);
  }
  MemoryStore two = five();
  two.strict_in_one_call = false;
  run(asked(SearchMode::kStrict, 1), two.store());  // a (tier 1) is not verified: the verified search runs
  CHECK(two.asked.size() == 2 && two.asked[0].mode == SearchMode::kHard && two.asked[1].absent_verified);
}

POLARMEM_TEST(adaptive_chooses_then_runs_the_chosen_mode) {
  MemoryStore store = five();
  Ask ask = asked(SearchMode::kHard, 2);
  ask.adaptive = true;
  Recalled out = run(ask, store.store());
  // two compatible items; the weakest (0.4) is below the best similarity (0.95) - 0.15: soft
  CHECK(out.mode_used == SearchMode::kSoft && out.mode_reason.find("compatible evidence is weak") == 0);
  CHECK(store.asked.size() == 3 && !store.asked[0].ranked && store.asked[2].mode == SearchMode::kSoft);
  CHECK(!store.asked[2].ranked);  // confidence ranks within tiers: soft has none
  ask.uncertainty.unknown = {"quokka"};
  out = run(ask, store.store());
  CHECK(out.mode_used == SearchMode::kSoft && out.mode_reason == "constraints uncertain (unknown: quokka; mapped: -)");
}

POLARMEM_TEST(recency_reorders_within_tiers_and_says_so) {
  MemoryStore store = five();
  Ask ask = asked(SearchMode::kHard, 5);
  ask.recency = recency::Term{3600.0, 1.0};
  ask.now_ms = 500;
  const Recalled out = run(ask, store.store());
  // every stamp is within a second of now: each tier's order is by s_sem + ~1.0, unchanged
  CHECK(ids_of(out.hits) == (std::vector<std::string>{"a", "b", "c", "d", "e"}));
  store.items[1].stamp_ms = 500;
  store.items[0].stamp_ms = -3600LL * 1000 * 10;  // ten half-lives old
  const Recalled newer = run(ask, store.store());
  CHECK(ids_of(newer.hits) == (std::vector<std::string>{"b", "a", "c", "d", "e"}));  // never across tiers
  CHECK(!newer.recency_words.empty() && newer.mode_reason == newer.recency_words);
  // only the recency term's candidates are read with their stamps, not the suppressed search's
  store.reads_stamped.clear();
  ask.suppressed_k = 2;
  run(ask, store.store());
  CHECK(store.reads_stamped.size() >= 2 && store.reads_stamped.front() && !store.reads_stamped.back());
}

POLARMEM_TEST(suppressed_lists_what_plain_similarity_would_have_shown) {
  MemoryStore store = five();
  Ask ask = asked(SearchMode::kHard, 2);
  ask.suppressed_k = 5;
  const Recalled out = run(ask, store.store());
  // plain similarity's top 2 are d (conflict) and c: d was kept out
  CHECK(ids_of(out.suppressed) == std::vector<std::string>{"d"});
  CHECK(out.suppressed[0].why.conflicted == std::vector<std::size_t>{1});
  ask.mode = SearchMode::kOff;
  CHECK(run(ask, store.store()).suppressed.empty());
}

POLARMEM_TEST(items_forgotten_since_the_search_are_dropped) {
  MemoryStore store = five();
  store.forgotten = {"a"};
  const Recalled out = run(asked(SearchMode::kHard, 3), store.store());
  CHECK(ids_of(out.hits) == (std::vector<std::string>{"b", "c"}));
}

POLARMEM_TEST(mode_reason_is_written_from_the_filter_the_ranking_and_the_rule) {
  MemoryStore empty;
  Ask ask = asked(SearchMode::kHard, 3);
  ask.metadata_filtered = true;
  CHECK(run(ask, empty.store()).mode_reason == "no item matches the metadata filter");
  ask.confidence_words = "ranked by confidence within tiers (x)";
  ask.rule_words = "hard (the paper's rule)";
  CHECK(run(ask, empty.store()).mode_reason ==
        "no mode requested: the namespace's rule, hard (the paper's rule); no item matches the metadata filter; "
        "ranked by confidence within tiers (x)");
  MemoryStore store = five();
  ask.mode = SearchMode::kSoft;  // soft has no tiers to rank within
  ask.rule_words = "soft (a test's rule)";
  CHECK(run(ask, store.store()).mode_reason == "no mode requested: the namespace's rule, soft (a test's rule)");
}

int main() { return polarmem::testing::run_all(); }
