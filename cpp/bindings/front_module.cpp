// polarmem_server._front: the binding of the compiled Recall front (cpp/front). Thin like the
// core's: converts arguments, releases the interpreter lock around anything that can wait.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <stdexcept>
#include <tuple>

#include "fast_front.hpp"
#include "plan_cache.hpp"
#include "recall_plan.hpp"

namespace py = pybind11;
using namespace polarmem;
using namespace polarmem::front;

namespace {

// One dimension per query term, from the index's spaces; single-vector spaces only (a
// multi-vector query is answered by the library).
std::vector<std::size_t> term_dims(const Index& index, const SearchRequest& request) {
  const auto spaces = index.spaces();
  std::vector<std::size_t> dims;
  for (const auto& term : request.vectors) {
    const auto space =
        std::find_if(spaces.begin(), spaces.end(), [&](const SpaceConfig& s) { return s.name == term.space; });
    if (space == spaces.end() || space->multi)
      throw py::value_error("plan: no single-vector space named '" + term.space + "'");
    dims.push_back(space->dim);
  }
  return dims;
}

// A plan's parts every kind shares: the library's request and response (without hits), the
// namespace's core objects and the core request with its per-call parts cleared.
std::shared_ptr<RecallPlan> new_plan(v1::RecallRequest& parsed_request, const py::bytes& request,
                                     std::shared_ptr<Index> index, std::shared_ptr<ItemIds> ids,
                                     std::shared_ptr<MetadataPostings> metadata, std::shared_ptr<ItemRecords> records,
                                     bool explain, const SearchRequest& search, const py::bytes& response) {
  auto plan = std::make_shared<RecallPlan>();
  if (!parsed_request.ParseFromString(std::string(request)) ||
      !plan->response_template.ParseFromString(std::string(response))) {
    throw py::value_error("plan: request and response must be serialised RecallRequest / RecallResponse");
  }
  plan->index = std::move(index);
  plan->ids = std::move(ids);
  plan->metadata = std::move(metadata);
  if (explain && !records) throw py::value_error("plan: an explained plan needs the namespace's records");
  plan->records = std::move(records);
  plan->explain = explain;
  plan->request = search;
  plan->request.allow.reset();  // a filter's allow-list is made per call (answer())
  for (auto& term : plan->request.vectors) term.values.clear();
  plan->dims = term_dims(*plan->index, plan->request);
  plan->response_template.clear_hits();
  plan->response_template.clear_suppressed();
  plan->response_template.clear_tier_counts();
  return plan;
}

// A plan for mode adaptive: its search (set hard from recall_search; the run chooses per call)
// must be hard or soft.
void set_adaptive(RecallPlan& plan, bool adaptive) {
  if (!adaptive) return;
  if (plan.request.mode != SearchMode::kHard && plan.request.mode != SearchMode::kSoft) {
    throw py::value_error("adaptive plan: the search must be the hard or soft one adaptive chose");
  }
  plan.adaptive = true;
}

// The confidence ranking the Recall's hard searches apply: (present level, absent level,
// present weight, absent weight), as the library applied it.
using Ranking = std::tuple<std::uint8_t, std::uint8_t, float, float>;
// The Recall's own (mode, k, exclude_conflicts): the core's run sets them, and each search's
// ranking, on the plan's search per search it makes, so any search the library made for the
// Recall (all share its vectors, concepts, filters and exactness) serves as the plan's.
using RecallSearch = std::tuple<SearchMode, std::size_t, bool>;

// What the library asked the core's run beyond the call's request (RecallPlan::recency_k,
// adaptive, rule_words, confidence_words, the ranking): recency_k > 0 needs the records (the
// stamps), mode hard or off and the term the library checked. The Recall's own mode, k and
// conflicts and its ranking go into the plan's search; the front's store applies the ranking to
// the hard and strict searches the run ranks, never to a probe or a soft search.
void set_run(RecallPlan& plan, std::size_t k, std::pair<double, double> term, bool adaptive, std::string rule_words,
             std::string confidence_words, const Ranking& ranking, const std::optional<RecallSearch>& recall) {
  if (recall) std::tie(plan.request.mode, plan.request.k, plan.request.exclude_conflicts) = *recall;
  set_adaptive(plan, adaptive);
  plan.rule_words = std::move(rule_words);
  plan.confidence_words = std::move(confidence_words);
  std::tie(plan.request.present_level, plan.request.absent_level, plan.request.present_weight,
           plan.request.absent_weight) = ranking;
  if (k == 0) return;
  const auto [half_life_s, weight] = term;
  if (!plan.records || (plan.request.mode != SearchMode::kHard && plan.request.mode != SearchMode::kOff) ||
      !(half_life_s > 0.0) || !(weight >= 0.0 && weight <= 1.0)) {
    throw py::value_error("recency plan: needs the records, mode hard or off, a half-life > 0 and a weight in [0, 1]");
  }
  plan.recency_k = k;
  plan.recency = {half_life_s, weight};
}

}  // namespace

