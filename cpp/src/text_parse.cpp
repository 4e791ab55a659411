#include "polarmem/text_parse.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <mutex>
#include <shared_mutex>

#include "polarmem/utf8.hpp"
#include "polarmem/vocabulary.hpp"

namespace polarmem::text {

namespace {

using WordSet = std::unordered_set<std::string_view>;

WordSet words_of(std::string_view list) {
  WordSet out;
  std::size_t i = 0;
  while (i < list.size()) {
    while (i < list.size() && list[i] == ' ') ++i;
    std::size_t j = i;
    while (j < list.size() && list[j] != ' ') ++j;
    if (j > i) out.insert(list.substr(i, j - i));
    i = j;
  }
  return out;
}

// Words that never name a concept: function words, query scaffolding and quantities.
const WordSet& stopwords() {
  static const WordSet words = words_of(
      "a an the this that these those there here it its is are was were be been being am do does did has have had "
      "having of in on at to for from by with without about above below under over into onto near next beside between "
      "behind and or but nor so yet if then than as while when where which who whom whose what why how all any "
      "anything "
      "anyone some something someone every each few many much more most other another such only own same very just "
      "also "
      "i me my we our you your he him his she her they them their one two three four five six seven eight nine ten "
      "show find give get want need look looking like photo photos picture pictures image images scene scenes view "
      "shot shots please me us containing contain contains containing including include includes includes visible "
      "some several lots lot kind sort type way thing things stuff piece pieces part parts side sides front back top "
      "bottom left right middle center small big large little tall short old new young other group bunch couple pair "
      "anywhere somewhere everywhere nowhere elsewhere");
  return words;
}

// A comma followed by one of these starts a new clause, which ends a negation's scope ("never
// eats meat, prefers fish"); a comma before a noun continues a negated list ("no fever, chills").
const WordSet& clause_openers() {
  static const WordSet words = words_of(
      "i he she they we you it user patient "
      "is are was were has have had does did do can could will would should may might must "
      "prefers prefer preferred likes like liked loves love loved wants want wanted enjoys enjoy enjoyed "
      "drinks drink drank eats eat ate uses use used takes take took needs need needed gets get got "
      "owns own owned keeps keep kept goes go went plays play played reports reported says said "
      "so because since then otherwise extra");
  return words;
}

// A comma before one of these starts a new clause ("no fever, mild cough") unless the list goes on
// to an "or" / "nor" ("no effusion, large pneumothorax, or consolidation" negates all three: issue
// 52's NegEx / OpenI regression).
const WordSet& modifiers() {
  static const WordSet words = words_of("small large mild moderate severe trace minimal slight persistent");
  return words;
}

const WordSet& comma_breakers() {
  static const WordSet words = words_of("and with which");
  return words;
}

const WordSet& contrast_words() {
  static const WordSet words = words_of("but however although though yet whereas while");
  return words;
}

// A preposition after a negated term starts what the query wants, not more of what it excludes.
const WordSet& prepositions() {
  static const WordSet words = words_of(
      "on in at near by under beside behind inside outside over along across through around "
      "against into onto for after before during past to");
  return words;
}

// What a subject does or is, right after a negated phrase, ends the negation there ("a man
// without a shirt riding a surfboard", "a kid without shoes is holding a racket"): the verb's
// object is affirmed. Chosen on the dev sets (docs/quality.md §9): on the dev captions of COCO
// val2014, every NOT_HAS the parse read past such a verb was on an object the image has.
const WordSet& auxiliaries() {
  static const WordSet words =
      words_of("is are was were am has have had does did will would can could should may might must");
  return words;
}

// Common words ending in -ing that are nouns, not participles ("no ceiling", "no clothing on it"):
// a lexical list, not a tuned one; a participle must also act on something (starts_predicate).
const WordSet& ing_nouns() {
  static const WordSet words = words_of(
      "thing things nothing something anything everything ceiling building clothing morning evening during "
      "spring string swing railing icing frosting topping pudding wedding sibling awning lightning stuffing "
      "seasoning dressing dumpling earring bedding offspring");
  return words;
}

const WordSet& determiners() {
  static const WordSet words = words_of("a an the his her their its my your our this that these those some");
  return words;
}

// Terminators that start a new clause, as a contrast word does: what a hedge or another person
// reached ends there ("no running until the ankle heals").
const WordSet& clause_terminators() {
  static const WordSet words = words_of("until till because unless");
  return words;
}

// An exception cue ends an open negation scope instead of opening its own.
const WordSet& exception_cues() {
  static const WordSet phrases{"except", "except for", "excluding", "other than"};
  return phrases;
}

// Words that name no concept though they are content words (issue 52): light verbs ("Maya gave up
// coffee in May" is about coffee, not about "gave"), months, weekdays and dates, number words.
// Lexical lists, not tuned ones; "may" is here as the month and as the modal.
const WordSet& non_concepts() {
  static const WordSet words = words_of(
      "give gives gave given giving gets got gotten getting take takes took taken taking make makes made making "
      "goes went gone going done doing puts putting lets "
      "january february march april may june july august september october november december "
      "jan feb mar apr jun jul aug sep sept oct nov dec "
      "monday tuesday wednesday thursday friday saturday sunday "
      "mondays tuesdays wednesdays thursdays fridays saturdays sundays "
      "today tomorrow yesterday tonight ago now anymore would could should must shall "
      "eleven twelve thirteen fifteen twenty thirty forty fifty hundred thousand million dozen");
  return words;
}

// A time phrase inside a negation's scope says when, not what is absent: "Ana sold her car last
// year" says nothing against a year, "Ben quit smoking two years ago" nothing against years
// (round 44's QA through the MCP SDK). A determiner of time before a stretch of time, a month or a
// weekday ("last year", "this weekend", "next Monday"), or a stretch of time before "ago"
// ("two years ago": the number is a stop word). Lexical lists, not tuned ones.
const WordSet& time_nouns() {
  static const WordSet words = words_of(
      "year years month months week weeks weekend weekends day days night nights morning mornings afternoon "
      "afternoons evening evenings summer summers winter winters spring autumn fall season seasons decade decades "
      "century hour hours minute minutes semester quarter time");
  return words;
}

std::size_t time_phrase_end(const std::vector<Token>& toks, std::size_t at) {
  static const WordSet determiners_of_time = words_of("last next this past previous every each coming");
  if (at + 1 >= toks.size()) return at;
  const std::string& word = toks[at].word;
  const std::string& next = toks[at + 1].word;
  // non_concepts: the months and weekdays ("last May", "next Monday")
  if (determiners_of_time.count(word) && (time_nouns().count(next) || non_concepts().count(next))) return at + 2;
  if (time_nouns().count(word) && (next == "ago" || next == "earlier" || next == "before")) return at + 2;
  return at;
}

const WordSet& copulas() {
  static const WordSet words = words_of("is are was were");
  return words;
}

// Relatives and other people a note's subject is not: "Maya's brother has a dog" says nothing
// about Maya and a dog (experiencer, as in ConText).
const WordSet& other_people() {
  static const WordSet words = words_of(
      "brother brothers sister sisters mother mom mum father dad dads parents parent wife husband partner "
      "girlfriend boyfriend son sons daughter daughters kid kids child children baby cousin cousins uncle aunt "
      "grandmother grandma grandfather grandpa friend friends roommate flatmate neighbour neighbor neighbours "
      "neighbors colleague colleagues coworker coworkers boss manager team family fiance fiancee");
  return words;
}

// A word that says which relative, between the owner and the relative: "Nadia's twin sister",
// "his older brother", "her best friend".
const WordSet& relative_modifiers() {
  static const WordSet words =
      words_of("twin older younger elder eldest oldest youngest little big baby step half best new ex late");
  return words;
}

// What the other person has, is, likes, needs or does for a living: "Maya's brother has a dog",
// "her kids share a room", "his sister works for Siemens", "Priya and Dev's mother needs a hip
// replacement" (conversations dev: it was VERIFIED for "when did Priya have her hip
// replacement?"); not what they do to the subject's things ("the user's boss approved the
// budget": agent notes dev).
const WordSet& relative_states() {
  static const WordSet words = words_of(
      "has have had is are was were owns own owned likes like loves love prefers prefer keeps keep drinks drink eats "
      "eat plays play uses use shares share lives live works work worked studies study studied needs need needed "
      "doesn't don't didn't isn't aren't wasn't never also always");
  return words;
}

const WordSet& frequency_adverbs() {
  static const WordSet words = words_of("rarely seldom often always usually sometimes occasionally also still");
  return words;
}

const WordSet& possessive_pronouns() {
  static const WordSet words = words_of("his her their my our your");
  return words;
}

// Words of a subject before a past-habit verb cue ("Maya used to run", "he quit smoking").
const WordSet& personal_pronouns() {
  static const WordSet words = words_of("i he she they we you user also once always");
  return words;
}

// Past-habit verbs that are cues only as a subject's transitive verb: "User quit smoking", not
// "a stopped train" or "a bus stopped at the light" (COCO dev captions).
const WordSet& habit_verbs() {
  static const WordSet words = words_of(
      "stopped quit quits cancelled canceled cancels sold dropped cancel lost replaced traded swapped exchanged "
      "forgot");
  return words;
}

// Preference verbs that are cues ("avoids caffeine", "hates cilantro") unless a determiner makes
// them nouns.
const WordSet& preference_verbs() {
  static const WordSet words = words_of("avoids avoid avoided avoiding dislikes dislike disliked hates hate hated");
  return words;
}

// Preferences against ("allergic to", "avoids", "dislikes", "hates", "intolerant to", "steers
// clear of", "stays away from"): negated, they say nothing of their object ("is not allergic to
// milk"). Matched on the cue's first word, or its second after "is".
bool against_preference(std::string_view phrase) {
  static const WordSet words = words_of(
      "allergic avoids avoid avoided avoiding dislikes dislike disliked hates hate hated intolerant steers stays");
  if (phrase.rfind("is ", 0) == 0) phrase.remove_prefix(3);
  return words.count(phrase.substr(0, phrase.find(' '))) != 0;
}

// A subordinate condition: a negation inside it is no assertion ("if she hadn't missed the train").
const WordSet& conditions() {
  static const WordSet words = words_of("if when whenever unless whether");
  return words;
}

const WordSet& question_words() {
  static const WordSet words = words_of("why what when how where who which");
  return words;
}

// Verbs whose preposition names where or for what they act, the thing a question about them asks:
// "works at Google", "lives in Paris", "pages for warnings", "runs on AWS" (round 47's MCP QA:
// "used to run on AWS before the move to GCP" denied running, so answered "does Atlas run on
// GCP?" NO). A lexical list, not a tuned one.
const WordSet& place_verbs() {
  static const WordSet words = words_of(
      "work works worked working live lives lived living study studies studied studying teach teaches taught "
      "teaching stay stays stayed staying volunteer volunteers volunteered volunteering belong belongs belonged "
      "page pages paged run runs ran running");
  return words;
}

// A loss's cues (negation.py's ended cues of losing) and the verbs that take a loss back: "Ivan
// lost his wallet in Berlin, but the police found it" (round 46's QA: ANSWERS NO for "does Ivan have
// his wallet?"). Whether the thing is back with its owner is not said, so it keeps no state.
const WordSet& loss_cues() {
  static const WordSet phrases{"lost",       "forgot",          "was stolen",   "were stolen",
                               "got stolen", "has been stolen", "went missing", "ran away"};
  return phrases;
}
const WordSet& recovery_verbs() {
  static const WordSet words = words_of("found recovered retrieved returned");
  return words;
}

// Words of access whose preposition names what or where a negated copula denies: "is not exposed
// to the public internet" (round 46's QA: VERIFIED for "is the warehouse public?"), "isn't
// available in Canada". A lexical list, not a tuned one.
const WordSet& access_words() {
  static const WordSet words = words_of("exposed available accessible reachable visible");
  return words;
}

// The cues that negate the verb right after them ("doesn't work", "no longer works", "used to
// live", "stopped working"), not a copula's complement ("isn't happy with") or a noun ("no dogs").
const WordSet& verb_first_cues() {
  static const WordSet phrases{"doesn't",   "does not", "don't",   "do not",  "didn't", "did not",
                               "no longer", "never",    "used to", "stopped", "quit"};
  return phrases;
}

// A negation cue on a verb (what a relative clause's "that do not run" or a question's "couldn't" is).
const WordSet& verb_negations() {
  static const WordSet words = words_of(
      "not never cannot isn't aren't wasn't weren't doesn't don't didn't hasn't haven't hadn't won't wouldn't "
      "can't couldn't shouldn't");
  return words;
}

// The prepositions after which a past habit ("used to") still names what ended with it.
const WordSet& habit_prepositions() {
  static const WordSet words = words_of("in by on with");
  return words;
}

// What one is allergic or intolerant to follows these, or stands right before them.
const WordSet& allergy_words() {
  static const WordSet words = words_of("allergy allergies intolerance intolerances");
  return words;
}

// Words before "free" that make it no cue ("felt free", "is free", "for free").
const WordSet& free_verbs() {
  static const WordSet words = words_of("feel feels felt feeling set sets break broke broken roam roams born");
  return words;
}

bool is_clause_end(std::string_view word) {
  return word == "." || word == ";" || word == ":" || word == "!" || word == "?";
}

bool ascii_alnum(unsigned char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }

bool all_letters(std::string_view word) {
  return !word.empty() && std::all_of(word.begin(), word.end(), [](unsigned char c) { return c >= 'a' && c <= 'z'; });
}

// A name made of letters and digits that starts with a letter, its parts perhaps joined by
// hyphens: "IPv6", "EC2", "S3", "PS5", "B12", "COVID-19", "GPT-4" (the MCP QA of round 47: "does
// not support IPv6" was NOT_HAS support alone, and so answered "does Atlas support OAuth?" NO).
// One that starts with a digit is a quantity or an ordinal ("16gb", "10am", "1990s", "2nd") and
// stays out.
bool letters_and_digits(std::string_view word) {
  const auto letter = [](unsigned char c) { return c >= 'a' && c <= 'z'; };
  const auto digit = [](unsigned char c) { return c >= '0' && c <= '9'; };
  return word.size() >= 2 && letter(static_cast<unsigned char>(word[0])) &&
         std::any_of(word.begin(), word.end(), [&](unsigned char c) { return digit(c); }) &&
         std::all_of(word.begin(), word.end(), [&](unsigned char c) { return letter(c) || digit(c) || c == '-'; });
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// The word a possessive or a contracted "is" belongs to: "dog's" -> "dog", "children's" ->
// "children", "it's" -> "it"; any other word as it is. (The tokeniser keeps "'s" on its word, so
// that a name written with one, "alzheimer's disease", still matches as written.)
std::string_view without_possessive(std::string_view word) {
  return word.size() > 2 && ends_with(word, "'s") ? word.substr(0, word.size() - 2) : word;
}

// Letters joined by hyphens, each part letters only: "t-shirt", "x-ray", "black-and-white".
bool hyphenated_letters(std::string_view word) {
  if (word.find('-') == std::string_view::npos) return false;
  std::size_t start = 0;
  while (true) {
    const std::size_t hyphen = word.find('-', start);
    if (!all_letters(word.substr(start, hyphen - start))) return false;
    if (hyphen == std::string_view::npos) return true;
    start = hyphen + 1;
  }
}

// What a word of the form "<letters>-free" says is absent ("pain-free" -> "pain"); "" otherwise.
std::string_view free_of(std::string_view word) {
  if (!ends_with(word, "-free") || word.size() == 5) return {};
  const std::string_view absent = word.substr(0, word.size() - 5);
  return all_letters(absent) || hyphenated_letters(absent) ? absent : std::string_view{};
}

bool participle(std::string_view word) {
  return word.size() >= 5 && ends_with(word, "ing") && all_letters(word) && !ing_nouns().count(word);
}

// A comma before a clause opener ("never eats meat, prefers fish"), a determiner (", a chair
// sitting outside", ", this toilet is ...") or a participle with an object or a place (", reading
// a newspaper") starts a new clause, which ends a negation's scope; before a bare noun or
// participle it continues the list a cue covers ("no fever, chills", "denies nausea, vomiting").
bool comma_starts_clause(const std::vector<Token>& toks, std::size_t comma) {
  if (comma + 1 >= toks.size()) return false;
  const std::string& next = toks[comma + 1].word;
  if (clause_openers().count(next) || determiners().count(next)) return true;
  if (modifiers().count(next)) {
    for (std::size_t k = comma + 2; k < toks.size() && !is_clause_end(toks[k].word); ++k) {
      if (toks[k].word == "or" || toks[k].word == "nor") return false;  // a negated list goes on
    }
    return true;
  }
  if (comma + 2 >= toks.size() || !participle(next)) return false;
  const std::string& after = toks[comma + 2].word;
  return determiners().count(after) || prepositions().count(after);
}

using ::polarmem::utf8::next_char;

// Whether the "and" at `and_at` opens a new predicate of the same subject: "and now ...", "and then
// ...", or a word that is no article, possessive or stop word followed by an article or a possessive
// ("and bought a Corolla"; not "and the Vespa", "and dairy products").
bool predicate_after_and(const std::vector<Token>& toks, std::size_t and_at) {
  const std::size_t next = and_at + 1;
  if (next >= toks.size()) return false;
  const std::string& word = toks[next].word;
  if (word == "now" || word == "then") return true;
  return next + 1 < toks.size() && all_letters(word) && !determiners().count(word) && !is_stopword(word) &&
         determiners().count(toks[next + 1].word);
}

// The verb of `verbs` whose object stands between it and the token at `at`: an opener of
// `openers` (a possessive, an article), then one to three words ("migrated ITS QUEUE from", "gave
// HIS OLD LAPTOP to"), if any.
std::optional<std::size_t> verb_with_object_before(const std::vector<Token>& toks, std::size_t at,
                                                   std::size_t clause_start, const WordSet& verbs,
                                                   const WordSet& openers) {
  for (std::size_t words = 2; words <= 4; ++words) {
    if (at < clause_start + words + 1) break;
    const std::size_t verb = at - words - 1;
    if (verbs.count(toks[verb].word) && openers.count(toks[verb + 1].word)) {
      bool plain = true;  // the object's words: no clause end, no comma
      for (std::size_t k = verb + 2; k < at; ++k) plain = plain && all_letters(toks[k].word);
      if (plain) return verb;
    }
  }
  return std::nullopt;
}

std::string join(const std::vector<std::string_view>& words, std::size_t from, std::size_t to) {
  std::string out;
  for (std::size_t k = from; k < to; ++k) {
    if (k > from) out.push_back(' ');
    out.append(words[k]);
  }
  return out;
}

std::size_t word_count(std::string_view key) {
  return static_cast<std::size_t>(std::count(key.begin(), key.end(), ' ')) + 1;
}

}  // namespace

bool is_stopword(std::string_view word) { return stopwords().count(word) != 0; }

bool is_preposition(std::string_view word) { return prepositions().count(word) != 0; }

bool is_relative(std::string_view word) { return other_people().count(word) != 0; }

// Common irregular past forms, by their base: "ran" holds "run" (conversations dev: "When did
// Priya run the half marathon?" over "Priya ran the Leeds half marathon").
std::string_view irregular_base(std::string_view word) {
  static const std::unordered_map<std::string_view, std::string_view> bases = {
      {"ran", "run"},       {"went", "go"},       {"gone", "go"},      {"sang", "sing"},    {"sung", "sing"},
      {"drove", "drive"},   {"driven", "drive"},  {"ate", "eat"},      {"eaten", "eat"},    {"took", "take"},
      {"taken", "take"},    {"gave", "give"},     {"given", "give"},   {"met", "meet"},     {"bought", "buy"},
      {"wrote", "write"},   {"written", "write"}, {"broke", "break"},  {"broken", "break"}, {"began", "begin"},
      {"begun", "begin"},   {"swam", "swim"},     {"won", "win"},      {"lost", "lose"},    {"left", "leave"},
      {"told", "tell"},     {"made", "make"},     {"found", "find"},   {"got", "get"},      {"taught", "teach"},
      {"thought", "think"}, {"brought", "bring"}, {"caught", "catch"}, {"fell", "fall"},    {"fallen", "fall"},
      {"felt", "feel"},     {"kept", "keep"},     {"sold", "sell"},    {"spent", "spend"},  {"paid", "pay"},
      {"chose", "choose"},  {"chosen", "choose"}, {"flew", "fly"},     {"flown", "fly"},    {"grew", "grow"},
      {"grown", "grow"},    {"knew", "know"},     {"known", "know"},   {"rode", "ride"},    {"ridden", "ride"},
      {"saw", "see"},       {"seen", "see"},      {"wore", "wear"},    {"worn", "wear"},    {"held", "hold"},
      {"sent", "send"},     {"built", "build"},   {"slept", "sleep"},  {"spoke", "speak"},  {"spoken", "speak"},
      {"stood", "stand"},   {"threw", "throw"},   {"thrown", "throw"}, {"woke", "wake"},    {"drank", "drink"},
      {"drunk", "drink"},   {"fed", "feed"},      {"led", "lead"},     {"hid", "hide"},     {"shot", "shoot"},
      {"sat", "sit"},       {"lent", "lend"},     {"dug", "dig"},      {"hung", "hang"},    {"forgot", "forget"}};
  const auto found = bases.find(word);
  return found == bases.end() ? word : found->second;
}

bool is_poor_concept(std::string_view word) {
  static const WordSet words = words_of(
      "like likes liked liking love loves loved hate hates hated prefer prefers preferred enjoy enjoys enjoyed "
      "want wants wanted need needs needed use uses used using own owns owned owning drink drinks drank drunk drinking "
      "eat eats ate eaten "
      "eating take takes took taken make makes made get gets got go goes went going come comes came keep keeps kept "
      "say says said tell tells told know knows knew think thinks thought feel feels felt seem seems seemed "
      "allow allows allowed let lets put puts set sets try tries tried ask asks asked "
      "really actually usually always often sometimes ever still already also maybe perhaps quite rather "
      "good bad nice fine great well okay ok able available currently today tomorrow yesterday");
  return words.count(word) != 0;
}

std::vector<Token> tokenise(std::string_view utf8) {
  // [A-Za-z0-9]+(?:['’/-][A-Za-z0-9]+)* | [.,;:!?], scanned by code point.
  struct Char {
    char32_t cp;
    std::size_t byte;
  };
  std::vector<Char> chars;
  for (std::size_t i = 0; i < utf8.size();) {
    const auto [cp, length] = next_char(utf8, i);
    chars.push_back({cp, i});
    i += length;
  }
  auto alnum = [&](std::size_t k) {
    return k < chars.size() && chars[k].cp < 0x80 && ascii_alnum(static_cast<unsigned char>(chars[k].cp));
  };
  auto joiner = [&](std::size_t k) {
    return k < chars.size() &&
           (chars[k].cp == '\'' || chars[k].cp == 0x2019 || chars[k].cp == '/' || chars[k].cp == '-');
  };
  std::vector<Token> out;
  std::size_t k = 0;
  while (k < chars.size()) {
    const char32_t c = chars[k].cp;
    if (alnum(k)) {
      Token token;
      token.start = k;
      token.byte = chars[k].byte;
      auto take_run = [&] {
        while (alnum(k))
          token.word.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(chars[k++].cp))));
      };
      take_run();
      while (joiner(k) && alnum(k + 1)) {
        token.word.push_back(chars[k].cp == 0x2019 ? '\'' : static_cast<char>(chars[k].cp));
        ++k;
        take_run();
      }
      token.end = k;
      out.push_back(std::move(token));
    } else if (c == '.' || c == ',' || c == ';' || c == ':' || c == '!' || c == '?') {
      out.push_back(Token{std::string(1, static_cast<char>(c)), k, k + 1, chars[k].byte});
      ++k;
    } else {
      ++k;
    }
  }
  return out;
}

