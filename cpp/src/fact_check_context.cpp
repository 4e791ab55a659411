#include "polarmem/fact_check_context.hpp"

#include <algorithm>

#include "polarmem/utf8.hpp"

namespace polarmem::text {

namespace {

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// The list with the query's concepts it holds first, at most kContextListLimit shown; "-" when empty.
std::string concept_list(const std::vector<std::string>& names, const std::vector<std::string>& first) {
  std::vector<const std::string*> ordered;
  for (const auto& name : first) {
    if (contains(names, name)) ordered.push_back(&name);
  }
  for (const auto& name : names) {
    if (!contains(first, name)) ordered.push_back(&name);
  }
  if (ordered.empty()) return "-";
  std::string out;
  const std::size_t shown = std::min(ordered.size(), kContextListLimit);
  for (std::size_t i = 0; i < shown; ++i) {
    if (i) out += ", ";
    out += *ordered[i];
  }
  if (ordered.size() > shown) out += " (+" + std::to_string(ordered.size() - shown) + " more)";
  return out;
}

// The content cut to `budget` code points (see the header); unchanged when it fits.
std::string within_budget(const std::string& content, std::size_t budget) {
  std::size_t count = 0, keep_bytes = 0;
  for (std::size_t i = 0; i < content.size(); ++count) {
    if (count == budget - 1) keep_bytes = i;
    i += utf8::next_char(content, i).second;
  }
  if (count <= budget) return content;
  return std::string(utf8::strip_end(std::string_view(content).substr(0, keep_bytes))) + "\u2026";
}

}  // namespace

std::string fact_check_context(const std::vector<ContextEntry>& entries, std::size_t budget_chars,
                               const std::vector<std::string>& query_concepts) {
  std::string out;
  for (std::size_t rank = 1; rank <= entries.size(); ++rank) {
    const auto& entry = entries[rank - 1];
    if (rank > 1) out += '\n';
    // Appended piece by piece: GCC 12's -Wrestrict misfires on `"[" + std::to_string(...)` at -O3.
    out += '[';
    out += std::to_string(rank);
    out += "] [Fact Check: ";
    out += entry.status;
    out += "] ";
    out += within_budget(entry.content, budget_chars);
    out += "\n    HAS: ";
    out += concept_list(entry.has, query_concepts);
    out += " | NOT_HAS: ";
    out += concept_list(entry.not_has, query_concepts);
  }
  return out;
}

}  // namespace polarmem::text
