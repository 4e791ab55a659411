// The WordPiece tokenizer's binding (cpp/src/wordpiece.cpp) inside polarmem_server._core. A str
// with a character the compiled tokenizer does not cover (wordpiece.hpp: a lone surrogate) is declined before it
// is encoded to UTF-8 (the core would decline it anyway); an ASCII str's UTF-8 is its own buffer, so nothing is
// copied on the way in.
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
      "BERT's uncased WordPiece tokenization of any text (every Unicode scalar value: "
      "cpp/include/polarmem/wordpiece.hpp), id for id what the HF tokenizer gives.")
      .def(py::init([](std::vector<std::string> vocabulary, std::int32_t cls_id, std::int32_t sep_id,
                       std::int32_t unk_id, std::size_t max_tokens, std::vector<std::string> declined_literals,
                       bool latin) {
             return std::make_shared<WordPieceTokenizer>(std::move(vocabulary), cls_id, sep_id, unk_id, max_tokens,
                                                         std::move(declined_literals), latin);
           }),
           py::arg("vocabulary"), py::arg("cls_id"), py::arg("sep_id"), py::arg("unk_id"), py::arg("max_tokens"),
           py::arg("declined_literals"), py::arg("latin") = true)
      .def(
          "encode",
          [](const WordPieceTokenizer& self, const py::str& text) -> py::object {
            // A str holding a character the tokenizer declines (wordpiece.hpp) is declined before its
            // UTF-8 is made. (A lone surrogate is not covered: it has no UTF-8.)
            PyObject* str = text.ptr();
            const int kind = PyUnicode_KIND(str);
            const Py_ssize_t count = PyUnicode_GET_LENGTH(str);
            if (kind != PyUnicode_1BYTE_KIND) {
              const void* data = PyUnicode_DATA(str);
              for (Py_ssize_t i = 0; i < count; ++i)
                if (!WordPieceTokenizer::covers(PyUnicode_READ(kind, data, i))) return py::none();
            }
            Py_ssize_t length = 0;
            const char* data = PyUnicode_AsUTF8AndSize(str, &length);
            if (data == nullptr) throw py::error_already_set();
            std::vector<std::int32_t> ids;
            if (!self.encode({data, static_cast<std::size_t>(length)}, &ids)) return py::none();
            return py::cast(ids);
          },
          py::arg("text"),
          "[CLS] ... [SEP] ids, or None: a character the table declines or an added token (ask the HF tokenizer)");
}

}  // namespace polarmem::bindings
