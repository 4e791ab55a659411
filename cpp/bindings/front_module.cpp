// polarmem_server._front: the binding of the compiled Recall front (cpp/front). Thin like the
// core's: converts arguments, releases the interpreter lock around anything that can wait.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "fast_front.hpp"
#include "namespace_view.hpp"
#include "polarmem/recall_run.hpp"

namespace py = pybind11;
using namespace polarmem;
using namespace polarmem::front;

namespace {

// A confidence ranking as the library hands it over: (used, present level, absent level,
// present weight, absent weight, words).
using RankingTuple = std::tuple<bool, std::uint8_t, std::uint8_t, float, float, std::string>;

// A ModeRule as the library hands it over: (mode code, rank_by_confidence 0 unset / 1 false /
// 2 true, accepted, ranking, recency allowed).
using ModeRuleTuple = std::tuple<int, int, std::string, RankingTuple, std::string>;

Ranking ranking_of(const RankingTuple& given) {
  Ranking out;
  std::tie(out.used, out.present_level, out.absent_level, out.present_weight, out.absent_weight, out.words) = given;
  return out;
}

// The namespace's text path: its query cues, compiled encoder and tokenizer, and for a closed
// vocabulary its concept names' vectors (rows of the encoder's width), by which a word that names
// no concept maps to the most similar one.
using TextTuple = std::tuple<std::shared_ptr<text::TriggerTable>, std::shared_ptr<SharedTextRuns>,
                             std::shared_ptr<WordPieceTokenizer>,
                             std::optional<py::array_t<float, py::array::c_style | py::array::forcecast>>>;

std::shared_ptr<const TextPath> text_path(const std::vector<SpaceConfig>& spaces, const TextTuple& given,
                                          const NameBinding& binding, bool open_vocabulary) {
  const auto& [triggers, encoder, tokenizer, concept_vectors] = given;
  if (!triggers || !encoder != !tokenizer || (!encoder && concept_vectors))
    throw py::value_error("text: triggers are required, and an encoder with its tokenizer or neither (no vectors)");
  const auto sem = std::find_if(spaces.begin(), spaces.end(), [](const SpaceConfig& s) { return s.name == "sem"; });
  if (encoder && (sem == spaces.end() || sem->multi || sem->dim != encoder->dim()))
    throw py::value_error("text: the namespace needs a single-vector space 'sem' of the encoder's width");
  auto path = std::make_shared<TextPath>();
  path->vocabulary = binding.vocabulary;
  path->triggers = triggers;
  path->encoder = encoder;
  path->tokenizer = tokenizer;
  path->open_vocabulary = open_vocabulary;
  if (concept_vectors) {
    const auto& rows = *concept_vectors;
    if (rows.ndim() != 2 || (rows.shape(0) > 0 && static_cast<std::size_t>(rows.shape(1)) != encoder->dim()))
      throw py::value_error("text: concept_vectors must be rows of the encoder's width");
    path->concept_vectors = std::make_shared<const std::vector<float>>(rows.data(), rows.data() + rows.size());
    path->concept_count = static_cast<std::size_t>(rows.shape(0));
  }
  return path;
}

// Where the core stores a namespace's new notes itself: (its ItemWrites, ConceptAppends and write
// lock — the library's own objects —, the cue table notes are read by, the template version a
// new record states, and where a note sent without `sem` gets one: (the encoder's passes for
// writes, its tokenizer), or None where the namespace encodes no `sem`).
using NoteEncoder = std::tuple<std::shared_ptr<SharedTextRuns>, std::shared_ptr<WordPieceTokenizer>>;
using WriterTuple = std::tuple<std::shared_ptr<ItemWrites>, std::shared_ptr<ConceptAppends>, std::shared_ptr<WriteLock>,
                               std::shared_ptr<text::TriggerTable>, std::string, std::optional<NoteEncoder>>;

std::shared_ptr<const NamespaceWriter> namespace_writer(const NamespaceView& view, const WriterTuple& given) {
  auto writer = std::make_shared<NamespaceWriter>();
  const auto& [items, appends, lock, triggers, template_version, encoder] = given;
  writer->items = items;
  writer->appends = appends;
  writer->lock = lock;
  writer->note_triggers = triggers;
  writer->template_version = template_version;
  if (!items || !appends || !lock || !triggers || !view.index)
    throw py::value_error("writer: its objects are required, and a view with an index");
  if (encoder) {
    std::tie(writer->note_encoder, writer->tokenizer) = *encoder;
    const auto sem =
        std::find_if(view.spaces.begin(), view.spaces.end(), [](const SpaceConfig& s) { return s.name == "sem"; });
    if (!writer->note_encoder || !writer->tokenizer || sem == view.spaces.end() || sem->multi ||
        sem->dim != writer->note_encoder->dim())
      throw py::value_error("writer: an encoder with its tokenizer, for a single-vector space 'sem' of its width");
  }
  return writer;
}

// The searches of a backend that searches itself, from the Python object the servicer hands over
// for one call (library/core_recall.py BackendSearches): search(vectors [(space, values, weight)],
// metadata [(key, value)], **fields named as storage/backend.py SearchRequest's) -> ([(id, tier,
// score, record bytes or None)], (conflict, neutral, entailed)); records(ids) -> [record bytes or b""].
// Each call takes the interpreter lock the core entry released (the servicer's thread: its read
// level and deadline are the call's); a Python exception reaches the servicer as raised.
BackendCalls backend_calls(const py::object& backend) {
  BackendCalls calls;
  calls.search = [backend](const SearchRequest& request, const std::vector<MetadataPair>& metadata,
                           bool absent_verified, bool with_records) {
    py::gil_scoped_acquire acquire;
    py::list vectors;
    for (const auto& term : request.vectors)
      vectors.append(
          py::make_tuple(term.space, py::array_t<float>(term.values.size(), term.values.data()), term.weight));
    std::vector<int> kinds;
    for (const int kind : {1, 2})  // ITEM_KIND_VISUAL, ITEM_KIND_TEXT: the mask's bits
      if (request.kind_mask & kind) kinds.push_back(kind);
    const auto found = backend.attr("search")(
        vectors, metadata, py::arg("required") = request.required, py::arg("forbidden") = request.forbidden,
        py::arg("mode") = recall::mode_name(request.mode), py::arg("k") = request.k,
        py::arg("soft_lambda") = request.soft_lambda, py::arg("exclude_conflicts") = request.exclude_conflicts,
        py::arg("kinds") = kinds, py::arg("exact") = request.exact, py::arg("ef_search") = request.ef_search,
        py::arg("present_level") = request.present_level, py::arg("absent_level") = request.absent_level,
        py::arg("present_weight") = request.present_weight, py::arg("absent_weight") = request.absent_weight,
        py::arg("absent_verified") = absent_verified, py::arg("with_records") = with_records);
    BackendCalls::Found out;
    const auto [hits, tiers] = found.cast<std::pair<py::list, std::array<std::int64_t, 3>>>();
    out.tier_counts = tiers;
    for (const auto& given : hits) {
      const auto hit = given.cast<py::tuple>();
      BackendCalls::Hit row{hit[0].cast<std::string>(), hit[1].cast<int>(), hit[2].cast<double>(), {}};
      if (!hit[3].is_none()) row.record = hit[3].cast<std::string>();
      out.hits.push_back(std::move(row));
    }
    return out;
  };
  calls.records = [backend](const std::vector<std::string>& ids) {
    py::gil_scoped_acquire acquire;
    return backend.attr("records")(ids).cast<std::vector<std::string>>();
  };
  return calls;
}

}  // namespace

