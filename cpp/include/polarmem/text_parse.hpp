// The textual pathway's parse: vocabulary mentions of a text with their polarity (negation cues
// and their scope, NegEx / ConText style), and the content words that name no concept. The rules
// are documented where the library exposes them (polarmem_server/domain/text.py); this is their
// one implementation, so the library and the compiled front read a text the same way.
//
// Offsets are code points of the UTF-8 text (what a Python str index counts). Words are ASCII:
// a token is a run of ASCII letters and digits, joined by ' (or U+2019), / or -, or one of
// . , ; : ! ? — every other character separates tokens.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace polarmem::text {

struct Token {
  std::string word;  // lower case, U+2019 written as '
  std::size_t start = 0, end = 0;  // code points
  std::size_t byte = 0;            // where it starts in the UTF-8 text
};

// The tokens of `utf8` (see the file comment).
std::vector<Token> tokenise(std::string_view utf8);

// Singular of one lower-case English word (simple rules and a short irregular list).
std::string singular(std::string_view word);
// A concept name's key from an already lower-cased name: its [a-z0-9] words (joined by ' or -),
// the last one singular, joined by one space ("wine  glasses" -> "wine glass"); "" without any.
std::string normalise_lowered(std::string_view lowered);
// A concept name's key (the library's lookup key, domain/vocabulary.py normalise): the name lower-
// cased as Python's str.lower() does, then normalise_lowered. Its words are ASCII, and of all
// characters beyond ASCII only U+0130 (to "i" and a combining dot) and U+212A (to "k") lower to
// ASCII: every other one stays a separator whatever it lowers to, so no case table is needed.
std::string normalise_name(std::string_view utf8);

// Cue phrases by kind, each phrase its words joined by one space (lower case).
struct TriggerPhrases {
  std::vector<std::string> pre, post, pseudo, terminators, resolution;
  std::optional<std::size_t> window;  // words a pre-cue reaches; none: to a terminator or clause end
  // Hedges ("might", "not sure whether", "thinking about"): what follows them in their clause is
  // said with no state (Mention::uncertain), a proper name excepted.
  std::vector<std::string> hedge = {};
};

class TriggerTable {
 public:
  enum class Kind { kPseudo, kPre, kPost, kBoth, kTerminator, kHedge };
  struct Match {
    Kind kind;
    std::size_t length;  // words
    std::string phrase;  // its words joined by one space
  };

  explicit TriggerTable(const TriggerPhrases& phrases);
  // The longest cue starting at words[i] ("no increase", a pseudo cue, over "no").
  std::optional<Match> match(const std::vector<Token>& tokens, std::size_t i) const;
  bool is_resolution(const std::string& phrase) const { return resolution_.count(phrase) != 0; }
  std::optional<std::size_t> window() const { return window_; }

 private:
  std::unordered_set<std::string> pre_, post_, pseudo_, terminators_, resolution_, hedge_;
  std::optional<std::size_t> window_;
  std::size_t longest_ = 1;
};

// A namespace's vocabulary (vocabulary.hpp): the parse reads its lookup keys.
class Vocabulary;
struct ParsedText;

struct Mention {
  std::uint32_t concept_id = 0;
  std::size_t start = 0, end = 0;
  bool negated = false;
  std::string cue;          // the negating cue, "" when affirmed
  bool resolution = false;  // negated by a cue that says the condition went away
  // Said with no state about the text's subject: a hedge ("might adopt a dog"), another person's
  // fact ("Maya's brother has a dog"), a negation inside a condition ("if she hadn't missed the
  // train") or a question's own event ("why couldn't she find her keys?"). polarity() skips it.
  bool uncertain = false;
  // A proper name: capitalised and not sentence-initial ("does Maya drink coffee"), a
  // capitalised possessive ("Maya's brother"), or "user": who a text is about, not its topic.
  bool subject = false;
  // Said with no state only because another person's clause says it ("Maya's brother has a
  // DOG"): the state it would have is that person's (others_states), never the text's.
  bool others = false;
};

