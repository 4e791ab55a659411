// Adaptive's choice and the suppressed hits (mode_rules.hpp).
#include "polarmem/mode_rules.hpp"

#include <algorithm>
#include <cstdio>
#include <unordered_set>

namespace polarmem::modes {

namespace {

std::string listed(const std::vector<std::string>& words) {
  if (words.empty()) return "-";
  std::string out;
  for (const auto& word : words) out += (out.empty() ? "" : ", ") + word;
  return out;
}

std::string formatted(const char* format, double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, format, value);
  return buffer;
}

}  // namespace

AdaptiveChoice choose_adaptive(const AdaptiveQuery& query, std::size_t k, bool exclude_conflicts,
                               const RunRuleSearch& run) {
  if (!query.unknown.empty() || !query.mapped.empty()) {
    return {false,
            "constraints uncertain (unknown: " + listed(query.unknown) + "; mapped: " + listed(query.mapped) + ")"};
  }
  if (!query.constrained) return {false, "no constraints to enforce"};
  const auto top = run({SearchMode::kHard, k, exclude_conflicts});
  const auto compatible =
      static_cast<std::size_t>(std::count_if(top.begin(), top.end(), [](const auto& hit) { return hit.first >= 0; }));
  if (compatible < k) {
    return {false, "only " + std::to_string(compatible) + " compatible items for k=" + std::to_string(k)};
  }
  if (!query.similarity) {
    return {true, "certain constraints; " + std::to_string(compatible) + " compatible items"};
  }
  const auto best = run({SearchMode::kOff, 1, false});
  if (best.empty()) return {false, "no eligible item"};  // (k compatible items were just found)
  const double best_similarity = best.front().second;
  const std::string margin = formatted("%g", kAdaptiveMargin);
  double weakest = top.front().second;
  for (const auto& hit : top) weakest = std::min(weakest, hit.second);
  if (weakest >= best_similarity - kAdaptiveMargin) {
    return {true, "certain constraints; the hard top " + std::to_string(k) + " stays within " + margin +
                      " of the best similarity"};
  }
  return {false, "compatible evidence is weak: the hard top " + std::to_string(k) + " reaches similarity " +
                     formatted("%.2f", weakest) + ", below " + formatted("%.2f", best_similarity) + " - " + margin};
}

RuleSearch suppressed_search(std::size_t k) { return {SearchMode::kOff, k, false}; }

std::vector<std::size_t> suppressed(const std::vector<std::string>& kept, const std::vector<std::string>& ids,
                                    const std::vector<std::int8_t>& tiers, std::size_t n) {
  const std::unordered_set<std::string> shown(kept.begin(), kept.end());
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < ids.size() && i < tiers.size() && out.size() < n; ++i) {
    if (tiers[i] == -1 && !shown.count(ids[i])) out.push_back(i);
  }
  return out;
}

}  // namespace polarmem::modes
