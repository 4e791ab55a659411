// The text parse's binding (cpp/src/text_parse.cpp) inside polarmem_server._core: texts arrive as
// UTF-8 bytes (the library encodes with surrogatepass, so any str gets through), results go back
// as plain tuples the library wraps in its own types (domain/text.py).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "polarmem/concept_appends.hpp"
#include "polarmem/fact_check_context.hpp"
#include "polarmem/item_view.hpp"
#include "polarmem/name_suggestions.hpp"
#include "polarmem/new_item_record.hpp"
#include "polarmem/text_evidence.hpp"
#include "polarmem/text_parse.hpp"
#include "polarmem/utf8.hpp"
#include "polarmem/vocabulary.hpp"

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

// A name as UTF-8, lone surrogates included (surrogatepass, as every text the library encodes).
// The str's own UTF-8 (kept in the object after the first call) where it has one; only a str
// holding a lone surrogate is encoded anew.
std::string utf8_of(const py::str& name) {
  Py_ssize_t length = 0;
  if (const char* data = PyUnicode_AsUTF8AndSize(name.ptr(), &length)) return {data, static_cast<std::size_t>(length)};
  PyErr_Clear();
  const auto bytes = py::reinterpret_steal<py::bytes>(PyUnicode_AsEncodedString(name.ptr(), "utf-8", "surrogatepass"));
  if (!bytes) throw py::error_already_set();
  return std::string(view(bytes));
}

py::object optional_id(const std::optional<std::uint32_t>& id) {
  return id ? py::object(py::int_(*id)) : py::object(py::none());
}

}  // namespace

