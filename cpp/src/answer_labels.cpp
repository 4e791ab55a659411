// The agent's recall labels (cpp/include/polarmem/answer_labels.hpp says what each one means).
#include "polarmem/answer_labels.hpp"

#include <algorithm>
#include <cctype>
#include <ctime>
#include <numeric>
#include <unordered_map>
#include <unordered_set>

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

using States = std::vector<std::int8_t>;  // a candidate's state of each question term

// The note's state of each term: of the concept so named, else of one with the same stem (a HAS
// wins over a NOT_HAS: "quit smoking ... after smoking since seventeen"). Each concept's stem is
// taken once per note.
States states_of(const Question& question, const std::vector<std::string>& stems, const Candidate& candidate) {
  States states(question.terms.size(), 0);
  std::vector<std::string> concept_stems;
  for (std::size_t t = 0; t < question.terms.size(); ++t) {
    if (question.terms[t].role == Role::kFrame) continue;
    std::int8_t by_stem = 0;
    bool named = false;
    for (std::size_t c = 0; c < candidate.concepts.size(); ++c) {
      const auto& [concept_name, state] = candidate.concepts[c];
      if (concept_name == question.terms[t].name) {
        states[t] = state;
        named = true;
        break;
      }
      if (concept_stems.size() <= c) concept_stems.push_back(stem(concept_name));
      if (by_stem <= 0 && state != 0 && concept_stems[c] == stems[t]) by_stem = state;
    }
    if (!named) states[t] = by_stem;
  }
  return states;
}

