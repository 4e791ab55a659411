// A closed vocabulary's mapping of a query word that names no concept to the most similar
// concept (the word's and the concept names' embeddings by the namespace's encoder): the one
// rule the library (polarmem_server/library/recall.py plan_query) and the compiled front both
// apply, so a word maps alike, similarity bit for bit, on either. An open vocabulary maps
// nothing: there a word no stored text mentions has no evidence, and a similar concept's ("hawk"
// for "eagle") would be the very hallucination PolarMem refuses.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace polarmem::text {

// A word maps only to a concept at least this similar (dot product of unit embeddings).
inline constexpr float kConceptMapMinSimilarity = 0.75f;

struct MappedConcept {
  std::uint32_t concept_id = 0;
  float similarity = 0.0f;
};

// Per row of `words` (n rows of `dim` floats), the row of `concepts` (m rows: concept id = row)
// with the highest dot product, the first on ties, when it reaches kConceptMapMinSimilarity.
std::vector<std::optional<MappedConcept>> closest_concepts(const float* words, std::size_t n, const float* concepts,
                                                           std::size_t m, std::size_t dim);

}  // namespace polarmem::text