std::string singular(std::string_view word) {
  static const std::unordered_map<std::string_view, std::string_view> irregular{
      {"people", "person"},
      {"persons", "person"},
      {"men", "man"},
      {"women", "woman"},
      {"children", "child"},
      {"mice", "mouse"},
      {"knives", "knife"},
      {"teeth", "tooth"},
      {"feet", "foot"},
      {"geese", "goose"},
      {"leaves", "leaf"},
      {"wolves", "wolf"},
      {"shelves", "shelf"},
      {"loaves", "loaf"},
      {"halves", "half"},
      {"scissors", "scissors"},
      {"glasses", "glass"},
      {"skis", "ski"},
      {"taxis", "taxi"},
      {"buses", "bus"},
      {"cacti", "cactus"},
      // Words whose final s is no plural's (issue 52: "series" read as "sery", "Atlas" as
      // "atla"); a capitalised name is kept whole where a content word is named (text.py).
      {"series", "series"},
      {"species", "species"},
      {"news", "news"},
      {"means", "means"},
      {"lens", "lens"},
      {"atlas", "atlas"},
      {"canvas", "canvas"},
      {"alias", "alias"},
      {"bias", "bias"},
      {"christmas", "christmas"},
      {"pancreas", "pancreas"},
      {"diabetes", "diabetes"},
      {"herpes", "herpes"},
      {"rabies", "rabies"},
      {"measles", "measles"},
      {"mumps", "mumps"},
      {"kubernetes", "kubernetes"},
      {"physics", "physics"},
      {"mathematics", "mathematics"},
      {"economics", "economics"},
      {"politics", "politics"},
      {"athletics", "athletics"},
      {"gymnastics", "gymnastics"},
      {"aerobics", "aerobics"},
      {"pilates", "pilates"},
      // -ie nouns, not -y ones (agent notes dev: "sugar-free cookies" read as "cooky")
      {"cookies", "cookie"},
      {"movies", "movie"},
      {"smoothies", "smoothie"},
      {"brownies", "brownie"},
      {"selfies", "selfie"},
      {"zombies", "zombie"},
      {"rookies", "rookie"},
      {"calories", "calorie"},
      {"hoodies", "hoodie"},
      {"goalies", "goalie"},
      {"prairies", "prairie"},
      {"pixies", "pixie"}};
  // Plurals of words that end in -che: their "es" is not the plural's ("headaches" -> headache).
  static constexpr std::array<std::string_view, 9> e_plurals{"aches",      "niches",  "cliches", "quiches", "caches",
                                                             "avalanches", "psyches", "creches", "douches"};
  static constexpr std::array<std::string_view, 11> ach_plurals{"beaches",    "peaches",  "coaches",  "roaches",
                                                                "reaches",    "teaches",  "breaches", "poaches",
                                                                "approaches", "broaches", "bleaches"};
  auto any_suffix = [&](const auto& list) {
    return std::any_of(list.begin(), list.end(), [&](std::string_view s) { return ends_with(word, s); });
  };
  if (const auto found = irregular.find(word); found != irregular.end()) return std::string(found->second);
  if (word.size() <= 3) return std::string(word);
  if (ends_with(word, "ies") && word.size() > 4) return std::string(word.substr(0, word.size() - 3)) + "y";
  if ((any_suffix(e_plurals) && !any_suffix(ach_plurals)) || (ends_with(word, "zes") && !ends_with(word, "zzes"))) {
    return std::string(word.substr(0, word.size() - 1));
  }
  for (std::string_view s : {"sses", "shes", "ches", "xes", "zes"}) {
    if (ends_with(word, s)) return std::string(word.substr(0, word.size() - 2));
  }
  if (ends_with(word, "s")) {
    for (std::string_view s : {"ss", "us", "is", "ous"}) {
      if (ends_with(word, s)) return std::string(word);
    }
    return std::string(word.substr(0, word.size() - 1));
  }
  return std::string(word);
}

