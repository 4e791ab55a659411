// A closed vocabulary's word-to-concept mapping (concept_mapping.hpp).
#include "polarmem/concept_mapping.hpp"

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

}  // namespace polarmem::text
