// The recency term within logic tiers (recency.hpp).
#include "polarmem/recency.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

namespace polarmem::recency {

namespace {

struct Row {
  int tier;
  double final_value;
  std::size_t position;
  std::size_t hit;
};

// Whether no item beyond the last candidate can enter the top k (the file comment).
bool proven(const std::vector<Candidate>& hits, const std::vector<Row>& top, std::size_t k, bool tiered,
            double weight) {
  if (top.size() < k) return false;  // records went missing: ask for more
  const Row& kth = top.back();
  const Candidate& last = hits.back();
  if ((tiered ? last.tier : 0) != kth.tier) return true;  // the k-th item's tier ended among the candidates
  return last.score + weight <= kth.final_value;
}

std::string number(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%g", value);
  return buffer;
}

}  // namespace

double factor(std::int64_t stamp_ms, std::int64_t now_ms, double half_life_s) {
  const double age_s = static_cast<double>(std::max<std::int64_t>(0, now_ms - stamp_ms)) / 1000.0;
  return std::pow(2.0, -age_s / half_life_s);
}

Ranked rank(std::size_t k, bool tiered, const Term& term, std::int64_t now_ms, std::size_t max_candidates,
            const RunSearch& search, const ReadStamps& read) {
  Ranked ranked;
  std::size_t c = std::min(kFirstCandidatesPerHit * k, max_candidates);
  bool first = true;
  while (true) {
    Searched found = search(c);
    if (first) ranked.tier_counts = found.tier_counts;
    first = false;
    std::vector<std::string> ids;
    for (const auto& hit : found.hits) ids.push_back(hit.id);
    const auto stamps = ids.empty() ? std::vector<std::optional<std::int64_t>>{} : read(ids);
    std::vector<Row> rows;
    for (std::size_t i = 0; i < found.hits.size() && i < stamps.size(); ++i) {
      if (!stamps[i]) continue;  // forgotten since the search
      const double final_value = found.hits[i].score + term.weight * factor(*stamps[i], now_ms, term.half_life_s);
      rows.push_back({tiered ? found.hits[i].tier : 0, final_value, i, i});
    }
    std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
      if (a.tier != b.tier) return a.tier > b.tier;
      if (a.final_value != b.final_value) return a.final_value > b.final_value;
      return a.position < b.position;
    });
    if (rows.size() > k) rows.resize(k);
    const auto eligible = static_cast<std::size_t>(
        std::accumulate(ranked.tier_counts.begin(), ranked.tier_counts.end(), std::int64_t{0}));
    const bool settled = found.hits.size() < c || c >= eligible || proven(found.hits, rows, k, tiered, term.weight);
    if (settled || c >= max_candidates) {
      ranked.exact = settled;
      ranked.candidates = c;
      for (const Row& row : rows) ranked.rows.push_back(found.hits[row.hit]);
      return ranked;
    }
    c = std::min({2 * c, max_candidates, std::max(eligible, k)});
  }
}

std::string describe(const Ranked& ranked, const Term& term) {
  std::string said =
      "within tiers: s_sem + " + number(term.weight) + " x 2^(-age / " + number(term.half_life_s) + " s)";
  if (!ranked.exact) {
    said += "; not proven exact: the core's top " + std::to_string(ranked.candidates) +
            " candidates did not settle the top k";
  }
  return said;
}

}  // namespace polarmem::recency
