// The text parse's binding (cpp/src/text_parse.cpp) inside polarmem_server._core: texts arrive as
// UTF-8 bytes (the library encodes with surrogatepass, so any str gets through), results go back
// as plain tuples the library wraps in its own types (domain/text.py).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "polarmem/fact_check_context.hpp"
#include "polarmem/name_suggestions.hpp"
#include "polarmem/text_parse.hpp"

namespace py = pybind11;
using namespace polarmem::text;

namespace polarmem::bindings {

namespace {

std::string_view view(const py::bytes& data) {
  char* buffer = nullptr;
  py::ssize_t length = 0;
  if (PYBIND11_BYTES_AS_STRING_AND_SIZE(data.ptr(), &buffer, &length) != 0) throw py::error_already_set();
  return {buffer, static_cast<std::size_t>(length)};
}

}  // namespace

void bind_text(py::module_& m) {
  m.def(
      "text_tokens",
      [](const py::bytes& utf8) {
        std::vector<std::tuple<std::string, std::size_t, std::size_t>> out;
        for (auto& token : tokenise(view(utf8))) out.emplace_back(std::move(token.word), token.start, token.end);
        return out;
      },
      py::arg("utf8"), "(word, start, end) per token: lower-case words, code-point offsets");
  m.def("singular", [](const std::string& word) { return singular(word); }, py::arg("word"));
  m.def(
      "closest_keys",
      [](const std::string& asked, const std::vector<std::string>& keys, std::size_t limit, double cutoff) {
        return suggest::closest(asked, keys, limit, cutoff);
      },
      py::arg("asked"), py::arg("keys"), py::arg("limit"), py::arg("cutoff"),
      "positions in keys (UTF-8 normal forms, each once) of up to limit keys closest to asked, best first "
      "(cpp/include/polarmem/name_suggestions.hpp)");
  m.def(
      "name_ratio", [](const std::string& a, const std::string& b) { return suggest::ratio(a, b); }, py::arg("a"),
      py::arg("b"), "difflib.SequenceMatcher(None, a, b).ratio() of two UTF-8 strings");
  m.def(
      "normalise_name", [](const std::string& utf8) { return normalise_name(utf8); }, py::arg("utf8"),
      "a concept name's lookup key (text_parse.hpp): lower case as str.lower(), [a-z0-9] words, the last singular");
  m.def(
      "is_poor_concept", [](const std::string& word) { return is_poor_concept(word); }, py::arg("word"),
      "a content word that makes a poor concept (a verb of having, liking or doing; a vague modifier)");
  m.def(
      "affirmative_part",
      [](const py::bytes& utf8, std::vector<std::pair<std::size_t, std::size_t>> spans) {
        return py::bytes(affirmative_part(view(utf8), std::move(spans)));
      },
      py::arg("utf8"), py::arg("negated_spans"), "UTF-8 bytes (surrogates passed through)");

  m.attr("MIN_CONTEXT_BUDGET_CHARS") = kMinContextBudget;
  m.attr("MAX_CONTEXT_BUDGET_CHARS") = kMaxContextBudget;
  m.def(
      "mention_polarity",
      [](const std::vector<std::tuple<std::uint32_t, bool, bool>>& mentions) {
        std::vector<Mention> converted;
        converted.reserve(mentions.size());
        for (const auto& [concept_id, negated, resolution] : mentions) {
          Mention m;
          m.concept_id = concept_id;
          m.negated = negated;
          m.resolution = resolution;
          converted.push_back(std::move(m));
        }
        return polarity(converted);
      },
      py::arg("mentions"),
      "[(concept id, negated)] in order of first mention, from [(concept id, negated, resolution)]");
  m.def(
      "fact_check_context",
      [](const std::vector<std::tuple<std::string, std::string, std::vector<std::string>, std::vector<std::string>>>&
             entries,
         std::size_t budget_chars, const std::vector<std::string>& query_concepts) {
        std::vector<ContextEntry> converted;
        converted.reserve(entries.size());
        for (const auto& [status, content, has, not_has] : entries)
          converted.push_back({status, content, has, not_has});
        return fact_check_context(converted, budget_chars, query_concepts);
      },
      py::arg("entries"), py::arg("budget_chars"), py::arg("query_concepts"),
      "entries: (status, content, HAS names, NOT_HAS names) per hit in rank order");

  py::class_<TriggerTable, std::shared_ptr<TriggerTable>>(m, "TriggerTable",
                                                          "Negation cue phrases by kind (words joined by one space).")
      .def(py::init([](std::vector<std::string> pre, std::vector<std::string> post, std::vector<std::string> pseudo,
                       std::vector<std::string> terminators, std::vector<std::string> resolution,
                       std::optional<std::size_t> window, std::vector<std::string> hedge) {
             return std::make_shared<TriggerTable>(TriggerPhrases{std::move(pre), std::move(post), std::move(pseudo),
                                                                  std::move(terminators), std::move(resolution), window,
                                                                  std::move(hedge)});
           }),
           py::arg("pre"), py::arg("post"), py::arg("pseudo"), py::arg("terminators"), py::arg("resolution"),
           py::arg("window"), py::arg("hedge") = std::vector<std::string>{});

  py::class_<ConceptKeys, std::shared_ptr<ConceptKeys>>(m, "ConceptKeys", "A vocabulary's lookup keys -> concept ids.")
      .def(py::init<>())
      .def("set", &ConceptKeys::set, py::arg("keys"))
      .def("erase", &ConceptKeys::erase, py::arg("keys"))
      .def_property_readonly("size", &ConceptKeys::size);

  m.def(
      "parse_text",
      [](const py::bytes& utf8, const ConceptKeys& keys, const TriggerTable& triggers) {
        const std::string_view text = view(utf8);
        ParsedText parsed;
        {
          py::gil_scoped_release release;
          parsed = parse(text, keys, triggers);
        }
        py::list mentions, unknown, spans;
        for (const auto& m : parsed.mentions) {
          mentions.append(
              py::make_tuple(m.concept_id, m.start, m.end, m.negated, m.cue, m.resolution, m.uncertain, m.subject));
        }
        for (const auto& u : parsed.unknown) {
          unknown.append(py::make_tuple(u.word, u.start, u.end, u.negated, u.uncertain, u.subject));
        }
        for (const auto& [start, end] : parsed.negated_spans) spans.append(py::make_tuple(start, end));
        return py::make_tuple(mentions, unknown, spans);
      },
      py::arg("utf8"), py::arg("keys"), py::arg("triggers"),
      "(mentions [(concept, start, end, negated, cue, resolution, uncertain, subject)], "
      "unknown [(word, start, end, negated, uncertain, subject)], "
      "negated spans [(start, end)]); offsets in code points");
}

}  // namespace polarmem::bindings
