// The hit explanation's binding (cpp/src/hit_explanation.cpp) inside polarmem_server._core:
// plain tuples in and out; the library (polarmem_server/library/recall.py) reads the states it cites.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <tuple>
#include <vector>

#include "polarmem/hit_explanation.hpp"

namespace py = pybind11;

namespace polarmem::bindings {

void bind_explain(py::module_& m) {
  m.def(
      "explain_hit",
      [](int tier, std::size_t required, const std::vector<std::string>& names,
         const std::vector<std::tuple<int, bool, double, std::string>>& cited, double tau, double delta,
         bool with_reasons) {
        std::vector<explain::Cited> states;
        states.reserve(cited.size());
        for (const auto& [state, scored, mean, source] : cited) states.push_back({state, scored, mean, source});
        explain::Explanation out;
        try {
          out = explain::explain_hit(tier, required, names, states, tau, delta, with_reasons);
        } catch (const std::invalid_argument& e) {
          throw py::value_error(e.what());
        }
        std::vector<std::string> entailed, conflicted;
        for (const auto i : out.entailed) entailed.push_back(names[i]);
        for (const auto i : out.conflicted) conflicted.push_back(names[i]);
        return std::make_tuple(entailed, conflicted, out.reasons, out.absence_verified);
      },
      py::arg("tier"), py::arg("required"), py::arg("names"), py::arg("cited"), py::arg("tau"), py::arg("delta"),
      py::arg("with_reasons"),
      "names: the query's concepts, the first `required` required, the rest forbidden; cited: per concept (state +1 "
      "HAS / -1 NOT_HAS / 0, scored, mean P(Yes), source). Returns (entailed names, conflicted names, reasons, "
      "absence_verified).");
}

}  // namespace polarmem::bindings