void bind_text(py::module_& m) {
  m.attr("DEFAULT_SOURCE") = polarmem::layout::kDefaultSource;
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

  // The library's vocabulary is this class (domain/vocabulary.py); the compiled front and the
  // parse hold the same object.
  py::class_<Vocabulary, std::shared_ptr<Vocabulary>>(
      m, "Vocabulary", "A namespace's concept names, aliases and dense ids, and the keys the parse reads.")
      .def(py::init([](const std::vector<py::str>& names, const std::optional<py::dict>& aliases, bool shadow) {
             auto vocabulary = std::make_shared<Vocabulary>();
             for (const auto& name : names) vocabulary->bind(utf8_of(name));
             if (aliases) {
               for (const auto& [alias, target] : *aliases)
                 vocabulary->add_alias(utf8_of(py::str(alias)), utf8_of(py::str(target)), shadow);
             }
             return vocabulary;
           }),
           py::arg("names") = std::vector<py::str>{}, py::arg("aliases") = std::nullopt, py::arg("shadow") = false)
      .def("__len__", &Vocabulary::size)
      .def_property_readonly("version", &Vocabulary::version, "moves with every change (a concept, an alias)")
      .def_property_readonly("rewrites", &Vocabulary::rewrites, "moves with every change but an appended concept")
      .def_property_readonly("names", [](const Vocabulary& self) { return self.names(); })
      .def_property_readonly("aliases",
                             [](const Vocabulary& self) {
                               py::dict out;
                               for (const auto& [alias, target] : self.aliases()) out[py::str(alias)] = target;
                               return out;
                             })
      .def("names_from", &Vocabulary::names, py::arg("first"), "names of ids first, first + 1, ...")
      .def(
          "name",
          [](const Vocabulary& self, std::uint32_t id) {
            std::string out;
            if (!self.name(id, &out)) throw py::index_error("no concept " + std::to_string(id));
            return out;
          },
          py::arg("concept_id"))
      .def(
          "lookup", [](const Vocabulary& self, const py::str& name) { return optional_id(self.lookup(utf8_of(name))); },
          py::arg("name"), "id of a name, an alias or a plural form of either; None if unknown")
      .def(
          "own_id", [](const Vocabulary& self, const py::str& name) { return optional_id(self.own_id(utf8_of(name))); },
          py::arg("name"), "id of the concept named `name` itself, never an alias's target")
      .def(
          "ensure", [](Vocabulary& self, const py::str& name) { return self.ensure(utf8_of(name)); }, py::arg("name"),
          "(id, added): the name's id, adding it if new")
      .def(
          "bind", [](Vocabulary& self, const py::str& name) { return self.bind(utf8_of(name)); }, py::arg("name"),
          "id of `name` itself, adding it if new; an alias never redirects it")
      .def(
          "add_alias",
          [](Vocabulary& self, const py::str& alias, const py::str& target, bool shadow) {
            self.add_alias(utf8_of(alias), utf8_of(target), shadow);
          },
          py::arg("alias"), py::arg("target"), py::arg("shadow") = false)
      .def(
          "parse_keys",
          [](const Vocabulary& self) {
            py::dict out;
            for (const auto& [key, id] : self.parse_keys()) out[py::str(key)] = id;
            return out;
          },
          "every key the parse finds a concept by (own keys, aliases, spaced forms) -> id");

  py::class_<polarmem::ConceptAppends, std::shared_ptr<polarmem::ConceptAppends>>(
      m, "ConceptAppends", "The concepts a namespace's writes bind, queued for the next item write's batch.")
      .def(py::init<std::shared_ptr<Vocabulary>, std::shared_ptr<polarmem::Index>>(), py::arg("vocabulary"),
           py::arg("index"))
      .def(
          "allocate",
          [](polarmem::ConceptAppends& self, const std::vector<py::str>& names) {
            std::vector<std::string> utf8;
            for (const auto& name : names) utf8.push_back(utf8_of(name));  // a lone surrogate too: bind refuses it
            py::gil_scoped_release release;
            return self.allocate(utf8);
          },
          py::arg("names"), "the id of each name, binding the new ones")
      .def("take", &polarmem::ConceptAppends::take, "[(id, name)] queued, for the next item write")
      .def("put_back", &polarmem::ConceptAppends::put_back, py::arg("taken"),
           "what a failed write took, for the next one");

  m.def(
      "shows_nothing", [](const py::bytes& utf8) { return polarmem::utf8::shows_nothing(view(utf8)); }, py::arg("utf8"),
      "whether the text is only whitespace and zero-width characters (utf8.hpp)");
  m.def(
      "content_terms",
      [](const py::bytes& utf8, const TriggerTable& triggers) {
        const std::string_view text = view(utf8);
        py::gil_scoped_release release;
        return content_terms(text, triggers);
      },
      py::arg("utf8"), py::arg("triggers"),
      "the words an open vocabulary makes concepts of, as names, in order of first mention (text_evidence.hpp)");
  m.def(
      "lexical_states",
      [](const py::bytes& utf8, const Vocabulary& vocabulary, const TriggerTable& triggers, bool word_mentions,
         const std::vector<std::uint32_t>& decided, const std::optional<std::vector<std::uint32_t>>& only) {
        const std::string_view text = view(utf8);
        TextEvidence evidence;
        std::vector<std::pair<std::uint32_t, bool>> states;
        {
          py::gil_scoped_release release;
          evidence = text_evidence(text, vocabulary, triggers, word_mentions);
          states = lexical_states(evidence, decided, only ? &*only : nullptr);
        }
        return py::make_tuple(std::move(evidence.mentions), std::move(states));
      },
      py::arg("utf8"), py::arg("vocabulary"), py::arg("triggers"), py::arg("word_mentions"), py::arg("decided"),
      py::arg("only") = py::none(),
      "(every concept mentioned, ascending; [(concept, negated)] the lexical pathway sets: text_evidence.hpp)");
  m.def(
      "new_item_record",
      [](std::string id, std::int32_t kind, const py::bytes& text, std::string uri,
         std::vector<std::pair<std::string, std::string>> metadata, std::string model, std::string template_version,
         std::int64_t created_ms, std::vector<std::pair<std::uint32_t, std::vector<float>>> scores,
         std::vector<std::pair<std::uint32_t, std::int32_t>> states, std::string source,
         std::shared_ptr<Vocabulary> vocabulary, std::shared_ptr<TriggerTable> triggers, bool lexical,
         bool word_mentions) {
        polarmem::layout::NewItemRecord item{std::move(id),
                                             kind,
                                             std::string(view(text)),
                                             std::move(uri),
                                             std::move(metadata),
                                             std::move(model),
                                             std::move(template_version),
                                             created_ms,
                                             std::move(scores),
                                             std::move(states),
                                             std::move(source)};
        std::string record;
        {
          py::gil_scoped_release release;
          if (vocabulary != nullptr && triggers != nullptr) {
            const polarmem::layout::TextReading reading{vocabulary.get(), triggers.get(), lexical, word_mentions};
            record = polarmem::layout::encode_new_item_record(item, &reading);
          } else {
            record = polarmem::layout::encode_new_item_record(item, nullptr);
          }
        }
        return py::bytes(record);
      },
      py::arg("id"), py::arg("kind"), py::arg("text"), py::arg("uri"), py::arg("metadata"), py::arg("model"),
      py::arg("template_version"), py::arg("created_ms"), py::arg("scores"), py::arg("states"), py::arg("source"),
      py::arg("vocabulary"), py::arg("triggers"), py::arg("lexical"), py::arg("word_mentions"),
      "a new item's serialised ItemRecord (new_item_record.hpp); vocabulary None: its text is not read");
  m.def(
      "item_view",
      [](const py::bytes& record, const Vocabulary& vocabulary, bool history) {
        const std::string_view bytes = view(record);
        std::string shown;
        {
          py::gil_scoped_release release;
          shown = polarmem::layout::item_view(bytes, vocabulary, history);
        }
        return py::bytes(shown);
      },
      py::arg("record"), py::arg("vocabulary"), py::arg("history"),
      "the serialised polarmem.v1.Item of a serialised ItemRecord (item_view.hpp)");
  m.def(
      "parse_text",
      [](const py::bytes& utf8, const Vocabulary& vocabulary, const TriggerTable& triggers) {
        const std::string_view text = view(utf8);
        ParsedText parsed;
        {
          py::gil_scoped_release release;
          parsed = parse(text, vocabulary, triggers);
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
      py::arg("utf8"), py::arg("vocabulary"), py::arg("triggers"),
      "(mentions [(concept, start, end, negated, cue, resolution, uncertain, subject)], "
      "unknown [(word, start, end, negated, uncertain, subject)], "
      "negated spans [(start, end)]); offsets in code points");
}

}  // namespace polarmem::bindings
