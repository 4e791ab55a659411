// The modes' rules (cpp/src/mode_rules.cpp) inside polarmem_server._core: plain lists in and out;
// the library (polarmem_server/library/recall.py) runs the searches the rules ask for.
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "polarmem/mode_rules.hpp"

namespace py = pybind11;

namespace polarmem::bindings {

namespace {

using PySearch = std::function<std::vector<std::pair<int, double>>(SearchMode, std::size_t, bool)>;

modes::RunRuleSearch run_with(const PySearch& search) {
  return [&search](const modes::RuleSearch& wanted) { return search(wanted.mode, wanted.k, wanted.exclude_conflicts); };
}

}  // namespace

void bind_mode_rules(py::module_& m) {
  m.def(
      "choose_adaptive",
      [](std::vector<std::string> unknown, std::vector<std::string> mapped, bool constrained, bool similarity,
         std::size_t k, bool exclude_conflicts, const PySearch& search) {
        const auto choice = modes::choose_adaptive({std::move(unknown), std::move(mapped), constrained, similarity}, k,
                                                   exclude_conflicts, run_with(search));
        return std::make_tuple(choice.hard ? "hard" : "soft", choice.reason);
      },
      py::arg("unknown"), py::arg("mapped"), py::arg("constrained"), py::arg("similarity"), py::arg("k"),
      py::arg("exclude_conflicts"), py::arg("search"),
      "adaptive's (mode, reason); search(mode, k, exclude_conflicts) -> [(tier, s_sem)]: the Recall's search in that "
      "mode, ranked by (tier, s_sem) alone, called only when the choice needs it");
  m.def(
      "suppressed_search",
      [](std::size_t k) {
        const auto wanted = modes::suppressed_search(k);
        return std::make_tuple(wanted.mode, wanted.k, wanted.exclude_conflicts);
      },
      py::arg("k"), "(mode, k, exclude_conflicts) of the search suppressed hits are picked from");
  m.def("suppressed", &modes::suppressed, py::arg("kept"), py::arg("ids"), py::arg("tiers"), py::arg("n"),
        "the positions in a plain-similarity search's hits of the first n of tier -1 not among the kept ids");
}

}  // namespace polarmem::bindings
