// The request checks' binding (cpp/src/request_checks.cpp) inside polarmem_server._core: the
// library's writes check the item fields a Recall shares (vectors, metadata, concept names) in
// the core's words (domain/items.py). Strings arrive as UTF-8 bytes (surrogatepass, as the text
// binding takes them); each check returns its message, "" when nothing is wrong.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <utility>
#include <vector>

#include "polarmem/request_checks.hpp"

namespace py = pybind11;
using namespace polarmem::checks;

namespace polarmem::bindings {

void bind_checks(py::module_& m) {
  m.attr("MAX_STATUS_MESSAGE_CHARS") = kMaxMessageChars;
  m.attr("MAX_QUOTED_CHARS") = kMaxQuotedChars;
  m.attr("MAX_ITEM_ID_BYTES") = kMaxItemIdBytes;
  m.attr("MAX_METADATA_KEYS") = kMaxMetadataKeys;
  m.attr("MAX_METADATA_KEY_BYTES") = kMaxMetadataKeyBytes;
  m.attr("MAX_METADATA_VALUE_BYTES") = kMaxMetadataValueBytes;
  m.attr("MAX_METADATA_TOTAL_BYTES") = kMaxMetadataTotalBytes;
  m.def(
      "vector_problem",
      [](const std::string& where, const std::string& space, std::size_t dim, bool rows,
         const py::array_t<float, py::array::c_style | py::array::forcecast>& values) {
        const std::vector<std::size_t> shape(values.shape(), values.shape() + values.ndim());
        return vector_problem(where, space, dim, rows, shape, values.data(), static_cast<std::size_t>(values.size()));
      },
      py::arg("where"), py::arg("space"), py::arg("dim"), py::arg("rows"), py::arg("values"),
      "what is wrong with `values` for a space of width `dim` (rows: a multi-vector item's), or ''");
  m.def(
      "metadata_problem",
      [](const std::string& where, const std::vector<std::pair<py::bytes, py::bytes>>& pairs) {
        std::vector<std::pair<std::string, std::string>> given;
        for (const auto& [key, value] : pairs) given.emplace_back(key, value);
        return metadata_problem(where, given);
      },
      py::arg("where"), py::arg("pairs"), "what is wrong with metadata (key, value) UTF-8 pairs, or ''");
  m.def(
      "concept_name_problem",
      [](const std::string& where, const py::bytes& name) { return concept_name_problem(where, std::string(name)); },
      py::arg("where"), py::arg("name"), "why a concept name (UTF-8) is refused, or ''");
  m.def("count_problem", &count_problem, py::arg("field"), py::arg("value"), py::arg("low"), py::arg("high"),
        "why `value` is not a count of `field` in [low, high], or ''");
  m.def(
      "quoted", [](const py::bytes& utf8) { return quoted(std::string(utf8)); }, py::arg("utf8"),
      "Python's repr of a UTF-8 str, cut as the library cuts a client's value");
  m.def("float_repr", &float_repr, py::arg("value"), "Python's repr of a float");
}

}  // namespace polarmem::bindings
