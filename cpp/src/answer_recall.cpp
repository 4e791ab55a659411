// The agent's recall from a parsed question to the notes shown (answer_recall.hpp).
#include "polarmem/answer_recall.hpp"

#include <algorithm>
#include <cctype>
#include <unordered_map>
#include <utility>

#include "polarmem/hit_explanation.hpp"
#include "polarmem/text_parse.hpp"

namespace polarmem::answer {

namespace {

// A letter of a script the parse does not read: Latin-1 and Latin Extended letters are read by
// their ASCII part only, but Greek, Cyrillic, Armenian, Hebrew, Arabic, the Indic scripts, kana,
// CJK and Hangul have none. Punctuation, symbols and emoji are not letters.
bool unread_letter(char32_t c) {
  return (c >= 0x370 && c <= 0x3FF && c != 0x37E && c != 0x387) || (c >= 0x400 && c <= 0x1FFF) ||
         (c >= 0x3040 && c <= 0x30FF) || (c >= 0x3400 && c <= 0x9FFF) || (c >= 0xAC00 && c <= 0xD7AF) ||
         (c >= 0xF900 && c <= 0xFAFF);
}

// The question's words the parse cannot see: runs between ASCII spaces and punctuation with no
// ASCII letter and a letter of another script ("собака", "犬"). They ask something no note's
// concepts can hold, so a note must not be a verified answer without them.
std::vector<std::string> unread_words(std::string_view text) {
  std::vector<std::string> words;
  std::size_t i = 0;
  while (i < text.size()) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte < 0x80 && !std::isalnum(byte)) {
      ++i;
      continue;
    }
    const std::size_t start = i;
    bool ascii_letter = false, other_letter = false;
    while (i < text.size()) {
      const auto b = static_cast<unsigned char>(text[i]);
      if (b < 0x80) {
        if (!std::isalnum(b)) break;
        ascii_letter = ascii_letter || std::isalpha(b);
        ++i;
        continue;
      }
      // one UTF-8 sequence: its length from the lead byte, its code point from all of it
      const std::size_t length = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC0 ? 2 : 1;
      char32_t c = length == 1 ? 0 : b & (0x7F >> length);
      for (std::size_t j = 1; j < length && i + j < text.size(); ++j)
        c = (c << 6) | (static_cast<unsigned char>(text[i + j]) & 0x3F);
      other_letter = other_letter || unread_letter(c);
      i += length;
    }
    if (other_letter && !ascii_letter) {
      std::string word(text.substr(start, std::min(i, text.size()) - start));
      if (std::find(words.begin(), words.end(), word) == words.end()) words.push_back(std::move(word));
    }
  }
  return words;
}

bool contains(const std::vector<NamedConcept>& concepts, std::uint32_t id) {
  return std::any_of(concepts.begin(), concepts.end(), [id](const NamedConcept& c) { return c.id == id; });
}

// Appends (id, name, role) unless that pair is there already (a concept may be both forbidden
// and the question's own uncertain event: two terms).
void add_term(Terms& terms, std::int64_t id, const std::string& name, Role role) {
  for (std::size_t i = 0; i < terms.terms.size(); ++i) {
    if (terms.terms[i].role != role) continue;
    if (id >= 0 ? terms.ids[i] == id : terms.ids[i] < 0 && terms.terms[i].name == name) return;
  }
  terms.terms.push_back({name, role});
  terms.ids.push_back(id);
}

int tier_of(Label label) {
  if (is_verified_answer(label)) return 1;
  return label == Label::kRelated ? 0 : -1;
}

}  // namespace

Terms question_terms(const ParsedQuestion& question, bool asked_by_a_pronoun) {
  Terms terms;
  // The subject: the first proper name the parse marks among the required concepts ("does
  // Atlas use Kafka?": Atlas; Kafka is a topic); none where a pronoun asks ("do I use Slack?":
  // Slack is a topic; before round 47 it was the subject, and "I no longer use Slack" a
  // CONFLICT, shown last).
  std::int64_t subject = -1;
  for (const auto id : question.subjects) {
    if (!asked_by_a_pronoun && contains(question.required, id)) {
      subject = id;
      break;
    }
  }
  bool only_subjects = true;
  for (const auto& c : question.required) {
    const Role role = static_cast<std::int64_t>(c.id) == subject ? Role::kSubject : Role::kTopic;
    only_subjects = only_subjects && role == Role::kSubject;
    add_term(terms, c.id, c.name, role);
  }
  only_subjects = only_subjects && question.forbidden.empty();
  for (const auto& c : question.forbidden) add_term(terms, c.id, c.name, Role::kForbidden);
  // The question's own uncertain events are concepts too, after the forbidden.
  for (const auto& c : question.uncertain) {
    if (!contains(question.required, c.id)) add_term(terms, c.id, c.name, Role::kEvent);
  }
  Terms words;
  for (const auto& word : question.unknown) {
    if (!text::is_poor_concept(word)) add_term(words, -1, word, Role::kTopic);
  }
  if (words.terms.empty() && only_subjects) {
    // "does Jo drink?": the verb is all the question asks beyond the name; no note verifies it,
    // and "no verified evidence" names it.
    for (const auto& word : question.unknown) add_term(words, -1, word, Role::kTopic);
  }
  for (const auto& word : question.uncertain_words) {
    if (!text::is_poor_concept(word)) add_term(words, -1, word, Role::kEvent);
  }
  terms.terms.insert(terms.terms.end(), words.terms.begin(), words.terms.end());
  terms.ids.insert(terms.ids.end(), words.ids.begin(), words.ids.end());
  return terms;
}

