// The fact-checked context a Recall hands the model (RecallRequest.include_context): one entry
// per hit in rank order, "[rank] [Fact Check: STATUS] content" with the content cut to the
// per-item budget, then the item's HAS / NOT_HAS concepts, the query's own concepts first.
// The one implementation: the library (recall.py render_context) and the compiled front both
// call it, so their answers agree byte for byte.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace polarmem::text {

struct ContextEntry {
  std::string status;   // VERIFIED, NEUTRAL or CONFLICT
  std::string content;  // the item's text, else its uri, else its id (UTF-8)
  std::vector<std::string> has, not_has;  // its concepts by state, in its evidence's order
};

// The per-item budget a request may ask for (RecallRequest.context_budget_chars; 0 = the
// default). The core's Recall refuses one outside the range (cpp/front/recall_plan.cpp).
inline constexpr std::size_t kDefaultContextBudget = 400, kMinContextBudget = 16, kMaxContextBudget = 100000;

// How many concepts a HAS / NOT_HAS list shows before "(+N more)".
inline constexpr std::size_t kContextListLimit = 12;

// `budget_chars` counts code points, as the library's Python did: longer content keeps its first
// budget - 1, trailing whitespace dropped, and ends with "…".
std::string fact_check_context(const std::vector<ContextEntry>& entries, std::size_t budget_chars,
                               const std::vector<std::string>& query_concepts);

}  // namespace polarmem::text
