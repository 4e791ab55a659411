// Did-you-mean suggestions for a concept name a namespace's vocabulary lacks: the closest known
// names by Python difflib's ratio (SequenceMatcher(None, a, b).ratio(): Ratcliff/Obershelp over
// code points, with its "popular element" heuristic for sequences of 200 or more) on normal
// forms, plus a containment rule so that "dogs" or "hot dogs" still find "hot dog". The one
// implementation: the library (domain/suggest.py) and the core's Recall (namespace_view.cpp)
// both call it.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace polarmem::suggest {

inline constexpr std::size_t kDefaultLimit = 3;
inline constexpr double kDefaultCutoff = 0.6;

// difflib.SequenceMatcher(None, a, b).ratio() of two UTF-8 strings, compared code point by code
// point: 2 * matches / (len(a) + len(b)), 1.0 for two empty strings.
double ratio(std::string_view a, std::string_view b);

// The positions in `keys` (normal forms of the known names, each once, in the vocabulary's order)
// of up to `limit` keys closest to `asked` (a normal form), best first: an equal key alone; else
// every key whose ratio is at least `cutoff`, or whose words contain the asked words or the other
// way round (counted as `cutoff`), by falling ratio, ties in the keys' order.
std::vector<std::size_t> closest(std::string_view asked, const std::vector<std::string>& keys,
                                 std::size_t limit = kDefaultLimit, double cutoff = kDefaultCutoff);

}  // namespace polarmem::suggest