Reading read(const Question& question, const States& states) {
  Reading r;
  for (std::size_t t = 0; t < question.terms.size(); ++t) {
    const auto& term = question.terms[t];
    const int state = states[t];
    switch (term.role) {
      case Role::kFrame: break;
      case Role::kSubject:
        if (state > 0) {
          r.verified.push_back(term.name);
          r.matched.push_back(term.name);
        } else {
          r.subjects_hold = false;
          if (state < 0) r.contradicts.push_back("NOT_HAS " + term.name);
        }
        break;
      case Role::kEvent:
        // The question's own negated event is held by the note that states it ("when did Tomasz
        // quit smoking?": NOT_HAS smoking); a HAS answers a question about it only when it asks
        // what or when, not whether (its polarity is the question's, which the parse leaves open).
        if (state < 0) {
          ++r.topics_held;
          r.verified.push_back("NOT_HAS " + term.name);
        } else if (state > 0 && !question.presence) {
          ++r.topics_held;
          r.verified.push_back(term.name);
          r.matched.push_back(term.name);
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

// Whether the note denies a concept the question does not name, by name or by stem ("bass" for
// "does Tomas play tennis?").
bool denies_unasked(const Candidate& candidate, const std::vector<std::string>& stems, const Question& question) {
  for (const auto& [name, state] : candidate.concepts) {
    if (state >= 0) continue;
    const std::string key = stem(name);
    bool asked = false;
    for (std::size_t t = 0; t < question.terms.size() && !asked; ++t)
      asked = question.terms[t].name == name || stems[t] == key;
    if (!asked) return true;
  }
  return false;
}

// The note's "no" is about another thing: it denies a thing the question does not name, and
// either denies the question's verb alone ("used to play bass" answers no question about tennis,
// "doesn't store card numbers" none about passwords) or is silent on the modifier the question
// puts before a thing ("no staging environment" says nothing of a production environment). (Silent
// on a circumstance, it may still deny in general: "Maya is allergic to cats; her flat is
// pet-free" answers "would Maya be fine with a cat in the house?", agent memory dev.)
bool denies_another_thing(const Question& question, const States& states, bool unasked_denied) {
  if (!unasked_denied) return false;
  bool verb_denied = false, thing_denied = false, other_topic = false, modifier_unknown = false;
  for (std::size_t t = 0; t < question.terms.size(); ++t) {
    const auto& term = question.terms[t];
    if (term.role != Role::kTopic) continue;
    thing_denied = thing_denied || (states[t] < 0 && !term.verb);
    verb_denied = verb_denied || (term.verb && states[t] < 0);
    other_topic = other_topic || !term.verb;
    modifier_unknown = modifier_unknown || (states[t] == 0 && term.modifier);
  }
  return (verb_denied && other_topic && !thing_denied) || (thing_denied && modifier_unknown);
}

// The note denies only the question's circumstances and is silent on a thing it asks: "a standing
// desk at work, not at home" says nothing of Windows at home.
bool denies_only_a_circumstance(const Question& question, const States& states) {
  bool denied = false, thing_unknown = false;
  for (std::size_t t = 0; t < question.terms.size(); ++t) {
    const auto& term = question.terms[t];
    if (term.role != Role::kTopic) continue;
    if (states[t] < 0 && !term.circumstance) return false;
    denied = denied || states[t] < 0;
    thing_unknown = thing_unknown || (states[t] == 0 && !term.verb && !term.circumstance);
  }
  return denied && thing_unknown;
}

LabelledHit label(const Question& question, const States& states, std::size_t index, const AnswerRule& rule,
                  bool unasked_denied) {
  Reading r = read(question, states);
  if (denies_another_thing(question, states, unasked_denied) || denies_only_a_circumstance(question, states)) {
    r.absent.clear();
  }
  std::size_t subjects = 0, topics = 0, forbidden = 0;
  for (const auto& term : question.terms) {
    subjects += term.role == Role::kSubject;
    topics += term.role == Role::kTopic || term.role == Role::kEvent;
    forbidden += term.role == Role::kForbidden;
  }
  LabelledHit hit;
  hit.candidate = index;
  hit.states = states;
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
    } else if (subjects > 0) {  // someone else's absence ("Tomasz quit smoking" for Grace): no one's asked
      hit.label = Label::kRelated;
      hit.status = r.matched.empty() ? "RELATED: similar only" : with("RELATED", r.matched);
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
  // Never a name alone: a question that keeps nothing but its subject verifies nothing.
  if (r.subjects_hold && topics_hold && exclusions_hold && topics + forbidden > 0) {
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
                     const std::vector<States>& resolved, std::vector<LabelledHit>& hits) {
  // Topics only: two notes with opposite states of a forbidden concept ("no peanuts" / "with
  // peanuts") are as often two things (two snacks) as one thing revised; and a question about
  // an event with no state ("why couldn't Kwame make the standups?") asks about the change
  // itself, which neither state revises.
  std::vector<std::size_t> subjects, concepts;
  for (std::size_t t = 0; t < question.terms.size(); ++t) {
    if (question.terms[t].role == Role::kSubject) subjects.push_back(t);
    if (question.terms[t].role == Role::kTopic) concepts.push_back(t);
  }
  if (subjects.empty() || concepts.empty()) return;
  const auto state = [&](std::size_t c, std::size_t t) { return static_cast<int>(resolved[c][t]); };
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

// Whom the question asks about, to read a note's actors by (NoteActors): its subjects, and its
// topics where an actor is named ("does HUGO'S WIFE teach piano?").
struct Whom {
  const Question& question;
  const std::vector<std::string>& stems;
  // a question about the subject's relatives asks what they do ("is Tomasz's FAMILY getting a
  // dog?" is answered by "Tomasz's son Olek got a goldfish instead of a dog", conversations dev)
  bool relatives_asked = std::any_of(question.terms.begin(), question.terms.end(), [](const QueryTerm& term) {
    return term.role == Role::kTopic && text::is_relative(term.name);
  });

  // whether a word of `actor` ("wife clara") is a subject, or (not subjects_only) a topic
  bool names(const std::string& actor, bool subjects_only) const {
    for (std::size_t from = 0; from < actor.size();) {
      const std::size_t to = std::min(actor.find(' ', from), actor.size());
      const std::string key = stem(std::string_view(actor).substr(from, to - from));
      for (std::size_t t = 0; t < question.terms.size(); ++t) {
        const Role role = question.terms[t].role;
        if ((role == Role::kSubject || (!subjects_only && role == Role::kTopic)) && stems[t] == key) return true;
      }
      from = to + 1;
    }
    return false;
  }
  bool asked(const std::string& actor) const {
    return names(actor, false) || (relatives_asked && text::is_relative(actor.substr(0, actor.find(' '))));
  }
  bool matches(std::size_t t, const std::string& concept_name) const {
    return concept_name == question.terms[t].name || stem(concept_name) == stems[t];
  }
};

// Forgets the states the note gives of someone the question does not name, where the subject
// acts in the note too: a topic's concept stated of an actor none of whose words is a subject or
// topic of the question. (A subject that acts nowhere in the note is no one whose acts it tells
// apart: "User switched the team's chat from Slack to Teams" for "does the team use Slack?".)
// True when one was forgotten.
bool forget_what_others_do(const Whom& whom, const Actors& actors, States& states) {
  if (std::none_of(actors.begin(), actors.end(), [&](const auto& c) { return whom.names(c.second, true); })) {
    return false;
  }
  bool forgot = false;
  for (std::size_t t = 0; t < whom.question.terms.size(); ++t) {
    const Role role = whom.question.terms[t].role;
    if (role == Role::kSubject || role == Role::kFrame || states[t] == 0) continue;
    for (const auto& [name, actor] : actors) {
      if (whom.matches(t, name) && !whom.asked(actor)) {
        states[t] = 0;
        forgot = true;
        break;
      }
    }
  }
  return forgot;
}

// Takes the states the note gives, with no state of its own, of a person the question asks about:
// its subject ("Nadia's brother Karim plays hockey" for "does Karim play hockey?") or a relative it
// names ("does Maya's BROTHER have a dog?"). True when one was taken.
bool take_what_others_do(const Whom& whom, const std::vector<OthersState>& others, States& states) {
  bool took = false;
  for (std::size_t t = 0; t < whom.question.terms.size(); ++t) {
    if (whom.question.terms[t].role == Role::kFrame || states[t] != 0) continue;
    for (const auto& other : others) {
      // (by name or by the very relative: "their second child" of "Tomasz's wife" answers nothing
      // of "how many children does Tomasz have?", conversations dev)
      if (whom.matches(t, other.name) && whom.names(other.actor, false)) {
        states[t] = other.state;
        took = true;
        break;
      }
    }
  }
  return took;
}

// Whether the note names a relative (a concept held as HAS): only such a note says what another does.
bool names_a_relative(const Candidate& candidate) {
  return std::any_of(candidate.concepts.begin(), candidate.concepts.end(),
                     [](const auto& c) { return c.second > 0 && text::is_relative(c.first); });
}

// Every subject and topic HAS (at least one asked), no unknown topic: the paper's entailment
// with nothing left unverified but what the question excludes.
bool holds_everything_asked(const Question& question, const States& states) {
  bool asked = false;
  for (std::size_t t = 0; t < question.terms.size(); ++t) {
    if (question.terms[t].role == Role::kForbidden || question.terms[t].role == Role::kFrame) continue;
    asked = true;
    if (states[t] <= 0) return false;
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
  for (const auto& term : question.terms) {
    if (term.role != Role::kFrame) asked.push_back(term.role == Role::kForbidden ? "no " + term.name : term.name);
  }
  return asked.empty() ? "no verified evidence" : "no verified evidence for: " + joined(asked);
}

}  // namespace

Answer answer_question(const Question& question, const std::vector<Candidate>& candidates, std::size_t k,
                       const AnswerRule& rule, const ReadActors& actors) {
  Answer out;
  std::vector<std::string> stems;
  for (const auto& term : question.terms) stems.push_back(stem(term.name));
  std::vector<States> resolved;
  resolved.reserve(candidates.size());
  for (const auto& candidate : candidates) resolved.push_back(states_of(question, stems, candidate));
  std::vector<LabelledHit> hits;
  hits.reserve(candidates.size());
  const Whom whom{question, stems};
  const bool subject_named = std::any_of(question.terms.begin(), question.terms.end(),
                                         [](const QueryTerm& term) { return term.role == Role::kSubject; });
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    // (only a presence question's verb is read: denies_another_thing)
    const bool unasked_denied = question.presence && denies_unasked(candidates[i], stems, question);
    hits.push_back(label(question, resolved[i], i, rule, unasked_denied));
    if (!actors || !subject_named) continue;
    // an answer about the subject, unless the note says it of someone else; and what the note
    // says of a relative, for a question about that relative
    const bool answers = is_verified_answer(hits.back().label);
    if (answers ? forget_what_others_do(whom, actors(i).actors, resolved[i])
                : names_a_relative(candidates[i]) && take_what_others_do(whom, actors(i).others, resolved[i])) {
      hits.back() = label(question, resolved[i], i, rule, unasked_denied);
    }
  }
  std::vector<Label> before(hits.size());  // what each note answers, superseded or not
  for (const auto& hit : hits) before[hit.candidate] = hit.label;
  mark_superseded(question, candidates, resolved, hits);
  const auto by_similarity = [&](const LabelledHit& a, const LabelledHit& b) {
    const auto& x = candidates[a.candidate];
    const auto& y = candidates[b.candidate];
    return x.similarity != y.similarity ? x.similarity > y.similarity : x.id < y.id;
  };
  // similarity moved by the label; a superseded note just below the note that revises it
  std::vector<double> key(candidates.size());
  // A superseded note is shown, not hidden (it says what held before, which a question about the
  // past asks): it keeps the move of what it answers, only never above the note that revises it
  // (conversations dev: "did Ana go to Lisbon in May?" is answered by the cancelled May trip,
  // revised by the October one).
  const auto shift = [&](Label label) {
    return is_verified_answer(label)   ? rule.verified_bonus
           : label == Label::kConflict ? -rule.contradiction_penalty
                                       : 0.0;
  };
  for (const auto& hit : hits) {
    key[hit.candidate] = candidates[hit.candidate].similarity + shift(before[hit.candidate]);
    // consistent with everything asked, silent only on what the question excludes: half the move
    if (hit.label == Label::kRelated && holds_everything_asked(question, resolved[hit.candidate])) {
      key[hit.candidate] += rule.verified_bonus / 2;
    }
  }
  // below its reviser, which may itself be superseded: repeat until a chain settles
  for (bool moved = true; moved;) {
    moved = false;
    for (const auto& hit : hits) {
      if (hit.label != Label::kSuperseded) continue;
      for (std::size_t c = 0; c < candidates.size(); ++c) {
        if (candidates[c].id == hit.superseded_by && key[hit.candidate] >= key[c]) {
          key[hit.candidate] = key[c] - 1e-6;
          moved = true;
        }
      }
    }
  }
  std::vector<LabelledHit> ranked = hits;
  std::stable_sort(ranked.begin(), ranked.end(), [&](const LabelledHit& a, const LabelledHit& b) {
    const double ka = key[a.candidate], kb = key[b.candidate];
    return ka != kb ? ka > kb : by_similarity(a, b);
  });
  const auto answers = [](const LabelledHit& h) { return is_verified_answer(h.label); };
  // "no verified evidence" says the memory cannot answer: never of one that holds an answer.
  const bool held = std::any_of(ranked.begin(), ranked.end(), answers);
  if (ranked.size() > k && k > 0) {  // (k 0 shows nothing)
    const auto cut = ranked.begin() + static_cast<std::ptrdiff_t>(k);
    // The note plain similarity puts first is shown, labelled, whatever the logic says of it.
    const auto first = std::min_element(hits.begin(), hits.end(), by_similarity);
    const auto is_first = [&](const LabelledHit& h) { return h.candidate == first->candidate; };
    if (std::find_if(ranked.begin(), cut, is_first) == cut) {
      const auto at = std::find_if(ranked.begin(), ranked.end(), is_first);
      std::rotate(cut - 1, at, at + 1);
    }
    // So is the best answer the order left below the cut, in the last place that is not the
    // plain-similarity note's (a long note that states the answer is less similar to a short
    // question than short notes that do not: "the neighbour's dog" below "A puppy", "Hounds").
    if (std::none_of(ranked.begin(), cut, answers)) {
      const auto best = std::find_if(cut, ranked.end(), answers);
      auto place = cut - 1;
      if (is_first(*place)) place = place == ranked.begin() ? cut : place - 1;
      if (best != ranked.end() && place != cut) std::iter_swap(place, best);
    }
  }
  if (ranked.size() > k) ranked.resize(k);
  if (!held) out.summary = summary_of(question);
  out.hits = std::move(ranked);
  return out;
}

namespace {

bool opens_a_presence_question(const std::vector<text::Token>& tokens) {
  static const std::vector<std::string_view> openers = {"does",   "do",   "did",  "is",    "are",     "was",   "were",
                                                        "has",    "have", "had",  "can",   "could",   "will",  "would",
                                                        "should", "any",  "ever", "isn't", "doesn't", "didn't"};
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

// The question's verb: the word right after its auxiliary and subject ("does Tomas PLAY tennis?",
// "did Ana and Ben MOVE to Porto?"), when it is a topic; and its circumstances, the topics after a
// preposition ("at HOME", "from LISBON").
void mark_verb_and_circumstances(std::string_view utf8, const std::vector<text::Token>& tokens,
                                 std::vector<QueryTerm>& terms) {
  const auto term_of = [&](std::string_view word) -> QueryTerm* {
    for (auto& term : terms)
      if (term.role == Role::kTopic && (term.name == word || stem(term.name) == stem(word))) return &term;
    return nullptr;
  };
  bool after_preposition = false;
  for (const auto& token : tokens) {
    after_preposition = after_preposition || text::is_preposition(token.word) || token.word == "from";
    if (QueryTerm* term = after_preposition ? term_of(token.word) : nullptr) term->circumstance = true;
  }
  // (by stem: a name's concept may be its singular, "ines" -> "ine")
  const auto subject = [&](const text::Token& token) {
    std::string_view word = token.word;
    if (word.size() > 2 && word.substr(word.size() - 2) == "'s") word.remove_suffix(2);
    const std::string key = stem(word);
    return std::any_of(terms.begin(), terms.end(),
                       [&](const QueryTerm& t) { return t.role == Role::kSubject && stem(t.name) == key; });
  };
  // another name beside the subject ("did Dev and FELIX go ...": one name is the subject, the
  // others are topics)
  const auto name = [&](const text::Token& token) {
    return subject(token) || std::isupper(static_cast<unsigned char>(utf8[token.byte]));
  };
  // (an adverb may stand between: "does Omar STILL code in Java?")
  static const std::unordered_set<std::string_view> adverbs = {
      "still",  "ever",      "really", "usually",   "also",    "actually", "often",     "sometimes",
      "always", "currently", "now",    "regularly", "already", "normally", "generally", "typically"};
  std::size_t i = 0;
  while (i < tokens.size() && !subject(tokens[i])) ++i;
  while (i < tokens.size() && (name(tokens[i]) || tokens[i].word == "and" || adverbs.count(tokens[i].word))) {
    ++i;
  }
  if (QueryTerm* term = i < tokens.size() ? term_of(tokens[i].word) : nullptr) {
    if (!term->circumstance) term->verb = true;
  }
  // a topic right before another names which one ("a PRODUCTION environment"); names and the
  // verb are no modifiers ("did Ana start pottery before or after BEN hurt his knee?")
  for (std::size_t j = 0; j + 1 < tokens.size(); ++j) {
    QueryTerm* term = name(tokens[j]) ? nullptr : term_of(tokens[j].word);
    QueryTerm* head = name(tokens[j + 1]) ? nullptr : term_of(tokens[j + 1].word);
    if (term != nullptr && head != nullptr && !term->verb) term->modifier = true;
  }
}

bool pronoun_follows_the_auxiliary(const std::vector<text::Token>& tokens) {
  static const std::unordered_set<std::string_view> pronouns = {"i", "we", "you", "he", "she", "they"};
  static const std::unordered_set<std::string_view> auxiliaries = {"do",  "does", "did",  "am",  "is", "are",
                                                                   "was", "were", "have", "has", "had"};
  static const std::unordered_set<std::string_view> modals = {"can",   "could", "will",  "would", "should",
                                                              "shall", "may",   "might", "must"};
  for (std::size_t i = 0; i + 1 < tokens.size() && i < 3; ++i) {
    if (modals.count(tokens[i].word)) return false;
    if (auxiliaries.count(tokens[i].word)) return pronouns.count(tokens[i + 1].word) > 0;
  }
  return false;
}

}  // namespace

bool is_presence_question(std::string_view utf8) { return opens_a_presence_question(text::tokenise(utf8)); }

bool asked_by_a_pronoun(std::string_view utf8) { return pronoun_follows_the_auxiliary(text::tokenise(utf8)); }

bool is_frame_word(std::string_view word) {
  // What a question asks with: the answer's kind ("what kind of ..."), how it is named, how long
  // or how often, and when relative to something else; and the auxiliaries that become words.
  static const std::unordered_set<std::string_view> words = {
      "kind", "kinds", "type", "types", "sort", "sorts", "thing", "things", "stuff", "anything", "something",
      "everything", "nothing", "lot", "lots", "way", "ways", "time", "times", "one", "ones", "name", "names", "called",
      "named", "long", "much", "many", "often", "far", "again", "before", "after", "will", "would", "late",
      "originally", "finally", "soon", "now", "happened", "happen", "happens",
      // when something began or changed is asked of the thing itself: "when did Ana start guitar
      // lessons?" is answered by "has taken guitar lessons since mid-August" (conversations dev)
      "start", "started", "begin", "began", "become", "became", "change", "changed", "end", "ended"};
  return words.count(word) > 0;
}

Question read_question(std::string_view utf8, std::vector<QueryTerm> terms) {
  const auto tokens = text::tokenise(utf8);
  Question question{std::move(terms), opens_a_presence_question(tokens)};
  static const std::unordered_set<std::string_view> asking = {"what", "what's", "which", "whose"};
  static const std::unordered_set<std::string_view> passed_over = {
      "kind", "kinds", "sort", "sorts", "type", "types", "of", "the", "a", "an", "two", "three", "four", "five"};
  static const std::unordered_set<std::string_view> auxiliaries = {
      "is",  "are",   "was",  "were",  "do",     "does", "did",   "has",  "have", "had",
      "can", "could", "will", "would", "should", "may",  "might", "must", "'s"};
  std::unordered_set<std::string> answer_types;  // "what INSTRUMENT": the note names a guitar, not an instrument
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    std::size_t next = i + 1;
    if (tokens[i].word == "how" && next < tokens.size() &&
        (tokens[next].word == "many" || tokens[next].word == "much")) {
      ++next;
    } else if (!asking.count(tokens[i].word)) {
      continue;
    }
    while (next < tokens.size() && passed_over.count(tokens[next].word)) ++next;
    if (next < tokens.size() && !auxiliaries.count(tokens[next].word)) answer_types.insert(stem(tokens[next].word));
  }
  for (auto& term : question.terms) {
    if ((term.role == Role::kTopic || term.role == Role::kEvent) &&
        (is_frame_word(term.name) || answer_types.count(stem(term.name)))) {
      term.role = Role::kFrame;
    }
  }
  if (question.presence) mark_verb_and_circumstances(utf8, tokens, question.terms);
  return question;
}

std::string stem(std::string_view word) {
  std::string w(text::irregular_base(word));
  const auto ends = [&](std::string_view suffix) {
    return w.size() >= suffix.size() && w.compare(w.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  const auto has_vowel = [](std::string_view part) { return part.find_first_of("aeiouy") != std::string_view::npos; };
  const auto base = [&](std::size_t cut) { return std::string_view(w).substr(0, w.size() - cut); };
  if (w.size() > 4 && (ends("ies") || ends("ied"))) {
    w = std::string(base(3)) + "y";  // "studies", "studied" -> "study"
  } else if (w.size() >= 6 && ends("ing") && has_vowel(base(3))) {
    w = base(3);
  } else if (w.size() >= 5 && ends("ed") && has_vowel(base(2))) {
    w = base(2);
  } else if (w.size() > 4 && ends("es") &&
             (ends("sses") || ends("xes") || ends("zes") || ends("ches") || ends("shes"))) {
    w = base(2);
  } else if (w.size() > 3 && ends("s") && !ends("ss") && !ends("us") && !ends("is")) {
    w = base(1);
  }
  // the noun of a verb: "dependency" / "depend", "preference" / "prefer", "payment" / "pay"
  // (agent memory dev: "has no dependency on Atlas" answers "does Beacon depend on Atlas?")
  for (const std::string_view suffix : {"ency", "ence", "ance", "ment"}) {
    if (w.size() >= suffix.size() + 3 && ends(suffix)) {
      w = base(suffix.size());
      break;
    }
  }
  // "submitt" -> "submit", "runn" -> "run"; "move" / "mov(ing)" -> "mov"
  const auto vowel = [](char c) { return c == 'a' || c == 'e' || c == 'i' || c == 'o' || c == 'u'; };
  if (w.size() > 3 && w.back() == w[w.size() - 2] && !vowel(w.back()) && w.back() != 'l' && w.back() != 's' &&
      w.back() != 'z') {
    w.pop_back();
  }
  if (w.size() > 3 && w.back() == 'e') w.pop_back();
  return w;
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