std::string normalise_lowered(std::string_view lowered) {
  // [a-z0-9]+(?:['-][a-z0-9]+)*
  auto word_char = [](unsigned char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  std::vector<std::string> words;
  std::size_t i = 0;
  while (i < lowered.size()) {
    if (!word_char(static_cast<unsigned char>(lowered[i]))) {
      ++i;
      continue;
    }
    std::string word;
    while (i < lowered.size() && word_char(static_cast<unsigned char>(lowered[i]))) word.push_back(lowered[i++]);
    while (i + 1 < lowered.size() && (lowered[i] == '\'' || lowered[i] == '-') &&
           word_char(static_cast<unsigned char>(lowered[i + 1]))) {
      word.push_back(lowered[i++]);
      while (i < lowered.size() && word_char(static_cast<unsigned char>(lowered[i]))) word.push_back(lowered[i++]);
    }
    words.push_back(std::move(word));
  }
  if (words.empty()) return "";
  words.back() = singular(words.back());
  std::string out;
  for (std::size_t k = 0; k < words.size(); ++k) {
    if (k) out.push_back(' ');
    out.append(words[k]);
  }
  return out;
}

std::string normalise_name(std::string_view utf8) {
  std::string lowered;
  lowered.reserve(utf8.size());
  for (std::size_t i = 0; i < utf8.size();) {
    const auto [c, length] = utf8::next_char(utf8, i);
    if (c < 0x80) {
      lowered.push_back(static_cast<char>(std::tolower(static_cast<int>(c))));
    } else if (c == 0x130) {
      lowered += "i\xCC\x87";
    } else if (c == 0x212A) {
      lowered.push_back('k');
    } else {
      lowered.append(utf8.substr(i, length));
    }
    i += length;
  }
  return normalise_lowered(lowered);
}

// ---- trigger tables -----------------------------------------------------------------------

TriggerTable::TriggerTable(const TriggerPhrases& phrases) : window_(phrases.window) {
  auto fill = [&](std::unordered_set<std::string>& set, const std::vector<std::string>& from, bool counts) {
    for (const auto& phrase : from) {
      set.insert(phrase);
      if (counts) longest_ = std::max(longest_, word_count(phrase));
    }
  };
  fill(pre_, phrases.pre, true);
  fill(post_, phrases.post, true);
  fill(pseudo_, phrases.pseudo, true);
  fill(terminators_, phrases.terminators, true);
  fill(resolution_, phrases.resolution, false);
  fill(hedge_, phrases.hedge, true);
}

std::optional<TriggerTable::Match> TriggerTable::match(const std::vector<Token>& tokens, std::size_t i) const {
  const std::size_t most = std::min(longest_, tokens.size() - i);
  for (std::size_t length = most; length > 0; --length) {
    std::string key;
    for (std::size_t k = i; k < i + length; ++k) {
      if (k > i) key.push_back(' ');
      key.append(tokens[k].word);
    }
    if (pseudo_.count(key)) return Match{Kind::kPseudo, length, key};
    const bool pre = pre_.count(key) != 0, post = post_.count(key) != 0;
    if (pre || post) return Match{pre && post ? Kind::kBoth : pre ? Kind::kPre : Kind::kPost, length, key};
    if (terminators_.count(key)) return Match{Kind::kTerminator, length, key};
    if (hedge_.count(key)) return Match{Kind::kHedge, length, key};
  }
  return std::nullopt;
}

// ---- parse --------------------------------------------------------------------------------

struct KeysView {
  const std::unordered_map<std::string, std::uint32_t>& ids;
  std::size_t longest;

  std::optional<std::uint32_t> find(const std::string& key) const {
    const auto found = ids.find(key);
    if (found == ids.end()) return std::nullopt;
    return found->second;
  }

  // (concept id, tokens consumed) of the longest name starting at tokens[i]; a colon may sit
  // between a name's words, a comma or sentence end may not.
  std::optional<std::pair<std::uint32_t, std::size_t>> concept_at(const std::vector<Token>& tokens,
                                                                  std::size_t i) const {
    if (i >= tokens.size()) return std::nullopt;
    const std::size_t most = std::min(longest + 1, tokens.size() - i);
    for (std::size_t length = most; length > 0; --length) {
      if (tokens[i].word == ":" || tokens[i + length - 1].word == ":") continue;
      std::vector<std::string_view> content;
      bool broken = false;
      for (std::size_t k = i; k < i + length; ++k) {
        const std::string& w = tokens[k].word;
        if (w == ":") continue;
        if (is_clause_end(w) || w == ",") broken = true;
        content.push_back(w);
      }
      if (content.size() > longest || broken) continue;
      const std::string_view tail = content.back();
      std::vector<std::string> lasts{singular(tail)};
      if (ends_with(tail, "es")) lasts.emplace_back(tail.substr(0, tail.size() - 1));  // "wheezes" -> wheeze
      if (const auto owner = without_possessive(tail); owner.size() < tail.size()) {
        lasts.push_back(singular(owner));  // "the dog's bowl", "the children's books"
      }
      std::vector<std::string> candidates;
      const std::string head = join(content, 0, content.size() - 1);
      for (const auto& last : lasts) candidates.push_back(head.empty() ? last : head + " " + last);
      candidates.push_back(normalise_lowered(join(content, 0, content.size())));
      for (const auto& key : candidates) {
        auto id = find(key);
        if (!id && key.find('-') != std::string::npos) {
          std::string spaced = key;
          std::replace(spaced.begin(), spaced.end(), '-', ' ');
          id = find(spaced);
        }
        if (id) return std::pair{*id, length};
      }
    }
    return std::nullopt;
  }
};

// Whether toks[at], right after a word of a negated phrase, is what the phrase's subject does or
// is: an auxiliary, or a participle acting on something (a function word such as a determiner, a
// preposition or a concept: "riding a surfboard", "playing frisbee") that does not begin a longer
// concept ("dining table"). A participle before an adverb or the end is the negated noun itself
// ("no air conditioning.", "not in the Tuesday meeting anymore").
static bool starts_predicate(const KeysView& vocabulary, const std::vector<Token>& toks, std::size_t at,
                             std::size_t concept_length) {
  const std::string& word = toks[at].word;
  const std::string& before = toks[at - 1].word;
  if (is_stopword(before) || !ascii_alnum(static_cast<unsigned char>(before[0]))) return false;
  if (auxiliaries().count(word)) return true;
  if (!participle(word) || concept_length > 1 || at + 1 >= toks.size()) return false;
  const std::string& next = toks[at + 1].word;
  return is_stopword(next) || prepositions().count(next) || vocabulary.concept_at(toks, at + 1).has_value();
}

ParsedText parse(std::string_view utf8, const Vocabulary& keys, const TriggerTable& triggers) {
  std::vector<Token> toks = tokenise(utf8);
  keys.fresh_keys();
  std::shared_lock lock(keys.lock_);
  const KeysView vocabulary{keys.keys_, keys.longest_};
  ParsedText result;
  constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  bool scope_open = false;
  std::size_t negate_until = 0;  // token index up to which the open pre-cue's scope reaches
  std::string active_cue;
  bool resolving = false;
  std::size_t span_start = 0, span_end = 0;
  bool span_frozen = false;  // the negated span stopped growing (a preposition, the subject's verb)
  bool verb_object = false;  // the open scope negates a verb's prepositional object ("works at Google")
  std::size_t verb_at = 0;    // that verb's start
  bool do_negated = false;    // the open scope's cue negates a verb ("doesn't", "no longer")
  bool copula_negated = false;  // ... or a copula ("is not", "isn't")
  std::size_t scope_terms = 0;  // concepts and unknown words inside the open scope
  std::size_t cue_end = 0;  // the token after the open pre-cue
  std::size_t clause_start_mention = 0, clause_start_unknown = 0, clause_start_char = 0;
  // Issue 52 (ConText past negation; docs/quality.md §11): what a clause says with no state.
  std::size_t clause_start_tok = 0;  // the token a clause's subject starts at
  bool hedged = false;           // after a hedge cue ("might", "not sure whether"), to the clause end
  bool named_in_clause = false;  // the clause has named its actor (a name or a pronoun): see `uncertain`
  bool other_person = false;     // the clause is about another person ("Maya's brother has a dog")
  std::size_t sentence_start_mention = 0;  // the first mention of this sentence (to ". ! ?")
  // Whom the text is about: its first clause's actor, when a name ("Maya has a cat"; none after a
  // pronoun). A later clause whose actor is another name is that person's, as a relative's clause
  // is ("Maya has a cat; Leo has a dog": Leo's dog says nothing of Maya's; round 46).
  // (none until the first clause's actor is read; "" when that actor is no name; a view into the
  // text's tokens, which outlive the loop)
  std::optional<std::string_view> text_actor;
  // This clause, opened by "and", joins its actor to the actor before, who had stated nothing
  // yet: "Tomas and his partner Ines share a flat" is both people's flat, not the partner's alone
  // (round 47's MCP QA).
  bool joins_actor = false;
  bool joining_actors = false;  // the names after such an "and" join the clause's actor ("ana ben")
  std::size_t actor_token = 0;  // the token the clause's actor was read at
  bool actor_open = true;  // no actor named yet in this clause (a name here is its actor)
  std::size_t actor_start = kNone;  // where this clause's actor starts (code points)
  bool conditional = false;      // inside "if ..." / "when ...", to a comma or the clause end
  bool scope_uncertain = false;  // the open pre-cue negates inside a condition or a question's own event
  bool prefer_seen = false, rather_seen = false;  // "prefers A over B", "would rather A than B"
  bool against_seen = false;  // the clause opened a preference against ("allergic to peanuts, not to milk")
  std::size_t terms_since_prefer = 0;
  std::size_t skip_verb = kNone;  // a relative clause's negated verb ("tools that do not run on ...")
  std::size_t time_until = 0;     // the token after a time phrase inside the open scope ("last year")
  const bool question = std::any_of(toks.begin(), toks.end(), [](const Token& t) { return t.word == "?"; });

  const auto capitalised = [&](std::size_t k) {
    const unsigned char c = static_cast<unsigned char>(utf8[toks[k].byte]);
    return c >= 'A' && c <= 'Z';
  };
  const auto sentence_initial = [&](std::size_t k) { return k == 0 || is_clause_end(toks[k - 1].word); };
  // "the Smiths' dog": the tokeniser leaves a trailing apostrophe out of the word
  const auto plural_possessive = [&](std::size_t k) {
    const std::size_t after = toks[k].byte + toks[k].word.size();
    return all_letters(toks[k].word) && ends_with(toks[k].word, "s") && after < utf8.size() &&
           (utf8[after] == '\'' || utf8.substr(after, 3) == "\xE2\x80\x99");
  };
  // A cue right after its subject: a pronoun, a capitalised name or "user" ("Maya used to run",
  // "Sara lost her phone"; not "a knife used to cut bread", a sign "reading lost children").
  const auto after_its_subject = [&](std::size_t k) {
    const std::string& before = toks[k - 1].word;
    return personal_pronouns().count(before) || capitalised(k - 1) || before == "user";
  };
  // A possessive naming an owner: "her", "Maya's", "the user's", "the Smiths'".
  const auto owned = [&](std::size_t k) {
    const std::string& owner = toks[k].word;
    return possessive_pronouns().count(owner) ||
           (owner.size() > 2 && ends_with(owner, "'s") && (capitalised(k) || without_possessive(owner) == "user")) ||
           (capitalised(k) && plural_possessive(k));
  };
  // A proper name (Mention::subject): "user", a capitalised word that does not start a sentence,
  // or a capitalised possessive ("Maya's").
  const auto is_subject = [&](std::size_t k) {
    const std::string_view w = without_possessive(toks[k].word);
    if (w == "user" || w == "users") return true;
    if (!capitalised(k) || is_stopword(w) || non_concepts().count(w) || !all_letters(w)) return false;
    return !sentence_initial(k) || w.size() < toks[k].word.size();
  };

  // The clause has stated something beyond its actor (a list of actors is no statement: "Ana
  // and Ben met").
  const auto clause_stated = [&] {
    for (std::size_t j = clause_start_mention; j < result.mentions.size(); ++j)
      if (!result.mentions[j].subject && result.mentions[j].start != actor_start) return true;
    for (std::size_t j = clause_start_unknown; j < result.unknown.size(); ++j)
      if (!result.unknown[j].subject && result.unknown[j].start != actor_start) return true;
    return false;
  };
  // A verb after token k: one that opens clauses ("has", "likes"), a word in -ed, or one in -s
  // before a determiner, a preposition or "as" ("works as", "adopts a"; not "Android phones but").
  const auto verb_follows = [&](std::size_t k) {
    if (k + 1 >= toks.size()) return false;
    const std::string& next = toks[k + 1].word;
    if (clause_openers().count(next)) return !personal_pronouns().count(next);
    if (next.size() <= 3 || !all_letters(next)) return false;
    if (ends_with(next, "ed")) return true;
    return ends_with(next, "s") && k + 2 < toks.size() &&
           (determiners().count(toks[k + 2].word) || prepositions().count(toks[k + 2].word) ||
            toks[k + 2].word == "as");
  };

  auto close_scope = [&] {
    if (scope_open && !scope_uncertain && span_end > span_start)
      result.negated_spans.emplace_back(span_start, span_end);
    scope_open = false;
    scope_uncertain = false;
  };
  auto start_clause = [&](std::size_t at_char, std::size_t next_tok) {
    clause_start_mention = result.mentions.size();
    clause_start_unknown = result.unknown.size();
    clause_start_char = at_char;
    clause_start_tok = next_tok;
  };
  // The nouns right before token k in this clause ("peanut" in "a mild peanut allergy", "dust" and
  // "mite" in "a dust mite allergy", "peanut" and "sesame" in "peanut and sesame allergies") are
  // avoided; a word of degree is not ("mild").
  // What a cue read after the fact ("allergic to" by "a peanut allergy", "gave away" by "gave his
  // laptop to ...") negates: the mentions and words that end within code points (from, to], names
  // excepted (a declared "peanut butter" ends within "butter"). Whether it negated any.
  const auto negate_within = [&](std::size_t from, std::size_t to, const std::string& phrase) {
    bool any = false;
    for (auto& m : result.mentions) {
      if (m.end <= from || m.end > to || m.subject) continue;
      m.negated = true;
      m.cue = phrase;
      m.resolution = triggers.is_resolution(phrase);
      any = true;
    }
    for (auto& u : result.unknown) {
      if (u.end <= from || u.end > to || u.subject) continue;
      u.negated = true;
      any = true;
    }
    return any;
  };
  static const std::vector<Token> allergic_to{Token{"allergic", 0, 0, 0}, Token{"to", 0, 0, 0}};
  auto avoid_compound_before = [&](std::size_t k) {
    static const WordSet degrees = words_of(
        "mild severe serious known bad slight strong minor major possible suspected seasonal lifelong "
        "life-threatening new old");
    // (a list before "and" is in an earlier clause: found by the token's place, which is its own)
    const auto avoid = [&](std::size_t at) {
      return !degrees.count(toks[at].word) && negate_within(toks[at].start, toks[at].end, "allergic to");
    };
    // the whole compound ("dust mite allergy": dust and mite), then a list before it
    std::size_t at = k;
    while (at > 0 && avoid(at - 1)) --at;
    if (at == k) return;
    for (; at >= 2 && (toks[at - 1].word == "and" || toks[at - 1].word == "or" || toks[at - 1].word == ","); at -= 2) {
      if (!avoid(at - 2)) break;
    }
  };
  auto end_clause = [&] {  // what a hedge, another person or a preference reach ends here
    hedged = other_person = conditional = prefer_seen = rather_seen = against_seen = joins_actor = joining_actors =
        false;
  };
  auto open_scope = [&](std::size_t i, std::size_t length, const std::string& phrase) {
    close_scope();
    scope_open = true;
    active_cue = phrase;
    resolving = triggers.is_resolution(phrase);
    negate_until = triggers.window() ? i + length + *triggers.window() : toks.size();
    span_start = toks[i].start;
    span_end = toks[i + length - 1].end;
    span_frozen = false;
    verb_object = false;
    // "doesn't", "no longer", "never", or "not" after "do" ("does not work for Siemens")
    const std::string& before_cue = i > 0 ? toks[i - 1].word : std::string();
    do_negated = verb_first_cues().count(phrase) ||
                 (phrase == "not" && (before_cue == "do" || before_cue == "does" || before_cue == "did"));
    copula_negated = phrase == "isn't" || phrase == "aren't" || phrase == "wasn't" || phrase == "weren't" ||
                     (phrase == "not" && copulas().count(before_cue));
    scope_terms = 0;
    cue_end = i + length;
  };

  std::size_t i = 0;
  while (i < toks.size()) {
    const std::string& word = toks[i].word;
    if (scope_open && i > negate_until) close_scope();
    if (is_clause_end(word)) {
      close_scope();
      end_clause();
      named_in_clause = false;
      if (word == "." || word == "!" || word == "?") sentence_start_mention = result.mentions.size();
      actor_open = word != ":";  // "Allergies: none" goes on being its header's
      if (word != ":")
        start_clause(toks[i].end, i + 1);  // "Allergies: none": a post-cue after a colon reaches its header
      ++i;
      continue;
    }
    if (word == ",") conditional = false;  // "if she hadn't missed the train, she ..."
    if (word == "," && i + 1 < toks.size() && comma_breakers().count(toks[i + 1].word)) {
      // ", and a cat" starts a new clause; ", and fatigue" ends a list the cue still covers
      if (!(toks[i + 1].word == "and" && vocabulary.concept_at(toks, i + 2))) close_scope();
      ++i;
      continue;
    }
    if (word == "," && comma_starts_clause(toks, i)) {
      close_scope();
      end_clause();
      start_clause(toks[i].end, i + 1);
      actor_open = true;
      ++i;
      continue;
    }
    // "found it", "recovered them", "got it back": the sentence's loss is taken back
    const bool it_after = i + 1 < toks.size() && (toks[i + 1].word == "it" || toks[i + 1].word == "them");
    if (it_after &&
        (recovery_verbs().count(word) || (word == "got" && i + 2 < toks.size() && toks[i + 2].word == "back"))) {
      for (std::size_t j = sentence_start_mention; j < result.mentions.size(); ++j) {
        Mention& m = result.mentions[j];
        if (m.negated && loss_cues().count(m.cue)) {
          m.negated = false;
          m.uncertain = true;
          m.cue.clear();
        }
      }
    }
    if (word == "from" && !scope_open) {
      // "migrated its queue from RabbitMQ to SQS", "moved his savings from Revolut": a change verb
      // with its object before "from" ends what comes after it, as "migrated from" does (round
      // 47's MCP QA: VERIFIED for "does Kestrel use RabbitMQ?"). Only where the namespace's table
      // has the verb's "from" cue.
      static const WordSet change_verbs = words_of("moved switched migrated changed upgraded");
      static const WordSet openers = words_of("its his her their our my your the");
      if (const auto verb = verb_with_object_before(toks, i, clause_start_tok, change_verbs, openers)) {
        const std::vector<Token> phrase{toks[*verb], toks[i]};
        if (const auto cue = triggers.match(phrase, 0);
            cue && cue->length == 2 && cue->kind == TriggerTable::Kind::kPre) {
          open_scope(i, 1, cue->phrase);
          ++i;
          continue;
        }
      }
    }
    if (word == "to" && !scope_open) {
      // "gave his old laptop to his niece": a thing of one's own given to someone is no longer had,
      // as "gave away" says (round 47's MCP QA: VERIFIED for "does Hugo have his old laptop?").
      // Only where the namespace's table has "gave away".
      static const WordSet give_verbs = words_of("gave given donated handed");
      static const std::vector<Token> gave_away{Token{"gave", 0, 0, 0}, Token{"away", 0, 0, 0}};
      const auto verb = verb_with_object_before(toks, i, clause_start_tok, give_verbs, possessive_pronouns());
      const auto cue = verb ? triggers.match(gave_away, 0) : std::nullopt;
      if (cue && cue->length == 2 && cue->kind == TriggerTable::Kind::kPre) {
        const std::size_t from = toks[*verb + 1].start, to = toks[i - 1].end;
        negate_within(from, to, cue->phrase);
        result.negated_spans.emplace_back(from, to);
      }
    }
    // "Maya visited Leo, who has a dog": what the "who" clause says is Leo's, for the labels only
    // (as a state, one held-out answering note lost its VERIFIED label, round 46); read here, as
    // "who" is also the cue table's terminator
    if (word == "who" && !question && i > 0) {
      const std::size_t named_at = toks[i - 1].word == "," && i > 1 ? i - 2 : i - 1;
      if (is_subject(named_at))
        result.actors.push_back({toks[i].start, std::string(without_possessive(toks[named_at].word))});
    }
    if (auto cue = triggers.match(toks, i)) {
      TriggerTable::Kind kind = cue->kind;
      const std::size_t length = cue->length;
      const std::string& before = i > 0 ? toks[i - 1].word : std::string();
      bool ignored = false;
      if (habit_verbs().count(cue->phrase)) {
        // A past habit given up is a subject's transitive verb: "User quit smoking", not "a
        // stopped train", "is cancelled" (a post-cue) or "a bus stopped at the light".
        const std::size_t next = i + length;
        ignored = i == 0 ||  // "Stop sign on a street" (COCO): a habit verb needs its subject
                  (is_stopword(before) && !personal_pronouns().count(before) && before != "has" && before != "have" &&
                   before != "had") ||
                  auxiliaries().count(before) || before == "be" || before == "been" || before == "being" ||
                  before == "get" || before == "got" || next >= toks.size() ||
                  !ascii_alnum(static_cast<unsigned char>(toks[next].word[0])) ||
                  prepositions().count(toks[next].word) || toks[next].word == "to" || toks[next].word == "and" ||
                  toks[next].word == "or" ||
                  // "Sara lost her phone", not a sign "reading lost children" (COCO dev)
                  (cue->phrase == "lost" && !after_its_subject(i));
      } else if (preference_verbs().count(cue->phrase)) {
        ignored = determiners().count(before) != 0;  // "a man wearing a hate" (a COCO dev typo): no verb
      } else if (cue->phrase == "used to") {
        // "Maya used to run" (a past habit), not "a knife used to cut bread".
        ignored = i == 0 || !after_its_subject(i);
      } else if (cue->phrase == "waiting for") {
        // "Carmen is waiting for a hip replacement" (one person's wait: nothing had yet), not "a
        // man waiting for a bus", "People waiting for the train" (COCO dev: the bus is in the picture)
        ignored = i < 2 || (before != "is" && before != "was") || !after_its_subject(i - 1);
      } else if (cue->phrase == "waits for") {
        ignored = i == 0 || !after_its_subject(i);
      } else if ((cue->phrase == "free" || cue->phrase == "intolerant") && kind != TriggerTable::Kind::kPre) {
        // "X free" negates X alone ("pain free", "tumor free"); "felt free", "is free", "a free
        // workshop" negate nothing (issue 52). So does "X intolerant": "Priya is lactose
        // intolerant" keeps Priya (conversations dev).
        const std::string_view owner = i > 0 ? without_possessive(before) : std::string_view();
        if (owner.empty() || !(all_letters(owner) || hyphenated_letters(owner)) || is_stopword(owner) ||
            free_verbs().count(owner) || contrast_words().count(owner) || triggers.match(toks, i - 1)) {
          ignored = true;
        } else {
          close_scope();
          const std::size_t from = toks[i - 1].start;
          for (std::size_t j = clause_start_mention; j < result.mentions.size(); ++j) {
            auto& m = result.mentions[j];
            if (m.end == toks[i - 1].end && m.start <= from) {
              m.negated = true;
              m.cue = cue->phrase;
              m.resolution = triggers.is_resolution(cue->phrase);
            }
          }
          for (std::size_t j = clause_start_unknown; j < result.unknown.size(); ++j) {
            if (result.unknown[j].end == toks[i - 1].end) result.unknown[j].negated = true;
          }
          result.negated_spans.emplace_back(from, toks[i].end);
          i += length;
          continue;
        }
      }
      // A preference against that is itself negated says nothing of its object, neither the
      // preference's NOT_HAS nor the negation's: "is not allergic to milk", "doesn't avoid dairy"
      // (the negation right before the cue), and the contrast after one, "allergic to peanuts,
      // not to milk". Its scope opens uncertain, as a condition's does.
      bool negated_preference = false;
      if (!ignored && against_preference(cue->phrase) && scope_open && cue_end == i &&
          verb_negations().count(std::string_view(active_cue).substr(0, active_cue.find(' ')))) {
        scope_open = false;  // the negation's scope, empty, records nothing
        negated_preference = true;
      } else if (!ignored && against_seen && before == "," && cue->phrase == "not") {
        negated_preference = true;
      }
      if (!ignored) {
        if (kind == TriggerTable::Kind::kBoth) {
          kind = result.mentions.size() > clause_start_mention ? TriggerTable::Kind::kPost : TriggerTable::Kind::kPre;
        }
        if (kind == TriggerTable::Kind::kPre && scope_open && exception_cues().count(cue->phrase)) {
          kind = TriggerTable::Kind::kTerminator;
        }
        // A negated verb "without" a thing has it: "Leo still doesn't swim without armbands"
        // (agent memory dev: HAS armband; the two negations cancel).
        if (kind == TriggerTable::Kind::kPre && scope_open && do_negated && cue->phrase == "without") {
          kind = TriggerTable::Kind::kTerminator;
        }
        if (kind == TriggerTable::Kind::kHedge) {
          hedged = true;  // "might adopt a dog", "not sure whether Omar likes jazz"
        } else if (kind == TriggerTable::Kind::kPseudo || kind == TriggerTable::Kind::kTerminator) {
          close_scope();
          if (contrast_words().count(toks[i].word) || clause_terminators().count(cue->phrase)) {
            end_clause();
            start_clause(toks[i + length - 1].end, i + length);  // "X but Y ruled out"
          }
        } else if (kind == TriggerTable::Kind::kPost) {
          close_scope();
          const bool is_resolution = triggers.is_resolution(cue->phrase);
          for (std::size_t j = clause_start_mention; j < result.mentions.size(); ++j) {
            auto& m = result.mentions[j];
            if (m.subject) continue;  // "the flight to Oslo was cancelled" says nothing against Oslo
            m.negated = true;
            m.cue = cue->phrase;
            m.resolution = is_resolution;
          }
          for (std::size_t j = clause_start_unknown; j < result.unknown.size(); ++j) {
            if (!result.unknown[j].subject) result.unknown[j].negated = true;
          }
          result.negated_spans.emplace_back(clause_start_char, toks[i + length - 1].end);
        } else {  // pre
          open_scope(i, length, cue->phrase);
          const std::string_view first = std::string_view(cue->phrase).substr(0, cue->phrase.find(' '));
          if (verb_negations().count(first)) {
            const std::string& before2 = i > 1 ? toks[i - 2].word : std::string();
            const std::string& after = i + length < toks.size() ? toks[i + length].word : std::string();
            const auto personal = [&](std::size_t k) {
              return k < toks.size() && (personal_pronouns().count(toks[k].word) || is_subject(k));
            };
            const bool relative = before == "that" || before == "which" || before == "who" ||
                                  ((before == "do" || before == "does" || before == "did") &&
                                   (before2 == "that" || before2 == "which" || before2 == "who"));
            if (relative && !after.empty() && all_letters(after) && !is_stopword(after) &&
                !determiners().count(after)) {
              skip_verb = i + length;  // "tools that do not run on Windows": run is no forbidden topic
            }
            // A condition's or a question's own negated event asserts nothing: "if she hadn't
            // missed the train", "what did Maya do when she couldn't find her keys?".
            scope_uncertain =
                conditional || (question && !relative &&
                                ((i > 0 && personal(i - 1)) || personal(i + length) || question_words().count(before)));
          } else {
            scope_uncertain = conditional;
          }
          if (negated_preference) scope_uncertain = true;
          against_seen = against_seen || against_preference(cue->phrase);
        }
        i += length;
        continue;
      }
    }
    if (word == "and" || (word == "where" && i > 0 && toks[i - 1].word == ",")) {
      // A name after "and" acts in a clause of its own once the clause before stated something
      // ("Maya has a cat and Leo has a dog"), not in a list of actors ("Ana and Ben met"); so
      // after ", where" ("met in Lisbon, where Ben works as a chef").
      joins_actor = word == "and" && !actor_open && !clause_stated();
      joining_actors = joins_actor && !result.actors.empty();  // "Ana and Ben met": both act
      // (a name opening the clause is an actor once a name joins it, a verb after it or not)
      if (joining_actors && result.actors.back().actor.empty() && capitalised(actor_token) &&
          all_letters(toks[actor_token].word) && !is_stopword(toks[actor_token].word)) {
        result.actors.back().actor = toks[actor_token].word;
      }
      actor_open = actor_open || clause_stated();
    }
    if (word == "and") {
      start_clause(toks[i].end, i + 1);  // post-cues reach back only to here
      // "does not smoke and rarely drinks alcohol": an adverb after "and" starts the subject's
      // next predicate (agent notes dev).
      if (i + 1 < toks.size() && frequency_adverbs().count(toks[i + 1].word)) close_scope();
      // "sold the Tesla and bought a Corolla", "quit smoking and now runs daily": a verb after "and"
      // (a word before an article or a possessive) or "now / then" starts the subject's next
      // predicate (round 47's MCP QA: NOT_HAS corolla answered "does the user drive a Corolla?" NO).
      if (predicate_after_and(toks, i)) close_scope();
      // "Maya might adopt a dog and Leo has a cat": a new subject ends what a hedge or another
      // person reached.
      if (i + 1 < toks.size() && (personal_pronouns().count(toks[i + 1].word) || is_subject(i + 1))) {
        hedged = other_person = false;
      }
    }
    if (conditions().count(word)) {
      close_scope();
      conditional = true;
    }
    if (word == "prefer" || word == "prefers" || word == "preferred" || word == "preferring") {
      prefer_seen = true;
      terms_since_prefer = 0;
    } else if (word == "rather") {
      rather_seen = true;
      terms_since_prefer = 0;
    } else if (terms_since_prefer && (((word == "over" || word == "to") && prefer_seen) ||
                                      (word == "than" && (prefer_seen || rather_seen)))) {
      // "prefers tea over coffee", "would rather have juice than soda": what is preferred
      // against is NOT_HAS (issue 52's preferences against).
      open_scope(i, 1, word);
      prefer_seen = rather_seen = false;
      ++i;
      continue;
    }
    // "replaced her laptop WITH a MacBook": what replaces is had ("numbers replaced with birds", a
    // COCO dev caption, negates nothing)
    if (scope_open && word == "with" && active_cue == "replaced") span_frozen = true;
    if (scope_open && prepositions().count(word) && scope_terms && !span_frozen) {
      // "Nadia no longer works at Google", "Beacon doesn't page for warnings": a verb whose
      // preposition names where or for what it acts (place_verbs), negated alone right after its
      // cue, says where it no longer does. The preposition's object is what is absent, and the
      // verb has no state (before: NOT_HAS work, HAS google, so "does Nadia work at Meta?" was
      // ANSWERS NO; round 45's MCP QA). Not another verb's place ("did not smoke at a gig", dev),
      // a copula's complement ("isn't happy with the job") or a noun's ("no dogs in the house").
      // The verb loses its state once the object names a term ("never ships on a Friday" keeps
      // NOT_HAS ship: a weekday is no concept).
      const std::string& verb = toks[i - 1].word;
      if (!verb_object && scope_terms == 1 && i == cue_end + 1 &&
          ((do_negated && place_verbs().count(verb)) || (copula_negated && access_words().count(verb)))) {
        verb_object = true;
        verb_at = toks[i - 1].start;
      } else if (!(active_cue == "used to" && habit_prepositions().count(word))) {
        // (a past habit's "in / by / on / with" names how it was done, which ended with it: "used
        // to cache responses in Memcached" was VERIFIED for "does Osprey use Memcached?", round
        // 47's last QA pass; no note of the three agent sets changed)
        span_frozen = true;
      }
    }
    const auto found = vocabulary.concept_at(toks, i);
    if (i == skip_verb) {  // a relative clause's negated verb: no term; its object stays in scope
      if (found) {
        result.mentions.push_back(Mention{found->first, toks[i].start, toks[i + found->second - 1].end, false,
                                          std::string(), false, true, false});
      }
      const std::size_t length = found ? found->second : 1;
      if (scope_open && !span_frozen) span_end = toks[i + length - 1].end;
      i += length;
      continue;
    }
    if (scope_open && !span_frozen && i > cue_end && starts_predicate(vocabulary, toks, i, found ? found->second : 0)) {
      span_frozen = true;  // "without a shirt riding a surfboard": the surfboard is affirmed
    }
    if (scope_open && i >= time_until) time_until = time_phrase_end(toks, i);
    const bool in_time_phrase = i < time_until;  // affirmed; the scope goes on past it
    // Past a preposition that follows a negated term, the scope names where or what for.
    const bool negating = scope_open && !span_frozen && !in_time_phrase;
    const bool subject = is_subject(i);
    // A hedge or another person's clause leaves its actor's name stated ("not sure whether Omar
    // likes jazz": Omar), not the names it reaches past the actor ("Omar is considering moving
    // from Postgres to Redis", "she might be in Porto": agent memory dev).
    const bool actor = subject && !named_in_clause;
    const bool uncertain = (hedged || other_person) ? !actor : (!subject && negating && scope_uncertain);
    const bool others = uncertain && other_person && !hedged;  // Mention::others
    if (joining_actors && word != "and") {
      const std::string_view joined_name = without_possessive(word);
      if (subject || other_people().count(joined_name)) {
        std::string& actors = result.actors.back().actor;
        actors.push_back(' ');
        actors.append(joined_name);
      } else if (!possessive_pronouns().count(word) && !relative_modifiers().count(word)) {
        joining_actors = false;
      }
    }
    if (actor_open && (subject || personal_pronouns().count(word) || possessive_pronouns().count(word) || found ||
                       (all_letters(word) && !is_stopword(word)))) {
      actor_open = false;  // the clause's first name, pronoun or term: its actor, or none named
      // a name acting: a possessive ("Leo's dog") or a name a verb follows ("Leo has a dog", "Ben
      // twisted his ankle"; not "Peanut butter sandwiches are ...", "speaks Spanish and Catalan at
      // home"), at a sentence's start too
      const std::string_view name = without_possessive(word);
      const bool a_name = subject || (capitalised(i) && all_letters(name) && !is_stopword(name) &&
                                      !non_concepts().count(name) && !personal_pronouns().count(word));
      const bool named =
          a_name && (name.size() < word.size() || verb_follows(i) ||
                     // a name and what it is: "the Beacon team owns", "the Atlas service runs"
                     (i > 0 && toks[i - 1].word == "the" && i + 1 < toks.size() && all_letters(toks[i + 1].word) &&
                      !is_stopword(toks[i + 1].word) && verb_follows(i + 1)));
      if (!text_actor) text_actor = named ? name : std::string_view();
      else if (named && !text_actor->empty() && name != *text_actor && !question)
        other_person = true;  // (the name stays stated; a question asks of each name it names)
      actor_start = toks[i].start;
      // whom the clause speaks of: the name ("User" too, and one an irregular past follows, "Lena
      // met Paulo", which the verb test above does not know), or the text's actor for a pronoun
      const bool pronoun = personal_pronouns().count(word) || possessive_pronouns().count(word);
      const bool acts = named || word == "user" ||
                        (a_name && i + 1 < toks.size() && irregular_base(toks[i + 1].word) != toks[i + 1].word);
      // (a predicate after "and" names no one new: "Karim lives in Montreal and plays hockey")
      const bool goes_on = !acts && !pronoun && i > 0 && toks[i - 1].word == "and";
      if (!goes_on) {
        actor_token = i;
        result.actors.push_back({toks[i].start, std::string(acts                    ? name
                                                            : pronoun && text_actor ? *text_actor
                                                                                    : std::string_view())});
      }
    }
    if (subject || personal_pronouns().count(word) ||
        (sentence_initial(i) && capitalised(i) && !is_stopword(word) && all_letters(word))) {
      named_in_clause = true;
    }
    const bool negated = negating && !scope_uncertain;
    std::size_t length = 1;
    // A content word: letters, or letters joined by hyphens ("t-shirt"), less a possessive's
    // "'s" ("the dog's bowl" names the dog), and no light verb, month or number word. A
    // two-letter word counts when the text writes it in capitals ("TV", "AI") or, as a name,
    // capitalised inside a sentence ("writes Go", "Jo's").
    const auto content_word = [&](std::string_view w, bool whole_token) {
      bool acronym = false;
      if (w.size() == 2 && whole_token) {  // a letters-only token is ASCII throughout: two bytes
        const std::size_t at = toks[i].byte;
        const bool first = std::isupper(static_cast<unsigned char>(utf8[at]));
        // a capitalised two-letter name may open a sentence too ("Jo has a collie"), unless it is
        // a word that opens sentences ("Oh", "Go left")
        static const WordSet openers = words_of("oh ok hi ah eh ha yo ye mr ms dr st go");
        acronym = first &&
                  (std::isupper(static_cast<unsigned char>(utf8[at + 1])) || !sentence_initial(i) || !openers.count(w));
      }
      return ((all_letters(w) || hyphenated_letters(w)) && (w.size() >= 3 || acronym) && !is_stopword(w) &&
              !contrast_words().count(w) && !non_concepts().count(w)) ||
             (whole_token && letters_and_digits(w));
    };
    if (found) {
      length = found->second;
      result.mentions.push_back(Mention{found->first, toks[i].start, toks[i + length - 1].end, negated,
                                        negated ? active_cue : std::string(), resolving && negated, uncertain,
                                        subject});
      result.mentions.back().others = others;
      scope_terms += scope_open;
    } else {
      const std::string_view content = without_possessive(word);
      // "pain-free", "nut-free": what comes before "-free" is absent, as in "pain free" (the
      // post-cue), but nothing else of the clause is ("the user is pain free" negates the user).
      const std::string_view absent = free_of(content);
      if (!absent.empty()) {
        const std::vector<Token> owner{Token{std::string(absent), toks[i].start, toks[i].end, toks[i].byte}};
        const bool unsure = hedged || other_person;
        if (const auto named = vocabulary.concept_at(owner, 0)) {
          result.mentions.push_back(Mention{named->first, toks[i].start, toks[i].end, true, "free",
                                            triggers.is_resolution("free"), unsure, false});
          scope_terms += scope_open;
        } else if (content_word(absent, false)) {
          result.unknown.push_back(UnknownTerm{std::string(absent), toks[i].start, toks[i].end, true, unsure, false});
          scope_terms += scope_open;
        }
      } else if (content_word(content, true)) {
        result.unknown.push_back(
            UnknownTerm{std::string(content), toks[i].start, toks[i].end, negated, uncertain, subject});
        scope_terms += scope_open;
      } else if (content.find('/') != std::string_view::npos) {
        // "A/B" names both, each with the token's state ("no fever/chills"; issue 52: a slash
        // joined pair got no state at all).
        std::size_t from = 0;
        while (from <= content.size()) {
          const std::size_t slash = std::min(content.find('/', from), content.size());
          const std::string_view part = content.substr(from, slash - from);
          const std::vector<Token> one{Token{std::string(part), toks[i].start, toks[i].end, toks[i].byte}};
          if (const auto named = part.empty() ? std::nullopt : vocabulary.concept_at(one, 0)) {
            result.mentions.push_back(Mention{named->first, toks[i].start, toks[i].end, negated,
                                              negated ? active_cue : std::string(), resolving && negated, uncertain,
                                              false});
            result.mentions.back().others = others;
            scope_terms += scope_open;
          } else if (content_word(part, false)) {
            result.unknown.push_back(
                UnknownTerm{std::string(part), toks[i].start, toks[i].end, negated, uncertain, false});
            scope_terms += scope_open;
          }
          from = slash + 1;
        }
      }
    }
    if (!negated && allergy_words().count(word) && triggers.match(allergic_to, 0)) {
      // "a peanut allergy", "peanut and sesame allergies", "an allergy to shrimp": what the
      // allergy is to is avoided, as "allergic to peanuts" says; the allergy itself is had (the
      // MCP QA of round 47: "has a mild peanut allergy" was HAS peanut, "allergic to peanuts"
      // NOT_HAS). Only where the namespace's table has "allergic to".
      avoid_compound_before(i);
      const bool copula = i + 1 < toks.size() && (toks[i + 1].word == "is" || toks[i + 1].word == "was");
      const std::size_t to = i + 1 + copula;
      if (to < toks.size() && toks[to].word == "to") {
        open_scope(to, 1, "allergic to");
        against_seen = true;
        i = to + 1;
        continue;
      }
    }
    if (found || content_word(without_possessive(word), true)) terms_since_prefer += prefer_seen || rather_seen;
    // "Maya's brother has a dog", "her sister is vegan": the rest of the clause is another
    // person's (the relative itself is the subject's: Maya has a brother).
    // The owner opens the clause, after "the" too ("the user's neighbour", "the Smiths' neighbour"),
    // a modifier between them allowed ("Nadia's twin sister").
    const bool modified = i > 1 && relative_modifiers().count(toks[i - 1].word);
    const std::size_t owner_at = i - 1 - modified;
    // (after "and" the clause starts at the next token, which may be past the last)
    const std::size_t clause_owner =
        clause_start_tok + (clause_start_tok < toks.size() && toks[clause_start_tok].word == "the");
    const bool relative = !other_person && i > modified && other_people().count(without_possessive(word));
    // what follows the relative's own possessive is the relative's: "the user's neighbour's dog"
    const bool relatives_thing = word.size() > 2 && ends_with(word, "'s");
    // (a relative joined to the actor by "and his / her" acts with the actor; "Priya and Dev's
    // mother" is their mother, whose clause it is)
    const bool joined = joins_actor && possessive_pronouns().count(toks[owner_at].word);
    if (relative && owner_at == clause_owner && owned(owner_at) && !joined) {
      // the relative may be named first: "Tom's sister Clara keeps bees", "Leo's friend Sam is vegan"
      const std::size_t verb = i + 2 < toks.size() && capitalised(i + 1) ? i + 2 : i + 1;
      if (relatives_thing || (verb < toks.size() && relative_states().count(toks[verb].word))) other_person = true;
      // what the relative does is the relative's, stated or not ("Hugo's wife Clara teaches piano")
      if (verb < toks.size()) {
        std::string relative_actor(without_possessive(word));
        if (verb == i + 2) relative_actor.append(" ").append(toks[i + 1].word);
        result.actors.push_back({toks[i + 1].start, std::move(relative_actor)});  // from the name, if given
      }
    } else if (relative && relatives_thing && owner_at > clause_owner && owned(owner_at) &&
               copulas().count(toks[owner_at - 1].word)) {
      // "Peanut butter sandwiches are Leo's brother's favourite": the whole clause is the
      // relative's, what came before the copula too (before, it was Leo's: VERIFIED for "does Leo
      // like peanut butter?", and it superseded "Leo is allergic to peanuts"; round 45's QA).
      other_person = true;
      const std::size_t owner_start = toks[owner_at].start;
      for (std::size_t j = clause_start_mention; j < result.mentions.size(); ++j) {
        auto& m = result.mentions[j];
        if (!m.subject && m.start < owner_start) m.uncertain = true;
      }
      for (std::size_t j = clause_start_unknown; j < result.unknown.size(); ++j) {
        auto& u = result.unknown[j];
        if (!u.subject && u.start < owner_start) u.uncertain = true;
      }
    }
    if (verb_object && scope_terms > 1) {  // the verb's object named a term: the verb says no more
      for (auto& m : result.mentions)
        if (m.start == verb_at) m.uncertain = true;
      for (auto& u : result.unknown)
        if (u.start == verb_at) u.uncertain = true;
      verb_object = false;
    }
    if (scope_open && !span_frozen && !in_time_phrase) span_end = toks[i + length - 1].end;
    i += length;
  }
  close_scope();
  result.tokens = std::move(toks);
  return result;
}

namespace {

// Whom the text speaks of at `start` (code points): the last actor change at or before it.
std::string actor_at(const ParsedText& text, std::size_t start) {
  std::string actor;
  for (const auto& change : text.actors) {
    if (change.start > start) break;
    actor = change.actor;
  }
  return actor;
}

std::unordered_set<std::uint32_t> stated_concepts(const ParsedText& text) {
  std::unordered_set<std::uint32_t> stated;
  for (const auto& m : text.mentions)
    if (!m.uncertain) stated.insert(m.concept_id);
  return stated;
}

}  // namespace

std::vector<std::pair<std::uint32_t, std::string>> concept_actors(const ParsedText& text) {
  std::vector<std::pair<std::uint32_t, std::string>> out;
  std::unordered_map<std::uint32_t, std::size_t> at;  // concept -> its place in `out`
  const auto stated = stated_concepts(text);
  for (const auto& m : text.mentions) {
    // (a concept said with no state only, as in another person's clause, is listed too: who acts)
    if (m.uncertain && stated.count(m.concept_id)) continue;
    std::string actor = actor_at(text, m.start);
    const auto [found, added] = at.emplace(m.concept_id, out.size());
    if (added) {
      out.emplace_back(m.concept_id, std::move(actor));
    } else if (out[found->second].second != actor) {
      out[found->second].second.clear();  // said of more than one
    }
  }
  out.erase(std::remove_if(out.begin(), out.end(), [](const auto& c) { return c.second.empty(); }), out.end());
  return out;
}

std::vector<OthersState> others_states(const ParsedText& text) {
  std::vector<OthersState> out;
  const auto stated = stated_concepts(text);
  std::unordered_set<std::uint32_t> mixed;
  for (const auto& m : text.mentions) {
    if (!m.others || stated.count(m.concept_id) || mixed.count(m.concept_id)) continue;
    std::string actor = actor_at(text, m.start);
    const auto same =
        std::find_if(out.begin(), out.end(), [&](const OthersState& o) { return o.concept_id == m.concept_id; });
    if (same == out.end()) {
      out.push_back({m.concept_id, m.negated, std::move(actor)});
    } else if (same->actor != actor) {
      mixed.insert(m.concept_id);  // said of more than one
      out.erase(same);
    } else {
      same->negated = same->negated && m.negated;  // affirmed if any mention is (polarity())
    }
  }
  out.erase(std::remove_if(out.begin(), out.end(), [](const OthersState& o) { return o.actor.empty(); }), out.end());
  return out;
}

std::vector<std::pair<std::uint32_t, bool>> polarity(const std::vector<Mention>& mentions) {
  std::vector<std::pair<std::uint32_t, bool>> out;
  std::unordered_map<std::uint32_t, std::size_t> at;  // concept -> its place in `out`
  for (const auto& m : mentions) {
    if (m.uncertain) continue;  // said with no state (a hedge, another person's fact)
    const auto [found, added] = at.emplace(m.concept_id, out.size());
    if (added) {
      out.emplace_back(m.concept_id, m.negated);
    } else if (!m.negated) {
      out[found->second].second = false;
    } else if (m.resolution) {
      out[found->second].second = true;
    }
  }
  return out;
}

// ---- the affirmative part ------------------------------------------------------------------

namespace {

using ::polarmem::utf8::is_space;

void append_utf8(char32_t c, std::string* out) { ::polarmem::utf8::append(c, out); }

bool in(char32_t c, std::u32string_view set) { return set.find(c) != std::u32string_view::npos; }

void strip(std::u32string* text, std::u32string_view chars, bool left, bool right) {
  std::size_t from = 0, to = text->size();
  while (left && from < to && in((*text)[from], chars)) ++from;
  while (right && to > from && in((*text)[to - 1], chars)) --to;
  *text = text->substr(from, to - from);
}

// A word that leaves a dangling end: "dogs but" -> "dogs".
bool is_trailing(std::u32string_view word) {
  std::string lowered;
  for (const char32_t c : word) {
    if (c >= 0x80) return false;  // no such word has a letter outside ASCII
    lowered.push_back(static_cast<char>(std::tolower(static_cast<int>(c))));
  }
  const auto from = lowered.find_first_not_of(",;:");
  if (from == std::string::npos) return false;
  const std::string_view trimmed = std::string_view(lowered).substr(from, lowered.find_last_not_of(",;:") + 1 - from);
  static const WordSet words = words_of("but and or with nor yet however except");
  return words.count(trimmed) != 0;
}

}  // namespace

std::string affirmative_part(std::string_view utf8, std::vector<std::pair<std::size_t, std::size_t>> spans) {
  std::u32string query;
  for (std::size_t i = 0; i < utf8.size();) {
    const auto [cp, length] = next_char(utf8, i);
    query.push_back(cp);
    i += length;
  }
  std::sort(spans.begin(), spans.end());
  std::u32string kept;
  std::size_t last = 0;
  auto slice = [&](std::size_t from, std::size_t to) {  // Python's query[from:to]
    from = std::min(from, query.size());
    to = std::min(to, query.size());
    if (from < to) kept.append(query, from, to - from);
  };
  for (const auto& [start, end] : spans) {
    if (start >= last) {
      slice(last, start);
      last = end;
    } else {
      last = std::max(last, end);
    }
  }
  slice(last, query.size());
  std::u32string text;  // whitespace runs become one space
  for (std::size_t i = 0; i < kept.size(); ++i) {
    if (!is_space(kept[i])) {
      text.push_back(kept[i]);
    } else if (i == 0 || !is_space(kept[i - 1])) {
      text.push_back(U' ');
    }
  }
  strip(&text, U" ,;:-", true, true);
  std::u32string tight;  // no space before . , ; : ! ?
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == U' ' && i + 1 < text.size() && in(text[i + 1], U".,;:!?")) continue;
    tight.push_back(text[i]);
  }
  text.swap(tight);
  while (!text.empty()) {
    const std::size_t space = text.rfind(U' ');
    const std::u32string_view word = std::u32string_view(text).substr(space == std::u32string::npos ? 0 : space + 1);
    if (!is_trailing(word)) break;
    if (space == std::u32string::npos) {
      text.clear();
    } else {
      text.resize(space);
      strip(&text, U" ,;:", false, true);
    }
  }
  while (!text.empty()) {
    const std::size_t space = text.find(U' ');
    if (!is_trailing(std::u32string_view(text).substr(0, space))) break;
    if (space == std::u32string::npos) {
      text.clear();
    } else {
      text.erase(0, space + 1);
      strip(&text, U" ,;:", true, false);
    }
  }
  // A content word left? As Python's text.lower(): U+0130 lowers to "i" + a combining dot, the
  // Kelvin sign to "k"; no other character outside ASCII lowers into [a-z0-9].
  std::string word;
  bool content = false;
  auto end_word = [&] {
    if (!word.empty() && !is_stopword(word)) content = true;
    word.clear();
  };
  for (const char32_t c : text) {
    if (c < 0x80 && ascii_alnum(static_cast<unsigned char>(c))) {
      word.push_back(static_cast<char>(std::tolower(static_cast<int>(c))));
    } else if (c == 0x212A) {
      word.push_back('k');
    } else if (c == 0x130) {
      word.push_back('i');
      end_word();
    } else {
      end_word();
    }
  }
  end_word();
  if (!content) return "";
  std::string out;
  for (const char32_t c : text) append_utf8(c, &out);
  return out;
}

}  // namespace polarmem::text
