// A text query's constraints and a closed vocabulary's word-to-concept mapping (concept_mapping.hpp).
#include "polarmem/concept_mapping.hpp"

#include <algorithm>

#include "polarmem/simd.hpp"

namespace polarmem::text {

std::vector<std::optional<MappedConcept>> closest_concepts(const float* words, std::size_t n, const float* concepts,
                                                           std::size_t m, std::size_t dim) {
  const auto dot = active_kernels().dot_f32;
  std::vector<std::optional<MappedConcept>> out(n);
  for (std::size_t i = 0; i < n && m > 0; ++i) {
    MappedConcept best{0, dot(words + i * dim, concepts, dim)};
    for (std::size_t c = 1; c < m; ++c) {
      const float similarity = dot(words + i * dim, concepts + c * dim, dim);
      if (similarity > best.similarity) best = {static_cast<std::uint32_t>(c), similarity};
    }
    if (best.similarity >= kConceptMapMinSimilarity) out[i] = best;
  }
  return out;
}

QueryConcepts query_concepts(const std::vector<std::pair<std::uint32_t, bool>>& polarity,
                             const std::vector<UnknownTerm>& unknown, const MapWords& map) {
  QueryConcepts out;
  for (const auto& [concept_id, negated] : polarity) (negated ? out.forbidden : out.required).push_back(concept_id);
  std::vector<const UnknownTerm*> asked;
  std::vector<std::string> words;
  for (const auto& term : unknown) {
    if (term.uncertain) continue;
    asked.push_back(&term);
    words.push_back(term.word);
  }
  const auto has = [](const std::vector<std::uint32_t>& side, std::uint32_t id) {
    return std::find(side.begin(), side.end(), id) != side.end();
  };
  const auto mapped = words.empty() ? std::vector<std::optional<MappedConcept>>{} : map(words);
  for (std::size_t i = 0; i < asked.size(); ++i) {
    if (i >= mapped.size() || !mapped[i]) {
      out.unknown.push_back(asked[i]->word);
      continue;
    }
    auto& side = asked[i]->negated ? out.forbidden : out.required;
    if (!has(side, mapped[i]->concept_id)) side.push_back(mapped[i]->concept_id);
    out.mapped.emplace_back(asked[i]->word, *mapped[i]);
  }
  out.forbidden.erase(std::remove_if(out.forbidden.begin(), out.forbidden.end(),
                                     [&](std::uint32_t id) { return has(out.required, id); }),
                      out.forbidden.end());
  return out;
}

}  // namespace polarmem::text
