// The agent's recall labels' binding (cpp/src/answer_labels.cpp) inside polarmem_server._core:
// plain tuples in and out; the library (polarmem_server/library/answer_recall.py) gathers the candidates.
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
      [](const py::bytes& question_utf8, const std::vector<std::tuple<std::string, int>>& terms,
         const std::vector<std::tuple<std::string, Concepts, float, std::int64_t>>& candidates, std::size_t k,
         double topic_coverage, double verified_bonus, double contradiction_penalty) {
        std::vector<QueryTerm> read_terms;
        for (const auto& [name, role] : terms) {
          if (role < 0 || role > 3) {
            throw py::value_error("term role must be 0 (subject), 1 (topic), 2 (forbidden) or 3 (event)");
          }
          read_terms.push_back({name, static_cast<Role>(role)});
        }
        const Question question = read_question(std::string(question_utf8), std::move(read_terms));
        std::vector<Candidate> converted;
        converted.reserve(candidates.size());
        for (const auto& [id, concepts, similarity, created_ms] : candidates)
          converted.push_back({id, concepts, similarity, created_ms});
        Answer answer;
        {
          py::gil_scoped_release unlocked;
          answer = answer_question(question, converted, k,
                                   AnswerRule{topic_coverage, verified_bonus, contradiction_penalty});
        }
        std::vector<std::tuple<std::size_t, std::string, std::string, std::string, std::vector<std::int8_t>>> hits;
        for (auto& hit : answer.hits) {
          hits.emplace_back(hit.candidate, std::string(label_name(hit.label)), std::move(hit.status),
                            std::move(hit.superseded_by), std::move(hit.states));
        }
        return std::make_tuple(hits, answer.summary);
      },
      py::arg("question_utf8"), py::arg("terms"), py::arg("candidates"), py::arg("k"), py::arg("topic_coverage"),
      py::arg("verified_bonus"), py::arg("contradiction_penalty"),
      "terms: (name, role 0 subject / 1 topic / 2 forbidden / 3 event), the question's frame found here; candidates: "
      "(id, "
      "[(concept name, +1 HAS / -1 NOT_HAS)], similarity, created_ms). Returns ([(candidate index, label, status, "
      "superseded_by, state per term)] in the order shown, summary).");
}

}  // namespace polarmem::bindings
