#include "polarmem/text_evidence.hpp"

#include <algorithm>
#include <unordered_set>

namespace polarmem::text {

namespace {

bool ends_like_a_name(const std::string& word) {
  if (word.size() < 2) return false;
  const std::string_view tail(word.data() + word.size() - 2, 2);
  return tail == "as" || tail == "is" || tail == "us";
}

bool all_letters(const std::string& word) {
  return !word.empty() &&
         std::all_of(word.begin(), word.end(), [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); });
}

}  // namespace

std::vector<std::string> content_terms(std::string_view utf8, const TriggerTable& triggers) {
  static const Vocabulary kNoConcepts;
  const ParsedText parsed = parse(utf8, kNoConcepts, triggers);
  // A term's first character as written, by its code-point offset (the parse's tokens are ASCII).
  const std::vector<Token>& tokens = parsed.tokens;
  std::vector<std::string> out;
  std::unordered_set<std::string> seen;
  std::size_t at = 0;
  for (const auto& term : parsed.unknown) {
    if (is_poor_concept(term.word) && !(term.subject && term.word.size() == 2)) continue;
    while (at < tokens.size() && tokens[at].start < term.start) ++at;
    const char first = at < tokens.size() && tokens[at].start == term.start ? utf8[tokens[at].byte] : '\0';
    const bool capitalised = first >= 'A' && first <= 'Z';
    std::string name =
        term.subject || (capitalised && ends_like_a_name(term.word)) ? term.word : normalise_lowered(term.word);
    if (seen.insert(name).second) out.push_back(std::move(name));
  }
  return out;
}

TextEvidence text_evidence(std::string_view utf8, const Vocabulary& vocabulary, const TriggerTable& triggers,
                           bool word_mentions) {
  ParsedText parsed = parse(utf8, vocabulary, triggers);
  if (word_mentions) {
    const std::vector<Token>& tokens = parsed.tokens;
    std::vector<Mention> mentions;
    for (const auto& m : parsed.mentions) {
      mentions.push_back(m);
      const auto first = std::lower_bound(tokens.begin(), tokens.end(), m.start,
                                          [](const Token& t, std::size_t start) { return t.start < start; });
      std::vector<const Token*> words;
      for (auto t = first; t != tokens.end() && t->end <= m.end; ++t) words.push_back(&*t);
      if (words.size() < 2) continue;
      for (const Token* word : words) {
        if (!all_letters(word->word)) continue;
        const auto id = vocabulary.lookup(word->word);
        if (!id || *id == m.concept_id) continue;
        Mention part = m;
        part.concept_id = *id;
        part.start = word->start;
        part.end = word->end;
        part.subject = false;
        mentions.push_back(std::move(part));
      }
    }
    parsed.mentions = std::move(mentions);
  }
  TextEvidence evidence;
  for (const auto& m : parsed.mentions) evidence.mentions.push_back(m.concept_id);
  std::sort(evidence.mentions.begin(), evidence.mentions.end());
  evidence.mentions.erase(std::unique(evidence.mentions.begin(), evidence.mentions.end()), evidence.mentions.end());
  evidence.polarity = polarity(parsed.mentions);
  return evidence;
}

std::vector<std::pair<std::uint32_t, bool>> lexical_states(const TextEvidence& evidence,
                                                           const std::vector<std::uint32_t>& decided,
                                                           const std::vector<std::uint32_t>* only) {
  const auto holds = [](const std::vector<std::uint32_t>& ids, std::uint32_t id) {
    return std::find(ids.begin(), ids.end(), id) != ids.end();  // a note's few concepts: a scan
  };
  std::vector<std::pair<std::uint32_t, bool>> states;
  for (const auto& [concept_id, negated] : evidence.polarity) {
    if (holds(decided, concept_id) || (only != nullptr && !holds(*only, concept_id))) continue;
    states.emplace_back(concept_id, negated);
  }
  return states;
}

}  // namespace polarmem::text
