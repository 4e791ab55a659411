// Strict mode's merge of two hard searches (strict_merge.hpp).
#include "polarmem/strict_merge.hpp"

#include <algorithm>
#include <unordered_set>

namespace polarmem::strict {

bool needs_verified_search(bool has_forbidden, const std::vector<Row>& hard) {
  return has_forbidden && std::any_of(hard.begin(), hard.end(), [](const Row& row) { return !row.verified; });
}

std::vector<Row> merge(std::vector<Row> hard, const std::vector<Row>& verified, std::size_t k) {
  std::unordered_set<std::int64_t> in_hard;
  for (const Row& row : hard) in_hard.insert(row.key);
  for (const Row& row : verified) {
    if (!in_hard.count(row.key)) hard.push_back(row);
  }
  std::stable_sort(hard.begin(), hard.end(), [](const Row& a, const Row& b) {
    if (a.tier != b.tier) return a.tier > b.tier;
    if (a.verified != b.verified) return a.verified;
    if (a.flags != b.flags) return a.flags > b.flags;
    return a.rank_value > b.rank_value;
  });
  if (hard.size() > k) hard.resize(k);
  return hard;
}

}  // namespace polarmem::strict