// A content word that names no concept: letters (three or more, or two in capitals: "TV"), or
// letters joined by hyphens ("t-shirt"), not a stop word; a possessive stands for its owner
// ("the dog's bowl": "dog", as a mention's lookup reads it too).
struct UnknownTerm {
  std::string word;  // without a possessive's "'s"
  std::size_t start = 0, end = 0;
  bool negated = false;
  bool uncertain = false;  // as Mention::uncertain
  bool subject = false;    // as Mention::subject
};

// From `start` (code points) on, the text speaks of `actor`: a name as written, lower case ("maya";
// a relative, by the word and the name given, "wife clara" or "wife"), or "" where no one is named
// or several people act together.
struct ActorChange {
  std::size_t start = 0;
  std::string actor;
};

struct ParsedText {
  std::vector<Mention> mentions;
  std::vector<UnknownTerm> unknown;
  std::vector<std::pair<std::size_t, std::size_t>> negated_spans;  // cue + scope
  std::vector<Token> tokens;  // the text's tokens (tokenise), as the parse read them
  std::vector<ActorChange> actors;  // in text order
};

ParsedText parse(std::string_view utf8, const Vocabulary& vocabulary, const TriggerTable& triggers);

// Whom the text states each concept of: (concept, actor) for each concept whose every stated
// mention is said of one named actor ("Hugo's wife Clara teaches piano": teach and piano are
// Clara's, hugo and wife Hugo's; "Maya has a cat; Leo has a dog": cat is Maya's), and for each
// concept said with no state only, of whom its mentions are said ("dog": Leo's), so a reader sees
// who acts in the text. A concept said of no one named, or of several, is left out. The labels
// read it, never the states (answer_labels.hpp).
std::vector<std::pair<std::uint32_t, std::string>> concept_actors(const ParsedText& text);

// What the text states of another person only (Mention::others), with no state of its own: each
// such concept's polarity (as polarity() reads it) and of whom it is said ("Nadia's brother Karim
// plays hockey": hockey, affirmed, of "brother karim"). A concept said of several, or of no one
// named, is left out. The labels read it for a question about that person (answer_labels.hpp).
struct OthersState {
  std::uint32_t concept_id = 0;
  bool negated = false;
  std::string actor;
};
std::vector<OthersState> others_states(const ParsedText& text);

// One polarity per mentioned concept, in order of first mention (true: negated); a mention said
// with no state (Mention::uncertain) counts for nothing, so a concept with only such mentions
// has none. Affirmed if any
// mention is affirmed, unless a later mention is negated by a resolution cue ("fever ... fever
// resolved"); negated when every mention is. A later plain negation does not overturn an
// affirmation: the text says the condition was there.
std::vector<std::pair<std::uint32_t, bool>> polarity(const std::vector<Mention>& mentions);

// Whether a word never names a concept (function words, query scaffolding, quantities).
bool is_stopword(std::string_view word);
// A preposition of place, time or purpose ("at", "on", "in", "for", ...), as the parse reads one.
bool is_preposition(std::string_view word);
// A word for someone a text's subject is not: a relative, a friend, a colleague ("wife", "family").
bool is_relative(std::string_view word);
// The base of a common irregular past form ("ran" -> "run", "met" -> "meet"); any other word as
// it is.
std::string_view irregular_base(std::string_view word);

// Content words that make poor concepts (an open vocabulary does not learn them; a question's
// topics leave them out): verbs of having, liking and doing, and vague modifiers. A negated
// "drink" in "does not drink coffee" would put every note about drinks in conflict with "what
// does the user drink"; the object ("coffee") carries the polarity.
bool is_poor_concept(std::string_view word);

// The text with its negated spans (code points, as ParsedText::negated_spans) removed, for the
// semantic half of recall ("a bus without a street" -> "a bus"): whitespace runs made one space,
// no space before punctuation, no dangling "but" / "and" / ... at either end; "" when no content
// word is left ("no dogs").
std::string affirmative_part(std::string_view utf8, std::vector<std::pair<std::size_t, std::size_t>> spans);

}  // namespace polarmem::text
