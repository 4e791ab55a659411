// The agent's recall labels' binding (cpp/src/answer_labels.cpp) inside polarmem_server._core:
// plain tuples in and out; the library (polarmem_server/recall.py) gathers the candidates.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <tuple>
#include <vector>

#include "polarmem/answer_labels.hpp"

namespace py = pybind11;
using namespace polarmem::answer;

namespace polarmem::bindings {

void bind_answer(py::module_& m) {
  m.def(
      "answer_question",
      [](const std::vector<std::tuple<std::string, int>>& terms, std::vector<std::string> unknown_topics, bool presence,
         const std::vector<std::tuple<std::string, std::vector<std::int8_t>, float, std::int64_t>>& candidates,
         std::size_t k, double topic_coverage, double verified_bonus, double contradiction_penalty) {
        Question question;
        for (const auto& [name, role] : terms) {
          if (role < 0 || role > 2) throw py::value_error("term role must be 0 (subject), 1 (topic) or 2 (forbidden)");
          question.terms.push_back({name, static_cast<Role>(role)});
        }
        question.unknown_topics = std::move(unknown_topics);
        question.presence = presence;
        std::vector<Candidate> converted;
        converted.reserve(candidates.size());
        for (const auto& [id, states, similarity, created_ms] : candidates)
          converted.push_back({id, states, similarity, created_ms});
        Answer answer;
        {
          py::gil_scoped_release unlocked;
          answer = answer_question(question, converted, k,
                                   AnswerRule{topic_coverage, verified_bonus, contradiction_penalty});
        }
        std::vector<std::tuple<std::size_t, std::string, std::string, std::string>> hits;
        for (auto& hit : answer.hits) {
          hits.emplace_back(hit.candidate, std::string(label_name(hit.label)), std::move(hit.status),
                            std::move(hit.superseded_by));
        }
        return std::make_tuple(hits, answer.summary);
      },
      py::arg("terms"), py::arg("unknown_topics"), py::arg("presence"), py::arg("candidates"), py::arg("k"),
      py::arg("topic_coverage"), py::arg("verified_bonus"), py::arg("contradiction_penalty"),
      "terms: (name, role 0 subject / 1 topic / 2 forbidden); candidates: (id, state per term, similarity, "
      "created_ms). Returns ([(candidate index, label, status, superseded_by)] in the order shown, summary).");
  m.def(
      "is_presence_question", [](const py::bytes& utf8) { return is_presence_question(std::string(utf8)); },
      py::arg("utf8"));
}

}  // namespace polarmem::bindings
