// Strict mode's merge (cpp/src/strict_merge.cpp) inside polarmem_server._core: plain tuples in
// and out; the library (polarmem_server/library/recall.py) runs the two searches of a backend that
// cannot search strict in one call.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <tuple>
#include <vector>

#include "polarmem/strict_merge.hpp"

namespace py = pybind11;

namespace polarmem::bindings {

namespace {

using PyRow = std::tuple<std::int64_t, int, bool, int, float>;  // key, tier, verified, flags, rank value

std::vector<strict::Row> rows_of(const std::vector<PyRow>& rows) {
  std::vector<strict::Row> out;
  for (const auto& [key, tier, verified, flags, rank_value] : rows) {
    out.push_back(
        {key, static_cast<std::int8_t>(tier), verified, static_cast<std::int8_t>(flags), rank_value, rank_value});
  }
  return out;
}

}  // namespace

void bind_strict(py::module_& m) {
  m.def(
      "strict_needs_verified_search",
      [](bool has_forbidden, const std::vector<PyRow>& hard) {
        return strict::needs_verified_search(has_forbidden, rows_of(hard));
      },
      py::arg("has_forbidden"), py::arg("hard"),
      "whether strict needs its second search (the hard top k among verified items); rows: (key, tier, verified, "
      "confidence flags, rank value)");
  m.def(
      "strict_merge",
      [](const std::vector<PyRow>& hard, const std::vector<PyRow>& verified, std::size_t k) {
        std::vector<std::int64_t> keys;
        for (const auto& row : strict::merge(rows_of(hard), rows_of(verified), k)) keys.push_back(row.key);
        return keys;
      },
      py::arg("hard"), py::arg("verified"), py::arg("k"),
      "the keys of strict's top k from the hard top k and the verified search's rows (key, tier, verified, "
      "confidence flags, rank value)");
}

}  // namespace polarmem::bindings
