// Strict mode's merge of two hard searches (strict_merge.hpp): when the second search is needed,
// the order by (tier, verified, flags, rank value), an item of both searches counted once, ties
// kept in the hard list's order, the cut at k. The index's own strict search (test_index.cpp) and
// the Milvus backend's conformance tests run it end to end.
#include <vector>

#include "check.hpp"
#include "polarmem/strict_merge.hpp"

using namespace polarmem::strict;

namespace {

Row row(std::int64_t key, int tier, bool verified, float rank, int flags = 0) {
  return {key, static_cast<std::int8_t>(tier), verified, static_cast<std::int8_t>(flags), rank, rank};
}

std::vector<std::int64_t> keys(const std::vector<Row>& rows) {
  std::vector<std::int64_t> out;
  for (const auto& r : rows) out.push_back(r.key);
  return out;
}

}  // namespace

POLARMEM_TEST(the_second_search_is_needed_only_for_an_unverified_hit_under_a_forbidden_concept) {
  const std::vector<Row> verified{row(1, 1, true, 0.9f), row(2, 0, true, 0.8f)};
  const std::vector<Row> mixed{row(1, 1, true, 0.9f), row(2, 0, false, 0.8f)};
  CHECK(!needs_verified_search(true, verified));
  CHECK(needs_verified_search(true, mixed));
  CHECK(!needs_verified_search(false, mixed));
  CHECK(!needs_verified_search(true, {}));
}

POLARMEM_TEST(verified_items_come_first_within_each_tier_never_across_tiers) {
  // hard top 3: an unverified entailed item, a verified neutral one, an unverified neutral one
  const std::vector<Row> hard{row(10, 1, false, 0.95f), row(11, 0, true, 0.7f), row(12, 0, false, 0.9f)};
  // the verified search: a verified entailed item below 10, and 11 again
  const std::vector<Row> verified{row(20, 1, true, 0.5f), row(11, 0, true, 0.7f)};
  CHECK(keys(merge(hard, verified, 10)) == (std::vector<std::int64_t>{20, 10, 11, 12}));
  CHECK(keys(merge(hard, verified, 2)) == (std::vector<std::int64_t>{20, 10}));
}

POLARMEM_TEST(flags_then_rank_value_order_within_tier_and_verification_and_ties_keep_the_hard_order) {
  const std::vector<Row> hard{row(1, 0, true, 0.5f), row(2, 0, true, 0.5f), row(3, 0, true, 0.4f, 1)};
  const std::vector<Row> verified{row(4, 0, true, 0.5f)};
  // flags first (3), then rank value with ties in the hard list's order, the verified search's after
  CHECK(keys(merge(hard, verified, 10)) == (std::vector<std::int64_t>{3, 1, 2, 4}));
}

int main() { return polarmem::testing::run_all(); }
