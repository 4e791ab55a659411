// What a text note says about the concepts of its namespace (the lexical pathway): the words an
// open vocabulary makes concepts of, and the note's mentions, polarities and lexical states. A new
// item's record is built by them (new_item_record.hpp), and the library merges a stored record by
// them (domain/evidence.py apply_text), around the one parse (text_parse.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "polarmem/text_parse.hpp"
#include "polarmem/vocabulary.hpp"

namespace polarmem::text {

// The content words of `utf8` an open vocabulary makes concepts of, as concept names, in order of
// first mention, each once: the words the parse reports as naming no concept (with no vocabulary),
// less the poor concepts (is_poor_concept) unless written as a two-letter name ("writes Go"). A
// proper name (Mention::subject) is named as written, lower case, never singularised ("Atlas" ->
// "atlas"), as is a capitalised word ending like a name ("Redis", "Pandas") wherever it stands;
// every other word by its normal form ("dogs" -> "dog").
std::vector<std::string> content_terms(std::string_view utf8, const TriggerTable& triggers);

struct TextEvidence {
  std::vector<std::uint32_t> mentions;  // every concept the text mentions, ascending, each once
  // (concept, negated) per concept the text states, in order of first mention (polarity()).
  std::vector<std::pair<std::uint32_t, bool>> polarity;
};

// The mentions and polarities of `utf8` by `vocabulary`. `word_mentions` (an open vocabulary): each
// word of a name of several words that is a concept of its own is mentioned too, with the
// mention's polarity ("no green tea" says NOT_HAS "green tea" and NOT_HAS "tea").
TextEvidence text_evidence(std::string_view utf8, const Vocabulary& vocabulary, const TriggerTable& triggers,
                           bool word_mentions);

// The lexical pathway's states from a reading: (concept, negated) for each concept its polarity
// states, in that order, unless `decided` holds it (evidence other than the lexical pathway's, an
// engine's or the client's, decides that concept) or, with `only`, `only` does not (a concept
// declared after the item was stored: the library's concept backfill). A concept the text never
// mentions gets no state.
std::vector<std::pair<std::uint32_t, bool>> lexical_states(const TextEvidence& evidence,
                                                           const std::vector<std::uint32_t>& decided,
                                                           const std::vector<std::uint32_t>* only);

}  // namespace polarmem::text
