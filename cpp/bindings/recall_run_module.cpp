// One Recall's modes (cpp/src/recall_run.cpp) inside polarmem_server._core: plain tuples in and
// out; the library (polarmem_server/library/recall.py) runs the searches it asks for with its
// backend and reads the hits' evidence from their records.
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "polarmem/recall_run.hpp"

namespace py = pybind11;

namespace polarmem::bindings {

namespace {

using PyRow = std::tuple<std::string, int, double, int, double>;  // id, tier, s_sem, flags, rank_value
using PySearch = std::function<std::tuple<std::vector<PyRow>, std::array<std::int64_t, 3>>(SearchMode, std::size_t,
                                                                                           bool, bool, bool)>;
using PyCited = std::tuple<int, bool, double, std::string>;  // state, scored, mean, source
// per id: None (forgotten) or (cited, tau, delta, stamp_ms or None)
using PyEvidence = std::optional<std::tuple<std::vector<PyCited>, double, double, std::optional<std::int64_t>>>;
using PyRead = std::function<std::vector<PyEvidence>(const std::vector<std::string>&, bool)>;

recall::Store store_of(const PySearch& search, const PyRead& read, bool searches_strict) {
  recall::Store store;
  store.searches_strict = searches_strict;
  store.search = [&search](const recall::Search& wanted) {
    auto [rows, tier_counts] =
        search(wanted.mode, wanted.k, wanted.exclude_conflicts, wanted.absent_verified, wanted.ranked);
    recall::Found found;
    found.tier_counts = tier_counts;
    for (auto& [id, tier, score, flags, rank_value] : rows) {
      found.rows.push_back({std::move(id), tier, score, static_cast<std::int8_t>(flags), rank_value});
    }
    return found;
  };
  store.read = [&read](const std::vector<std::string>& ids, bool stamps) {
    auto evidence = read(ids, stamps);
    if (evidence.size() != ids.size()) throw py::value_error("read must return one evidence (or None) per id");
    std::vector<recall::Evidence> out(ids.size());
    for (std::size_t i = 0; i < ids.size(); ++i) {
      if (!evidence[i]) continue;
      auto& [cited, tau, delta, stamp] = *evidence[i];
      auto& item = out[i];
      item.found = true;
      for (auto& [state, scored, mean, source] : cited) item.cited.push_back({state, scored, mean, std::move(source)});
      item.tau = tau;
      item.delta = delta;
      item.stamp_ms = stamp;
    }
    return out;
  };
  return store;
}

py::list hits_of(const std::vector<recall::Hit>& hits, const std::vector<std::string>& names) {
  py::list out;
  for (const auto& hit : hits) {
    std::vector<std::string> entailed, conflicted;
    for (const auto i : hit.why.entailed) entailed.push_back(names[i]);
    for (const auto i : hit.why.conflicted) conflicted.push_back(names[i]);
    out.append(
        py::make_tuple(hit.id, hit.tier, hit.score, entailed, conflicted, hit.why.reasons, hit.why.absence_verified));
  }
  return out;
}

}  // namespace

void bind_recall_run(py::module_& m) {
  m.def(
      "run_recall",
      [](SearchMode mode, bool adaptive, std::vector<std::string> unknown, std::vector<std::string> mapped,
         bool similarity, std::size_t k, bool exclude_conflicts, std::size_t suppressed_k,
         std::optional<std::pair<double, double>> recency, std::int64_t now_ms, bool explain,
         std::vector<std::string> concept_names, std::size_t required_count, bool metadata_filtered,
         std::string confidence_words, std::string rule_words, bool searches_strict, const PySearch& search,
         const PyRead& read, std::size_t max_candidates) {
        recall::Ask ask;
        ask.mode = mode;
        ask.adaptive = adaptive;
        ask.uncertainty = {std::move(unknown), std::move(mapped), !concept_names.empty(), similarity};
        ask.k = k;
        ask.exclude_conflicts = exclude_conflicts;
        ask.suppressed_k = suppressed_k;
        if (recency) ask.recency = recency::Term{recency->first, recency->second};
        ask.now_ms = now_ms;
        ask.max_candidates = max_candidates;
        ask.explain = explain;
        ask.concept_names = std::move(concept_names);
        ask.required_count = required_count;
        ask.metadata_filtered = metadata_filtered;
        ask.confidence_words = std::move(confidence_words);
        ask.rule_words = std::move(rule_words);
        if (ask.required_count > ask.concept_names.size()) throw py::value_error("required_count > len(concept_names)");
        const recall::Store store = store_of(search, read, searches_strict);
        recall::Recalled out;
        {
          py::gil_scoped_release unlocked;  // the callables take the GIL back
          out = recall::run(ask, store);
        }
        return py::make_tuple(hits_of(out.hits, ask.concept_names), hits_of(out.suppressed, ask.concept_names),
                              out.tier_counts, out.mode_used, out.mode_reason);
      },
      py::arg("mode"), py::arg("adaptive"), py::arg("unknown"), py::arg("mapped"), py::arg("similarity"), py::arg("k"),
      py::arg("exclude_conflicts"), py::arg("suppressed_k"), py::arg("recency"), py::arg("now_ms"), py::arg("explain"),
      py::arg("concept_names"), py::arg("required_count"), py::arg("metadata_filtered"), py::arg("confidence_words"),
      py::arg("rule_words"), py::arg("searches_strict"), py::arg("search"), py::arg("read"),
      py::arg("max_candidates") = kMaxTopK,
      "One Recall's modes (cpp/include/polarmem/recall_run.hpp). search(mode, k, exclude_conflicts, absent_verified, "
      "ranked) -> ([(id, tier, s_sem, flags, rank_value)], (conflict, neutral, entailed)); read(ids, stamps) -> per id "
      "None (forgotten) or ([(state, scored, mean, source)] per query concept, tau, delta, stamp_ms or None). Returns "
      "(hits, suppressed, tier counts, mode used, mode_reason); a hit is (id, tier, s_sem, "
      "entailed names, conflicted names, reasons, absence_verified).");
}

}  // namespace polarmem::bindings