std::vector<CandidateSearch> candidate_searches(const ParsedQuestion& question, const Terms& terms, std::size_t k) {
  std::vector<std::uint32_t> required, forbidden, subjects, topics;
  for (const auto& c : question.required) required.push_back(c.id);
  for (const auto& c : question.forbidden) forbidden.push_back(c.id);
  for (std::size_t i = 0; i < terms.terms.size(); ++i) {
    if (terms.ids[i] < 0) continue;
    const auto id = static_cast<std::uint32_t>(terms.ids[i]);
    if (terms.terms[i].role == Role::kSubject) subjects.push_back(id);
    if (terms.terms[i].role == Role::kTopic || terms.terms[i].role == Role::kEvent) topics.push_back(id);
  }
  // Plain similarity to the whole question, under the question's own constraints' tiers.
  std::vector<CandidateSearch> searches{{SearchMode::kOff, std::max(kSimilarCandidates, k), required, forbidden}};
  // Notes holding an asked topic, most similar first.
  if (!topics.empty()) searches.push_back({SearchMode::kHard, k, topics, {}});
  // Notes about the subject holding a topic or a forbidden concept as NOT_HAS: a "no", a constraint.
  std::vector<std::uint32_t> absent = topics;
  absent.insert(absent.end(), forbidden.begin(), forbidden.end());
  for (const auto id : absent) searches.push_back({SearchMode::kHard, k, subjects, {id}, true});
  return searches;
}

Recalled answer_recall(std::string_view question_utf8, const ParsedQuestion& question, std::size_t k,
                       const RunSearch& run, const ReadNotes& read_notes, const AnswerRule& rule,
                       const ReadNoteActors& note_actors) {
  // Words in a script the parse does not read are asked too: "есть ли у Ana собака?" must not
  // make a note about Ana a verified answer.
  ParsedQuestion with_unread = question;
  for (auto& word : unread_words(question_utf8)) with_unread.unknown.push_back(std::move(word));
  const Terms terms = question_terms(with_unread, asked_by_a_pronoun(question_utf8));
  Recalled recalled;
  // Each candidate once, where it was first found, with its last sighting's similarity (every
  // search scores the same vector, so they agree wherever a backend's scores are exact).
  std::vector<std::string> ids;
  std::vector<float> similarity;
  std::unordered_map<std::string, std::size_t> seen;
  bool first = true;
  for (const auto& search : candidate_searches(with_unread, terms, k)) {
    Searched found = run(search);
    if (first) recalled.tier_counts = found.tier_counts;
    first = false;
    for (auto& [id, score] : found.hits) {
      const auto [at, added] = seen.emplace(id, ids.size());
      if (!added) {
        similarity[at->second] = score;
        continue;
      }
      ids.push_back(std::move(id));
      similarity.push_back(score);
    }
  }
  const std::vector<Note> notes = read_notes(ids);
  std::vector<Candidate> candidates;
  std::vector<std::size_t> candidate_of;  // index into ids
  for (std::size_t i = 0; i < ids.size() && i < notes.size(); ++i) {
    if (!notes[i].found) continue;  // forgotten since the search
    candidates.push_back({ids[i], notes[i].stated, similarity[i], notes[i].created_ms});
    candidate_of.push_back(i);
  }
  ReadActors actors;
  if (note_actors) actors = [&](std::size_t c) { return note_actors(candidate_of[c]); };
  Answer answer = answer_question(read_question(question_utf8, terms.terms), candidates, k, rule, actors);
  recalled.summary = std::move(answer.summary);

  // Each hit's explanation (as in every other mode): the terms it asks for first, then those it forbids.
  std::vector<std::size_t> order(terms.terms.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return terms.terms[a].role != Role::kForbidden && terms.terms[b].role == Role::kForbidden;
  });
  std::vector<std::string> names;
  std::size_t asked = 0;
  for (const auto i : order) {
    names.push_back(terms.terms[i].name);
    asked += terms.terms[i].role != Role::kForbidden;
  }
  for (auto& hit : answer.hits) {
    std::vector<explain::Cited> cited(order.size());
    for (std::size_t j = 0; j < order.size(); ++j) cited[j].state = hit.states[order[j]];
    const int tier = tier_of(hit.label);
    const explain::Explanation why = explain::explain_hit(tier, asked, names, cited, 0.0, 0.0, false);
    Shown shown;
    shown.candidate = candidate_of[hit.candidate];
    shown.id = candidates[hit.candidate].id;
    shown.similarity = candidates[hit.candidate].similarity;
    shown.tier = tier;
    shown.label = hit.label;
    shown.answer = std::move(hit.status);
    shown.superseded_by = std::move(hit.superseded_by);
    for (const auto i : why.entailed) shown.entailed_by.push_back(names[i]);
    for (const auto i : why.conflicted) shown.conflicted_by.push_back(names[i]);
    shown.absence_verified = why.absence_verified;
    recalled.hits.push_back(std::move(shown));
  }
  return recalled;
}

std::string headed_context(const std::string& summary, const std::string& context) {
  if (summary.empty()) return context;
  std::string out = "(" + summary + ")\n" + context;
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

}  // namespace polarmem::answer
