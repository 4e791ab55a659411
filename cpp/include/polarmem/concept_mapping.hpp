// A text query's constraints from its parse (query_concepts), and a closed vocabulary's mapping
// of a query word that names no concept to the most similar concept (the word's and the concept names' embeddings by
// the namespace's encoder): the one rule the library (polarmem_server/library/recall.py plan_query) and the compiled
// front both apply, so a word maps alike, similarity bit for bit, on either. An open vocabulary maps nothing: there a
// word no stored text mentions has no evidence, and a similar concept's ("hawk" for "eagle") would be the very
// hallucination PolarMem refuses.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "polarmem/text_parse.hpp"

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

// A text query's constraints, as the library's plan_query and the compiled front read a parse
// with no explicit names: the concepts affirmed required and those negated forbidden, each in
// order of first mention (`polarity`, text::polarity's); then each word said with a state that
// names no concept (`unknown`'s, in order) mapped by `map` to a concept on its side (a negated
// word's forbidden), or left unknown; a concept required once, a forbidden one never required.
// Words said with no state ask nothing. `map` is called once, only when such words exist.
struct QueryConcepts {
  std::vector<std::uint32_t> required, forbidden;
  std::vector<std::string> unknown;
  std::vector<std::pair<std::string, MappedConcept>> mapped;  // (word, its concept)
};
// Per word, its concept (closest_concepts in a closed vocabulary; nothing in an open one).
using MapWords = std::function<std::vector<std::optional<MappedConcept>>(const std::vector<std::string>& words)>;
QueryConcepts query_concepts(const std::vector<std::pair<std::uint32_t, bool>>& polarity,
                             const std::vector<UnknownTerm>& unknown, const MapWords& map);

}  // namespace polarmem::text
