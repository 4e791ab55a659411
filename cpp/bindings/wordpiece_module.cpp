// The WordPiece tokenizer's binding (cpp/src/wordpiece.cpp) inside polarmem_server._core. A str
// with a character past the BMP is declined before it is encoded to UTF-8 (the core would decline
// it anyway); an ASCII str's UTF-8 is its own buffer, so nothing is copied on the way in.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <vector>

#include "polarmem/wordpiece.hpp"

namespace py = pybind11;

namespace polarmem::bindings {

void bind_wordpiece(py::module_& m) {
  py::class_<WordPieceTokenizer, std::shared_ptr<WordPieceTokenizer>>(
      m, "WordPieceTokenizer",
      "BERT's uncased WordPiece tokenization of ASCII text, id for id what the HF tokenizer gives "
      "(cpp/include/polarmem/wordpiece.hpp).")
      .def(py::init([](std::vector<std::string> vocabulary, std::int32_t cls_id, std::int32_t sep_id,
                       std::int32_t unk_id, std::size_t max_tokens, std::vector<std::string> declined_literals) {
             return std::make_shared<WordPieceTokenizer>(std::move(vocabulary), cls_id, sep_id, unk_id, max_tokens,
                                                         std::move(declined_literals));
           }),
           py::arg("vocabulary"), py::arg("cls_id"), py::arg("sep_id"), py::arg("unk_id"), py::arg("max_tokens"),
           py::arg("declined_literals"))
      .def(
          "encode",
          [](const WordPieceTokenizer& self, const py::str& text) -> py::object {
            // Past the BMP nothing is covered; a lone surrogate has no UTF-8 (HF's to decide).
            if (PyUnicode_MAX_CHAR_VALUE(text.ptr()) > 0xFFFF) return py::none();
            Py_ssize_t length = 0;
            const char* data = PyUnicode_AsUTF8AndSize(text.ptr(), &length);
            if (data == nullptr) {
              PyErr_Clear();
              return py::none();
            }
            std::vector<std::int32_t> ids;
            if (!self.encode({data, static_cast<std::size_t>(length)}, &ids)) return py::none();
            return py::cast(ids);
          },
          py::arg("text"),
          "[CLS] ... [SEP] ids, or None: a character the table does not cover or an added token (ask the HF tokenizer)")
      .def_property_readonly("max_tokens", &WordPieceTokenizer::max_tokens);
}

}  // namespace polarmem::bindings
