// The recency term's binding (cpp/src/recency.cpp) inside polarmem_server._core: plain tuples in
// and out; the library (polarmem_server/library/recency.py) runs the searches and reads the stamps
// it is asked for.
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "polarmem/index.hpp"
#include "polarmem/recency.hpp"

namespace py = pybind11;

namespace polarmem::bindings {

namespace {

using PyHit = std::tuple<std::string, int, double>;  // id, tier, s_sem
using PySearch = std::function<std::tuple<std::vector<PyHit>, std::array<std::int64_t, 3>>(std::size_t)>;
using PyRead = std::function<std::vector<std::optional<std::int64_t>>(const std::vector<std::string>&)>;

}  // namespace

void bind_recency(py::module_& m) {
  m.def(
      "rank_with_recency",
      [](std::size_t k, bool tiered, double half_life_s, double weight, std::int64_t now_ms, const PySearch& search,
         const PyRead& read, std::size_t max_candidates) {
        const recency::RunSearch run = [&search](std::size_t c) {
          auto [hits, tier_counts] = search(c);
          recency::Searched found;
          for (auto& [id, tier, score] : hits) found.hits.push_back({std::move(id), tier, score});
          found.tier_counts = tier_counts;
          return found;
        };
        const recency::ReadStamps stamps = [&read](const std::vector<std::string>& ids) {
          auto out = read(ids);
          if (out.size() != ids.size()) throw py::value_error("read must return one stamp (or None) per id");
          return out;
        };
        const recency::Term term{half_life_s, weight};
        recency::Ranked ranked;
        {
          py::gil_scoped_release unlocked;  // the callables take the GIL back
          ranked = recency::rank(k, tiered, term, now_ms, max_candidates, run, stamps);
        }
        std::vector<std::string> ids;
        for (const auto& row : ranked.rows) ids.push_back(row.id);
        return py::make_tuple(ids, ranked.tier_counts, ranked.candidates, ranked.exact,
                              recency::describe(ranked, term));
      },
      py::arg("k"), py::arg("tiered"), py::arg("half_life_s"), py::arg("weight"), py::arg("now_ms"), py::arg("search"),
      py::arg("read"), py::arg("max_candidates") = kMaxTopK,
      "The exact top k by (tier, s_sem + weight x 2^(-age / half_life)) (cpp/include/polarmem/recency.hpp). "
      "search(c) -> ([(id, tier, s_sem)], (conflict, neutral, entailed)); read(ids) -> [updated_ms or created_ms, or "
      "None] per id. Returns (ids in rank order, the first search's tier counts, candidates asked last, exact, what "
      "mode_reason says of it).");
}

}  // namespace polarmem::bindings