PYBIND11_MODULE(_front, m) {
  m.doc() = "The compiled Recall front: plans and answers Recalls from the core over gRPC (C++).";

  py::class_<NamespaceViews, std::shared_ptr<NamespaceViews>>(m, "NamespaceViews")
      .def(py::init([](std::size_t max_top_k, std::size_t max_ef_search, double max_soft_lambda,
                       std::size_t max_query_concepts, std::size_t default_top_k, double default_recency_weight,
                       std::tuple<double, double, double> agent_rule) {
             const auto [coverage, bonus, penalty] = agent_rule;
             return std::make_shared<NamespaceViews>(RequestLimits{max_top_k,
                                                                   max_ef_search,
                                                                   max_soft_lambda,
                                                                   max_query_concepts,
                                                                   default_top_k,
                                                                   default_recency_weight,
                                                                   {coverage, bonus, penalty}});
           }),
           py::kw_only(), py::arg("max_top_k"), py::arg("max_ef_search"), py::arg("max_soft_lambda"),
           py::arg("max_query_concepts"), py::arg("default_top_k"), py::arg("default_recency_weight"),
           py::arg("agent_rule") = std::make_tuple(answer::kAgentRule.topic_coverage, answer::kAgentRule.verified_bonus,
                                                   answer::kAgentRule.contradiction_penalty),
           "the library's bounds on a Recall's fields (domain/query.py); `agent_rule`: answer mode's "
           "(topic coverage, verified bonus, contradiction penalty), the dev sweep's to vary")
      .def(
          "set",
          [](NamespaceViews& self, const std::string& ns, std::shared_ptr<Index> index, std::shared_ptr<ItemIds> ids,
             std::shared_ptr<MetadataPostings> metadata, std::shared_ptr<ItemRecords> records,
             std::shared_ptr<text::Vocabulary> vocabulary, bool approximate, bool open_vocabulary, SearchMode rule_mode,
             std::string rule_words, const std::vector<ModeRuleTuple>& mode_rules, const std::optional<TextTuple>& text,
             const std::vector<std::tuple<std::string, std::size_t>>& spaces,
             const std::optional<WriterTuple>& writer) {
            if (!vocabulary || (index && (!ids || !metadata)))
              throw py::value_error("set: a vocabulary is required, and with an index its ids and metadata");
            if (!index && (ids || metadata || records || spaces.empty()))
              throw py::value_error(
                  "set: a view without an index (its backend searches) has spaces and no core "
                  "objects");
            if (rule_mode != SearchMode::kHard && rule_mode != SearchMode::kStrict)
              throw py::value_error("set: a rule's mode is hard or strict");
            NamespaceView view;
            view.index = std::move(index);
            if (view.index) {
              view.spaces = view.index->spaces();
            } else {
              for (const auto& [name, dim] : spaces) view.spaces.push_back({name, dim});
            }
            view.ids = std::move(ids);
            view.metadata = std::move(metadata);
            view.records = std::move(records);
            view.binding = {std::move(vocabulary)};
            if (text) view.text = text_path(view.spaces, *text, view.binding, open_vocabulary);
            view.approximate = approximate;
            view.open_vocabulary = open_vocabulary;
            view.rule_mode = rule_mode;
            view.rule_words = std::move(rule_words);
            for (const auto& [mode, rank_by_confidence, refusal, ranking, recency_refusal] : mode_rules)
              view.mode_rules.push_back({mode, rank_by_confidence, refusal, ranking_of(ranking), recency_refusal});
            if (writer) view.writer = namespace_writer(view, *writer);
            self.set(ns, std::move(view));
          },
          py::arg("namespace"), py::arg("index"), py::arg("ids"), py::arg("metadata"), py::arg("records"),
          py::arg("vocabulary"), py::arg("approximate"), py::arg("open_vocabulary"), py::arg("rule_mode"),
          py::arg("rule_words"), py::arg("mode_rules"), py::arg("text") = py::none(),
          py::arg("spaces") = std::vector<std::tuple<std::string, std::size_t>>{}, py::arg("writer") = py::none(),
          "what the core plans the namespace's Recalls from: its core objects (records None: explained Recalls "
          "go to the library; index None: the backend searches itself, and `spaces` lists its single-vector "
          "spaces (name, dim)), its vocabulary (the library's own object), whether it has an approximate index and an "
          "open vocabulary, its rule's mode and words ('<mode> (<why>)'), mode_rules: per (mode code, "
          "rank_by_confidence 0 unset / 1 false / 2 true) why the library refuses it ('' where it accepts it), "
          "the ranking in force (used, present level, absent level, present weight, absent weight, words) and "
          "why recency may not join ('' where it may); text: (triggers, encoder, tokenizer, concept_vectors or None) "
          "where text queries are embedded "
          "natively, or (triggers, None, None, None) in a namespace without an encoder (texts give concepts only); "
          "writer: (ItemWrites, ConceptAppends, WriteLock, note triggers, template version, (encoder runs, "
          "tokenizer) or None) where the core stores new notes itself (remember), None where the library stores "
          "every item")
      .def(
          "remember",
          [](const NamespaceViews& self,
             const py::bytes& request_bytes) -> std::tuple<std::optional<py::bytes>, int, std::string> {
            const std::string_view given(request_bytes);
            std::string answered;
            RememberOutcome outcome = RememberOutcome::kLibrary;
            Refusal failed;
            {
              py::gil_scoped_release release;
              v1::RememberRequest request;
              v1::RememberResponse response;
              if (request.ParseFromArray(given.data(), static_cast<int>(given.size())))
                outcome = self.remember(request, &response, &failed);
              if (outcome == RememberOutcome::kStored && !response.SerializeToString(&answered))
                throw std::runtime_error("a stored note's answer did not serialise");
            }
            if (outcome == RememberOutcome::kStored) return {py::bytes(answered), 0, ""};
            if (outcome == RememberOutcome::kFailed) return {std::nullopt, failed.code, failed.message};
            return {std::nullopt, -1, ""};
          },
          py::arg("request"),
          "a serialised RememberRequest stored by the core as the front stores it: (the serialised "
          "RememberResponse, 0, '') when stored; (None, gRPC status code, the store's words) when the store "
          "refused the write; (None, -1, '') where the library stores it")
      .def(
          "recall",
          [](const NamespaceViews& self, const py::bytes& request_bytes, bool names_learned,
             const py::object& backend) -> std::tuple<std::optional<py::bytes>, const char*, py::object> {
            const std::string_view given(request_bytes);
            std::string answered;
            RecallOutcome outcome = RecallOutcome::kLibrary;
            Refusal refused;
            std::optional<BackendCalls> calls;
            if (!backend.is_none()) calls = backend_calls(backend);
            {
              py::gil_scoped_release release;
              v1::RecallRequest request;
              v1::RecallResponse response;
              if (request.ParseFromArray(given.data(), static_cast<int>(given.size())))
                outcome = self.recall(request, &response, &refused, names_learned, calls ? &*calls : nullptr);
              if (outcome == RecallOutcome::kAnswered && !response.SerializeToString(&answered))
                outcome = RecallOutcome::kLibrary;
            }
            switch (outcome) {
              case RecallOutcome::kAnswered: return {py::bytes(answered), "answered", py::none()};
              case RecallOutcome::kNoView: return {std::nullopt, "no_view", py::none()};
              case RecallOutcome::kNamesToLearn: return {std::nullopt, "names_to_learn", py::none()};
              case RecallOutcome::kRefused:
                return {std::nullopt, "refused", py::make_tuple(refused.code, refused.message)};
              case RecallOutcome::kLibrary: break;
            }
            return {std::nullopt, "library", py::none()};
          },
          py::arg("request"), py::arg("names_learned") = false, py::arg("backend") = py::none(),
          "a serialised RecallRequest answered by the core from its namespace's view, as the front answers it: "
          "(the serialised RecallResponse or None, what became of it: 'answered', 'no_view' (the library "
          "makes the view), 'names_to_learn' (an open vocabulary lacks a name; names_learned=True once the "
          "library let it learn them), 'refused' or 'library' (the library does what only it can and asks again), and "
          "for 'refused' "
          "(gRPC status code, message)); backend: the searches of a backend "
          "that searches itself (search(...), records(ids)), for a view without an index")
      .def(
          "holds", [](const NamespaceViews& self, const std::string& ns) { return self.find(ns) != nullptr; },
          py::arg("namespace"))
      .def("current", &NamespaceViews::current, py::arg("namespace"), py::arg("concept_count"),
           "whether the front holds a view of the namespace that need not be handed over again")
      .def("forget", &NamespaceViews::forget, py::arg("namespace"))
      .def_property_readonly("size", &NamespaceViews::size);

  py::class_<FastFront>(m, "FastFront")
      .def(py::init([](const std::string& address, const std::string& upstream, std::shared_ptr<NamespaceViews> views,
                       const std::string& tls_cert_pem, const std::string& tls_key_pem, std::size_t max_in_flight,
                       std::size_t max_receive_bytes, bool reuse_port, bool namespace_labels, bool replica,
                       std::uint64_t applied_position) {
             FrontOptions options{address,           upstream,   tls_cert_pem,     tls_key_pem, max_in_flight,
                                  max_receive_bytes, reuse_port, namespace_labels, replica,     applied_position};
             try {
               return std::make_unique<FastFront>(std::move(options), std::move(views));
             } catch (const std::runtime_error& e) {
               throw py::value_error(e.what());
             }
           }),
           py::arg("address"), py::arg("upstream"), py::arg("views"), py::arg("tls_cert_pem") = "",
           py::arg("tls_key_pem") = "", py::arg("max_in_flight") = 0, py::arg("max_receive_bytes") = 4 << 20,
           py::arg("reuse_port") = false, py::arg("namespace_labels") = false, py::arg("replica") = false,
           py::arg("applied_position") = 0)
      .def_property_readonly("port", &FastFront::port)
      .def("set_applied_position", &FastFront::set_applied_position, py::arg("position"))
      .def(
          "set_grants",
          [](FastFront& self, const std::vector<std::tuple<py::bytes, std::vector<std::string>, bool>>& grants) {
            std::vector<Grant> converted;
            for (const auto& [digest, namespaces, writes] : grants)
              converted.push_back({std::string(digest), namespaces, writes});
            self.set_grants(std::move(converted));
          },
          py::arg("grants"), "[(sha256 digest, namespaces, may write items)]; empty: auth off")
      .def("shutdown", &FastFront::shutdown, py::arg("grace_seconds"), py::call_guard<py::gil_scoped_release>())
      .def("stats", [](const FastFront& self) {
        const auto s = self.stats();
        py::dict out;
        out["native"] = s.native;
        out["forwarded"] = s.forwarded;
        out["refused"] = s.refused;
        out["overloaded"] = s.overloaded;
        out["in_flight"] = s.in_flight;
        out["hits"] =
            py::dict(py::arg("conflict") = s.hits[0], py::arg("neutral") = s.hits[1], py::arg("entailed") = s.hits[2]);
        out["suppressed"] = s.suppressed;
        out["latency_bounds"] = std::vector<double>(kLatencyBounds.begin(), kLatencyBounds.end());
        out["latency_counts"] = std::vector<std::uint64_t>(s.latency.begin(), s.latency.end());
        out["latency_sum"] = s.latency_sum;
        out["remember"] = py::dict(py::arg("native") = s.remember_native, py::arg("forwarded") = s.remember_forwarded,
                                   py::arg("failed") = s.remember_failed);
        out["remember_latency_counts"] =
            std::vector<std::uint64_t>(s.remember_latency.begin(), s.remember_latency.end());
        out["remember_latency_sum"] = s.remember_latency_sum;
        // by method: the calls answered here, for the RPC series
        const auto by_method = [](const std::array<FinishedCalls, kFrontMethods>& all) {
          py::dict finished;
          for (std::size_t method = 0; method < kFrontMethods; ++method) {
            const FinishedCalls& calls = all[method];
            finished[kFrontMethodNames[method]] = py::dict(
                py::arg("codes") = std::vector<std::uint64_t>(calls.codes.begin(), calls.codes.end()),
                py::arg("latency_counts") = std::vector<std::uint64_t>(calls.latency.begin(), calls.latency.end()),
                py::arg("latency_sum") = calls.latency_sum);
          }
          return finished;
        };
        out["finished"] = by_method(s.finished);
        py::dict by_namespace;  // with namespace labels on: those answered from a namespace's view
        for (const auto& [ns, calls] : s.finished_by_namespace) by_namespace[py::str(ns)] = by_method(calls);
        out["finished_by_namespace"] = by_namespace;
        return out;
      });
}
