// The modes' rules (cpp/src/mode_rules.cpp) inside polarmem_server._core: plain lists in and out;
// the library (polarmem_server/library/recall.py) runs the searches adaptive asks for.
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

void bind_mode_rules(py::module_& m) {
  m.def(
      "choose_adaptive",
      [](std::vector<std::string> unknown, std::vector<std::string> mapped, bool constrained, bool similarity,
         std::size_t k, const modes::HardProbe& hard, const modes::BestSimilarity& best) {
        const auto choice =
            modes::choose_adaptive({std::move(unknown), std::move(mapped), constrained, similarity}, k, hard, best);
        return std::make_tuple(choice.hard ? "hard" : "soft", choice.reason);
      },
      py::arg("unknown"), py::arg("mapped"), py::arg("constrained"), py::arg("similarity"), py::arg("k"),
      py::arg("hard"), py::arg("best"),
      "adaptive's (mode, reason): hard() is the hard top k's [(tier, s_sem)] ranked by (tier, s_sem), best() the best "
      "s_sem of any eligible item; each is called only when the choice needs it");
  m.def("suppressed", &modes::suppressed, py::arg("kept"), py::arg("ids"), py::arg("tiers"), py::arg("n"),
        "the positions in a plain-similarity search's hits of the first n of tier -1 not among the kept ids");
}

}  // namespace polarmem::bindings
