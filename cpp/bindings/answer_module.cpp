// The agent's recall (cpp/src/answer_recall.cpp) and its labels (cpp/src/answer_labels.cpp)
// inside polarmem_server._core: plain tuples in and out; the library
// (polarmem_server/library/answer_recall.py) runs the searches and reads the records it is asked for.
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <array>
#include <functional>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "polarmem/answer_labels.hpp"
#include "polarmem/answer_recall.hpp"

namespace py = pybind11;
using namespace polarmem::answer;

namespace polarmem::bindings {

namespace {

using Named = std::vector<std::tuple<std::uint32_t, std::string>>;

std::vector<NamedConcept> named(const Named& concepts) {
  std::vector<NamedConcept> out;
  for (const auto& [id, name] : concepts) out.push_back({id, name});
  return out;
}

using PySearch = std::function<std::tuple<std::vector<std::pair<std::string, float>>, std::array<std::int64_t, 3>>(
    const std::string&, std::size_t, const std::vector<std::uint32_t>&, const std::vector<std::uint32_t>&, bool)>;
using PyRead =
    std::function<std::vector<std::optional<std::tuple<std::int64_t, Concepts>>>(const std::vector<std::string>&)>;

}  // namespace

void bind_answer(py::module_& m) {
  m.attr("AGENT_RULE") =
      py::make_tuple(kAgentRule.topic_coverage, kAgentRule.verified_bonus, kAgentRule.contradiction_penalty);
  m.def(
      "answer_recall",
      [](const py::bytes& question_utf8, const Named& required, const Named& forbidden,
         const std::vector<std::uint32_t>& subjects, const std::vector<std::string>& unknown, const Named& uncertain,
         const std::vector<std::string>& uncertain_words, std::size_t k, const PySearch& search, const PyRead& read,
         double topic_coverage, double verified_bonus, double contradiction_penalty) {
        const ParsedQuestion question{named(required), named(forbidden), subjects,
                                      unknown,         named(uncertain), uncertain_words};
        const RunSearch run = [&search](const CandidateSearch& s) {
          auto [hits, tier_counts] =
              search(s.mode == SearchMode::kOff ? "off" : "hard", s.k, s.required, s.forbidden, s.absent_verified);
          return Searched{std::move(hits), tier_counts};
        };
        const ReadNotes read_notes = [&read](const std::vector<std::string>& ids) {
          std::vector<Note> notes;
          for (auto& found : read(ids)) {
            notes.emplace_back();
            if (!found) continue;
            notes.back().found = true;
            notes.back().created_ms = std::get<0>(*found);
            notes.back().stated = std::move(std::get<1>(*found));
          }
          if (notes.size() != ids.size()) throw py::value_error("read must return one entry (or None) per id");
          return notes;
        };
        const std::string text(question_utf8);
        Recalled recalled;
        {
          // The callables take the GIL back for the searches and the reads they make.
          py::gil_scoped_release unlocked;
          recalled = answer_recall(text, question, k, run, read_notes,
                                   AnswerRule{topic_coverage, verified_bonus, contradiction_penalty});
        }
        py::list hits;
        for (auto& hit : recalled.hits) {
          hits.append(py::make_tuple(hit.candidate, hit.similarity, hit.tier, std::string(label_name(hit.label)),
                                     hit.answer, hit.superseded_by, hit.entailed_by, hit.conflicted_by,
                                     hit.absence_verified));
        }
        return py::make_tuple(hits, recalled.summary, recalled.tier_counts);
      },
      py::arg("question_utf8"), py::arg("required"), py::arg("forbidden"), py::arg("subjects"), py::arg("unknown"),
      py::arg("uncertain"), py::arg("uncertain_words"), py::arg("k"), py::arg("search"), py::arg("read"),
      py::arg("topic_coverage") = kAgentRule.topic_coverage, py::arg("verified_bonus") = kAgentRule.verified_bonus,
      py::arg("contradiction_penalty") = kAgentRule.contradiction_penalty,
      "The notes to show for a question (cpp/include/polarmem/answer_recall.hpp). required / forbidden / uncertain: "
      "[(concept id, name)]; search(mode 'off' | 'hard', k, required ids, forbidden ids, absent_verified) -> "
      "([(id, similarity)], (conflict, neutral, entailed)); read(ids) -> [None | (created_ms, [(concept name, "
      "+1 HAS / -1 NOT_HAS)])] per id. Returns ([(index into the ids read, similarity, tier, label, answer, "
      "superseded_by, "
      "entailed_by, conflicted_by, absence_verified)] in the order shown, summary, tier counts of the "
      "plain-similarity search).");
  m.def("headed_context", &headed_context, py::arg("summary"), py::arg("context"),
        "the context with the summary, when there is one, heading it");
}

}  // namespace polarmem::bindings