PYBIND11_MODULE(_front, m) {
  m.doc() = "The compiled Recall front: answers planned Recall shapes from the core over gRPC (C++).";

  py::class_<PlanCache, std::shared_ptr<PlanCache>>(m, "PlanCache")
      .def(py::init<std::size_t>(), py::arg("max_per_namespace") = 4096)
      .def(
          "publish",
          [](PlanCache& self, const std::string& ns, const py::bytes& request, std::shared_ptr<Index> index,
             std::shared_ptr<ItemIds> ids, std::shared_ptr<MetadataPostings> metadata,
             std::shared_ptr<ItemRecords> records, bool explain, const SearchRequest& search,
             std::vector<std::uint32_t> state_concepts, std::size_t required_count,
             std::vector<std::string> concept_names, const py::bytes& response, bool generic, bool reads_vocabulary,
             std::size_t recency_k, std::pair<double, double> recency, bool adaptive, std::string rule_words,
             std::string confidence_words, const Ranking& confidence, const std::optional<RecallSearch>& recall_search,
             bool context) {
            if (concept_names.size() != state_concepts.size() || required_count > state_concepts.size()) {
              throw py::value_error("plan: concept_names and required_count must match state_concepts");
            }
            v1::RecallRequest parsed_request;
            auto plan = new_plan(parsed_request, request, std::move(index), std::move(ids), std::move(metadata),
                                 std::move(records), explain, search, response);
            plan->state_concepts = std::move(state_concepts);
            plan->required_count = required_count;
            plan->concept_names = std::move(concept_names);
            plan->reads_vocabulary = reads_vocabulary;
            set_run(*plan, recency_k, recency, adaptive, std::move(rule_words), std::move(confidence_words), confidence,
                    recall_search);
            if (context) {  // the context is each call's, its concepts named from the names table
              plan->context_names = self.names(ns);
              if (!plan->context_names || !explain)
                throw py::value_error("context plan: set the namespace's names first (set_names), explained");
              plan->response_template.clear_context();
            }
            if (generic) {  // bind() fills the names per call
              plan->response_template.mutable_parse()->clear_required();
              plan->response_template.mutable_parse()->clear_forbidden();
            }
            self.publish(ns, generic ? generic_key(parsed_request) : plan_key(parsed_request), std::move(plan));
          },
          py::arg("namespace"), py::arg("request"), py::arg("index"), py::arg("ids"), py::arg("metadata"),
          py::arg("records"), py::arg("explain"), py::arg("search"), py::arg("state_concepts"),
          py::arg("required_count"), py::arg("concept_names"), py::arg("response"), py::arg("generic") = false,
          py::arg("reads_vocabulary") = false, py::arg("recency_k") = 0,
          py::arg("recency") = std::pair<double, double>{0.0, 0.0}, py::arg("adaptive") = false,
          py::arg("rule_words") = "", py::arg("confidence_words") = "", py::arg("confidence") = Ranking{},
          py::arg("recall_search") = py::none(), py::arg("context") = false,
          "generic: publish for the request's generic shape (any concepts of the vocabulary, same counts); "
          "reads_vocabulary: the plan goes when concepts are appended (its response lists unknown names); "
          "recency_k > 0: the top recency_k by the recency term (half-life s, weight), ranked per call; adaptive: "
          "each call chooses its mode; rule_words, confidence_words: what mode_reason is written from (the "
          "namespace rule's words when it chose the mode, the confidence ranking's); confidence: (present level, "
          "absent level, present weight, absent weight) the hard searches rank by; recall_search: the Recall's (mode, "
          "k, exclude_conflicts), set on `search` (None: the search's own); context: the fact-check "
          "context rendered per call (include_context)")
      .def(
          "publish_text",
          [](PlanCache& self, const std::string& ns, const py::bytes& request, std::shared_ptr<Index> index,
             std::shared_ptr<ItemIds> ids, std::shared_ptr<MetadataPostings> metadata,
             std::shared_ptr<ItemRecords> records, bool explain, const SearchRequest& search, const py::bytes& response,
             std::shared_ptr<text::ConceptKeys> keys, std::shared_ptr<text::TriggerTable> triggers,
             std::shared_ptr<SharedTextRuns> encoder, std::shared_ptr<WordPieceTokenizer> tokenizer,
             bool open_vocabulary, std::size_t answer_k, std::size_t recency_k, std::pair<double, double> recency,
             bool adaptive, std::string rule_words, std::string confidence_words, const Ranking& confidence,
             const std::optional<RecallSearch>& recall_search,
             std::optional<py::array_t<float, py::array::c_style | py::array::forcecast>> concept_vectors) {
            if (!keys || !triggers || !encoder || !tokenizer) {
              throw py::value_error("text plan: keys, triggers, encoder and tokenizer are required");
            }
            auto names = self.names(ns);
            if (!names) throw py::value_error("text plan: set the namespace's names first (set_names)");
            v1::RecallRequest parsed_request;
            auto plan = new_plan(parsed_request, request, std::move(index), std::move(ids), std::move(metadata),
                                 std::move(records), explain, search, response);
            if (plan->request.vectors.size() != 1 || plan->dims[0] != encoder->dim()) {
              throw py::value_error("text plan: the search must have one query term, of the encoder's width");
            }
            auto path = std::make_shared<TextPath>();
            path->keys = std::move(keys);
            path->triggers = std::move(triggers);
            path->encoder = std::move(encoder);
            path->tokenizer = std::move(tokenizer);
            path->names = std::move(names);
            path->open_vocabulary = open_vocabulary;
            if (concept_vectors) {  // a closed vocabulary's, for mapping words that name no concept
              const auto& rows = *concept_vectors;
              if (rows.ndim() != 2 ||
                  (rows.shape(0) > 0 && static_cast<std::size_t>(rows.shape(1)) != path->encoder->dim()))
                throw py::value_error("text plan: concept_vectors must be rows of the encoder's width");
              path->concept_vectors =
                  std::make_shared<const std::vector<float>>(rows.data(), rows.data() + rows.size());
              path->concept_count = static_cast<std::size_t>(rows.shape(0));
            }
            plan->text = std::move(path);
            plan->answer_k = answer_k;
            if (answer_k > 0 && (plan->request.mode != SearchMode::kOff || !plan->records)) {
              throw py::value_error("answer plan: the search must be the plain-similarity one, with records");
            }
            set_run(*plan, recency_k, recency, adaptive, std::move(rule_words), std::move(confidence_words), confidence,
                    recall_search);
            // The parse (but whether names were explicit, which the shape says) and the context
            // are each call's own.
            const bool explicit_names = plan->response_template.parse().explicit_();
            plan->response_template.clear_parse();
            plan->response_template.mutable_parse()->set_explicit_(explicit_names);
            plan->response_template.clear_context();
            plan->response_template.clear_answer_summary();
            self.publish(ns, text_key(parsed_request), std::move(plan));
          },
          py::arg("namespace"), py::arg("request"), py::arg("index"), py::arg("ids"), py::arg("metadata"),
          py::arg("records"), py::arg("explain"), py::arg("search"), py::arg("response"), py::arg("keys"),
          py::arg("triggers"), py::arg("encoder"), py::arg("tokenizer"), py::arg("open_vocabulary"),
          py::arg("answer_k") = 0, py::arg("recency_k") = 0, py::arg("recency") = std::pair<double, double>{0.0, 0.0},
          py::arg("adaptive") = false, py::arg("rule_words") = "", py::arg("confidence_words") = "",
          py::arg("confidence") = Ranking{}, py::arg("recall_search") = py::none(),
          py::arg("concept_vectors") = py::none(),
          "a plan for every text query of the request's shape (text_key): the front parses, embeds and binds each; "
          "answer_k > 0: answer mode's questions, that many notes shown (the core's agent recall); "
          "recency_k, adaptive, rule_words, confidence_words: as publish's")
      .def(
          "set_names",
          [](PlanCache& self, const std::string& ns, std::vector<std::string> names,
             std::shared_ptr<text::ConceptKeys> keys) {
            if (!keys) throw py::value_error("set_names: the namespace's compiled keys are required");
            self.set_names(ns, std::move(names), std::move(keys));
          },
          py::arg("namespace"), py::arg("names"), py::arg("keys"),
          "the namespace's concept names by id and its compiled lookup keys, for its text plans and explicit names")
      .def(
          "has_names", [](const PlanCache& self, const std::string& ns) { return self.names(ns) != nullptr; },
          py::arg("namespace"))
      .def(
          "append_names",
          [](PlanCache& self, const std::string& ns, std::size_t first, const std::vector<std::string>& names) {
            self.append_names(ns, first, names);
          },
          py::arg("namespace"), py::arg("first"), py::arg("names"), "names of the concepts appended from id `first` on")
      .def("concepts_appended", &PlanCache::concepts_appended, py::arg("namespace"),
           "concepts were appended (nothing else changed): drops the plans whose answer reads the whole vocabulary")
      .def("forget", &PlanCache::forget, py::arg("namespace"))
      .def("clear", &PlanCache::clear)
      .def_property_readonly("size", &PlanCache::size);

  py::class_<FastFront>(m, "FastFront")
      .def(py::init([](const std::string& address, const std::string& upstream, std::shared_ptr<PlanCache> plans,
                       const std::string& tls_cert_pem, const std::string& tls_key_pem, std::size_t max_in_flight,
                       std::size_t max_receive_bytes) {
             FrontOptions options{address, upstream, tls_cert_pem, tls_key_pem, max_in_flight, max_receive_bytes};
             try {
               return std::make_unique<FastFront>(std::move(options), std::move(plans));
             } catch (const std::runtime_error& e) {
               throw py::value_error(e.what());
             }
           }),
           py::arg("address"), py::arg("upstream"), py::arg("plans"), py::arg("tls_cert_pem") = "",
           py::arg("tls_key_pem") = "", py::arg("max_in_flight") = 0, py::arg("max_receive_bytes") = 4 << 20)
      .def_property_readonly("port", &FastFront::port)
      .def(
          "set_grants",
          [](FastFront& self, const std::vector<std::pair<py::bytes, std::vector<std::string>>>& grants) {
            std::vector<Grant> converted;
            for (const auto& [digest, namespaces] : grants) converted.push_back({std::string(digest), namespaces});
            self.set_grants(std::move(converted));
          },
          py::arg("grants"), "[(sha256 digest, namespaces)]; empty: auth off")
      .def("shutdown", &FastFront::shutdown, py::arg("grace_seconds"), py::call_guard<py::gil_scoped_release>())
      .def("stats", [](const FastFront& self) {
        const auto s = self.stats();
        py::dict out;
        out["native"] = s.native;
        out["forwarded"] = s.forwarded;
        out["overloaded"] = s.overloaded;
        out["in_flight"] = s.in_flight;
        out["hits"] =
            py::dict(py::arg("conflict") = s.hits[0], py::arg("neutral") = s.hits[1], py::arg("entailed") = s.hits[2]);
        out["latency_bounds"] = std::vector<double>(kLatencyBounds.begin(), kLatencyBounds.end());
        out["latency_counts"] = std::vector<std::uint64_t>(s.latency.begin(), s.latency.end());
        out["latency_sum"] = s.latency_sum;
        return out;
      });
}
