// The agent's recall labels (cpp/include/polarmem/answer_labels.hpp says what each one means).
#include "polarmem/answer_labels.hpp"

#include <algorithm>
#include <ctime>
#include <numeric>

#include "polarmem/text_parse.hpp"

namespace polarmem::answer {

namespace {

std::string date_of(std::int64_t created_ms) {
  if (created_ms <= 0) return "";
  const std::time_t seconds = static_cast<std::time_t>(created_ms / 1000);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char buffer[16];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%d", &utc);
  return buffer;
}

std::string joined(const std::vector<std::string>& parts) {
  std::string out;
  for (const auto& part : parts) {
    if (!out.empty()) out += ", ";
    out += part;
  }
  return out;
}

struct Reading {
  std::vector<std::string> verified;   // what the note verifies of the question, as shown
  std::vector<std::string> matched;    // concepts the note holds as HAS (RELATED shows these)
  std::vector<std::string> absent;    // topics NOT_HAS ("NOT_HAS coffee")
  std::vector<std::string> contradicts;  // forbidden HAS, subject NOT_HAS
  std::vector<std::string> constraint;   // forbidden NOT_HAS
  bool subjects_hold = true;
  std::size_t topics_held = 0;
};

Reading read(const Question& question, const Candidate& candidate) {
  Reading r;
  for (std::size_t t = 0; t < question.terms.size(); ++t) {
    const auto& term = question.terms[t];
    const int state = t < candidate.states.size() ? candidate.states[t] : 0;
    switch (term.role) {
      case Role::kSubject:
        if (state > 0) {
          r.verified.push_back(term.name);
          r.matched.push_back(term.name);
        } else {
          r.subjects_hold = false;
          if (state < 0) r.contradicts.push_back("NOT_HAS " + term.name);
        }
        break;
      case Role::kTopic:
        if (state > 0) {
          ++r.topics_held;
          r.verified.push_back(term.name);
          r.matched.push_back(term.name);
        } else if (state < 0) {
          r.absent.push_back(term.name);
        }
        break;
      case Role::kForbidden:
        if (state > 0) r.contradicts.push_back("HAS " + term.name);
        if (state < 0) {
          r.verified.push_back(term.name + "-free");
          r.constraint.push_back(term.name);
        }
        break;
    }
  }
  return r;
}

LabelledHit label(const Question& question, const Candidate& candidate, std::size_t index, const AnswerRule& rule) {
  const Reading r = read(question, candidate);
  std::size_t subjects = 0, topics = question.unknown_topics.size(), forbidden = 0;
  for (const auto& term : question.terms) {
    subjects += term.role == Role::kSubject;
    topics += term.role == Role::kTopic;
    forbidden += term.role == Role::kForbidden;
  }
  LabelledHit hit;
  hit.candidate = index;
  const auto with = [](std::string_view word, const std::vector<std::string>& names, std::string_view prefix = "") {
    std::vector<std::string> shown;
    for (const auto& name : names) shown.push_back(std::string(prefix) + name);
    return std::string(word) + ": " + joined(shown);
  };
  if (!r.contradicts.empty()) {
    hit.label = Label::kConflict;
    hit.status = with("CONFLICT", r.contradicts);
    return hit;
  }
  if (!r.absent.empty()) {
    if (question.presence && r.subjects_hold) {
      hit.label = Label::kAnswersNo;
      hit.status = with("ANSWERS NO", r.absent, "NOT_HAS ");
    } else if (question.presence) {
      hit.label = Label::kRelated;
      hit.status = r.matched.empty() ? "RELATED: similar only" : with("RELATED", r.matched);
    } else if (subjects > 0 && r.subjects_hold) {  // what the subject avoids or lacks: its constraint
      std::vector<std::string> constraint = r.absent;
      constraint.insert(constraint.end(), r.constraint.begin(), r.constraint.end());
      hit.label = Label::kConstraint;
      hit.status = with("CONSTRAINT", constraint, "NOT_HAS ");
    } else {
      hit.label = Label::kConflict;
      hit.status = with("CONFLICT", r.absent, "NOT_HAS ");
    }
    return hit;
  }
  const bool topics_hold =
      topics == 0 ? true
                  : static_cast<double>(r.topics_held) >= rule.topic_coverage * static_cast<double>(topics) &&
                        r.topics_held > 0;
  // What the question excludes is verified only where the note says it is absent ("peanut-free"):
  // a note silent about peanuts verifies "a snack for Leo", not "with no peanuts".
  const bool exclusions_hold = r.constraint.size() == forbidden;
  if (r.subjects_hold && topics_hold && exclusions_hold && subjects + topics + forbidden > 0) {
    hit.label = Label::kVerified;
    hit.status = with("VERIFIED", r.verified);
    return hit;
  }
  if (subjects > 0 && r.subjects_hold && !r.constraint.empty()) {  // a constraint is someone's
    hit.label = Label::kConstraint;
    hit.status = with("CONSTRAINT", r.constraint, "NOT_HAS ");
    return hit;
  }
  hit.label = Label::kRelated;
  hit.status = r.matched.empty() ? "RELATED: similar only" : with("RELATED", r.matched);
  return hit;
}

// A newer candidate about the same subjects with the opposite state of a question topic
// revises an older one. Only where the question names a subject: without one, two notes with
// opposite states may be about different people, and neither revises the other.
void mark_superseded(const Question& question, const std::vector<Candidate>& candidates,
                     std::vector<LabelledHit>& hits) {
  // Topics only: two notes with opposite states of a forbidden concept ("no peanuts" / "with
  // peanuts") are as often two things (two snacks) as one thing revised.
  std::vector<std::size_t> subjects, concepts;
  for (std::size_t t = 0; t < question.terms.size(); ++t) {
    if (question.terms[t].role == Role::kSubject) subjects.push_back(t);
    if (question.terms[t].role == Role::kTopic) concepts.push_back(t);
  }
  if (subjects.empty() || concepts.empty()) return;
  const auto state = [&](std::size_t c, std::size_t t) {
    return t < candidates[c].states.size() ? static_cast<int>(candidates[c].states[t]) : 0;
  };
  const auto about_subjects = [&](std::size_t c) {
    return std::all_of(subjects.begin(), subjects.end(), [&](std::size_t t) { return state(c, t) > 0; });
  };
  for (auto& older : hits) {
    const std::size_t a = older.candidate;
    if (older.label == Label::kConflict || !about_subjects(a)) continue;
    const Candidate* newest = nullptr;
    std::string changed;
    for (const auto& newer : hits) {
      const std::size_t b = newer.candidate;
      // Only an answer revises: a note that merely shares a word ("school bus" / "school days") does not.
      if (!is_verified_answer(newer.label) || candidates[b].created_ms <= candidates[a].created_ms ||
          !about_subjects(b)) {
        continue;
      }
      for (std::size_t t : concepts) {
        const int before = state(a, t), after = state(b, t);
        if (before != 0 && after == -before && (newest == nullptr || candidates[b].created_ms > newest->created_ms)) {
          newest = &candidates[b];
          changed = (after > 0 ? "HAS " : "NOT_HAS ") + question.terms[t].name;
        }
      }
    }
    if (newest == nullptr) continue;
    older.label = Label::kSuperseded;
    older.superseded_by = newest->id;
    const std::string then = date_of(candidates[a].created_ms), now = date_of(newest->created_ms);
    older.status = "SUPERSEDED by " + newest->id + (now.empty() ? "" : " of " + now) + ": " + changed +
                   (then.empty() ? "" : " (this note " + then + ")");
  }
}

// Every subject and topic HAS (at least one asked), no unknown topic: the paper's entailment
// with nothing left unverified but what the question excludes.
bool holds_everything_asked(const Question& question, const Candidate& candidate) {
  if (!question.unknown_topics.empty()) return false;
  bool asked = false;
  for (std::size_t t = 0; t < question.terms.size(); ++t) {
    if (question.terms[t].role == Role::kForbidden) continue;
    asked = true;
    if (t >= candidate.states.size() || candidate.states[t] <= 0) return false;
  }
  return asked;
}

int group_of(Label label) {
  switch (label) {
    case Label::kVerified:
    case Label::kAnswersNo:
    case Label::kConstraint: return 0;
    case Label::kRelated: return 1;
    case Label::kSuperseded:
    case Label::kConflict: return 2;
  }
  return 2;
}

std::string summary_of(const Question& question) {
  std::vector<std::string> asked;
  for (const auto& term : question.terms)
    asked.push_back(term.role == Role::kForbidden ? "no " + term.name : term.name);
  for (const auto& word : question.unknown_topics) asked.push_back(word);
  return asked.empty() ? "no verified evidence" : "no verified evidence for: " + joined(asked);
}

}  // namespace

Answer answer_question(const Question& question, const std::vector<Candidate>& candidates, std::size_t k,
                       const AnswerRule& rule) {
  Answer out;
  std::vector<LabelledHit> hits;
  hits.reserve(candidates.size());
  for (std::size_t i = 0; i < candidates.size(); ++i) hits.push_back(label(question, candidates[i], i, rule));
  mark_superseded(question, candidates, hits);
  const auto by_similarity = [&](const LabelledHit& a, const LabelledHit& b) {
    const auto& x = candidates[a.candidate];
    const auto& y = candidates[b.candidate];
    return x.similarity != y.similarity ? x.similarity > y.similarity : x.id < y.id;
  };
  // similarity moved by the label; a superseded note just below the note that revises it
  std::vector<double> key(candidates.size());
  // A superseded note is shown, not hidden (it says what held before): no penalty, only below
  // the note that revises it.
  const auto shift = [&](Label label) {
    return is_verified_answer(label)   ? rule.verified_bonus
           : label == Label::kConflict ? -rule.contradiction_penalty
                                       : 0.0;
  };
  for (const auto& hit : hits) {
    key[hit.candidate] = candidates[hit.candidate].similarity + shift(hit.label);
    // consistent with everything asked, silent only on what the question excludes: half the move
    if (hit.label == Label::kRelated && holds_everything_asked(question, candidates[hit.candidate])) {
      key[hit.candidate] += rule.verified_bonus / 2;
    }
  }
  for (const auto& hit : hits) {
    if (hit.label != Label::kSuperseded) continue;
    for (std::size_t c = 0; c < candidates.size(); ++c) {
      if (candidates[c].id == hit.superseded_by) key[hit.candidate] = std::min(key[hit.candidate], key[c] - 1e-6);
    }
  }
  std::vector<LabelledHit> ranked = hits;
  std::stable_sort(ranked.begin(), ranked.end(), [&](const LabelledHit& a, const LabelledHit& b) {
    const double ka = key[a.candidate], kb = key[b.candidate];
    return ka != kb ? ka > kb : by_similarity(a, b);
  });
  if (ranked.size() > k) {
    // The note plain similarity puts first is shown, labelled, whatever the logic says of it.
    const auto first = std::min_element(hits.begin(), hits.end(), by_similarity);
    const auto shown = std::find_if(ranked.begin(), ranked.begin() + static_cast<std::ptrdiff_t>(k),
                                    [&](const LabelledHit& h) { return h.candidate == first->candidate; });
    if (k > 0 && shown == ranked.begin() + static_cast<std::ptrdiff_t>(k)) {
      const auto at = std::find_if(ranked.begin(), ranked.end(),
                                   [&](const LabelledHit& h) { return h.candidate == first->candidate; });
      std::rotate(ranked.begin() + static_cast<std::ptrdiff_t>(k) - 1, at, at + 1);
    }
    ranked.resize(k);
  }
  const bool answered =
      std::any_of(ranked.begin(), ranked.end(), [](const LabelledHit& h) { return is_verified_answer(h.label); });
  if (!answered) out.summary = summary_of(question);
  out.hits = std::move(ranked);
  return out;
}

bool is_presence_question(std::string_view utf8) {
  static const std::vector<std::string_view> openers = {"does",   "do",   "did",  "is",    "are",     "was",   "were",
                                                        "has",    "have", "had",  "can",   "could",   "will",  "would",
                                                        "should", "any",  "ever", "isn't", "doesn't", "didn't"};
  const auto tokens = text::tokenise(utf8);
  std::size_t i = 0;
  // "So, does ..." / "Hey, is ...": a short lead-in before the auxiliary.
  while (i < tokens.size() && i < 2 &&
         (tokens[i].word == "so" || tokens[i].word == "and" || tokens[i].word == "hey" || tokens[i].word == "," ||
          tokens[i].word == "also")) {
    ++i;
  }
  if (i >= tokens.size()) return false;
  return std::find(openers.begin(), openers.end(), tokens[i].word) != openers.end();
}

std::string_view label_name(Label label) {
  switch (label) {
    case Label::kVerified: return "VERIFIED";
    case Label::kAnswersNo: return "ANSWERS_NO";
    case Label::kConstraint: return "CONSTRAINT";
    case Label::kRelated: return "RELATED";
    case Label::kSuperseded: return "SUPERSEDED";
    case Label::kConflict: return "CONFLICT";
  }
  return "RELATED";
}

bool is_verified_answer(Label label) { return group_of(label) == 0; }

}  // namespace polarmem::answer
