// WordPieceTokenizer on a hand-made vocabulary: the rules of HF's BERT tokenizer on ASCII,
// Latin and General Punctuation text.
// (Agreement with HF itself on real text is tested in Python: tests/unit/test_wordpiece.py.)
#include <string>
#include <vector>

#include "check.hpp"
#include "polarmem/error.hpp"
#include "polarmem/wordpiece.hpp"

using namespace polarmem;

namespace {

constexpr std::int32_t kUnk = 1, kCls = 2, kSep = 3;

// Ids by position: "un" is 5, "##aff" 6, and so on.
const std::vector<std::string> kVocabulary = {
    "[PAD]",
    "[UNK]",
    "[CLS]",
    "[SEP]",
    "[MASK]",
    "un",
    "##aff",
    "##able",
    "##a",
    "a",
    "##ble",  // 5..10
    "aff",
    "dog",
    "dogs",
    "##s",
    ".",
    ",",
    "'",
    "t",
    "don",
    "!",  // 11..20
    "x",
    "##x",
    "1",
    "##2",
    "",
    "#",
    "##",  // 21..27
    "\xe1\x84\x80",
    "##\xe1\x85\xa1",                          // 28..29: the jamo U+1100, ##U+1161
};

WordPieceTokenizer tokenizer(std::size_t max_tokens = 16) {
  return WordPieceTokenizer(kVocabulary, kCls, kSep, kUnk, max_tokens, {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"});
}

std::vector<std::int32_t> ids(const WordPieceTokenizer& t, std::string_view text) {
  std::vector<std::int32_t> out{-1};
  CHECK(t.encode(text, &out));
  return out;
}

std::string repeated(char c, std::size_t n) { return std::string(n, c); }

}  // namespace

POLARMEM_TEST(greedy_longest_match_with_continuations) {
  const auto t = tokenizer();
  CHECK(ids(t, "unaffable") == (std::vector<std::int32_t>{kCls, 5, 6, 7, kSep}));  // not un ##a ...
  CHECK(ids(t, "dogs") == (std::vector<std::int32_t>{kCls, 13, kSep}));  // the whole word first
  CHECK(ids(t, "aff") == (std::vector<std::int32_t>{kCls, 11, kSep}));  // "aff" opens, "##aff" continues
  CHECK(ids(t, "dog dogs unaff") == (std::vector<std::int32_t>{kCls, 12, 13, 5, 6, kSep}));
  CHECK(ids(t, "1222") == (std::vector<std::int32_t>{kCls, 23, 24, 24, 24, kSep}));
}

POLARMEM_TEST(a_word_that_does_not_split_entirely_is_one_unk) {
  const auto t = tokenizer();
  CHECK(ids(t, "unz") == (std::vector<std::int32_t>{kCls, kUnk, kSep}));  // un matched, then nothing
  CHECK(ids(t, "zdog dog") == (std::vector<std::int32_t>{kCls, kUnk, 12, kSep}));
  CHECK(ids(t, "affun") == (std::vector<std::int32_t>{kCls, kUnk, kSep}));  // no "##un"
}

POLARMEM_TEST(words_over_100_characters_are_unk) {
  const auto t = tokenizer();
  std::vector<std::int32_t> hundred{kCls, 21};  // x ##x ##x ...
  hundred.resize(101, 22);
  hundred.push_back(kSep);
  CHECK(ids(tokenizer(128), repeated('x', 100)) == hundred);
  CHECK(ids(t, repeated('x', 101)) == (std::vector<std::int32_t>{kCls, kUnk, kSep}));
  CHECK(ids(t, "a " + repeated('x', 101) + " a") == (std::vector<std::int32_t>{kCls, 9, kUnk, 9, kSep}));
}

POLARMEM_TEST(punctuation_is_a_word_of_its_own) {
  const auto t = tokenizer();
  CHECK(ids(t, "don't.") == (std::vector<std::int32_t>{kCls, 19, 17, 18, 15, kSep}));
  CHECK(ids(t, "dog,dog") == (std::vector<std::int32_t>{kCls, 12, 16, 12, kSep}));
  CHECK(ids(t, "!!.") == (std::vector<std::int32_t>{kCls, 20, 20, 15, kSep}));
  // "#" and "##" are tokens, but '#' is punctuation: "##" is two words, "#a" never a continuation
  CHECK(ids(t, "##a") == (std::vector<std::int32_t>{kCls, 26, 26, 9, kSep}));
  CHECK(ids(t, "$") == (std::vector<std::int32_t>{kCls, kUnk, kSep}));  // ASCII punctuation, not in the vocabulary
}

POLARMEM_TEST(case_whitespace_and_control_characters) {
  const auto t = tokenizer();
  CHECK(ids(t, "DoG UnAffAble") == (std::vector<std::int32_t>{kCls, 12, 5, 6, 7, kSep}));
  CHECK(ids(t, "\tdog\n\r dog  ") == (std::vector<std::int32_t>{kCls, 12, 12, kSep}));
  // NUL, other control characters and DEL are dropped: the word around them closes up
  CHECK(ids(t, std::string("do\0g", 4)) == (std::vector<std::int32_t>{kCls, 12, kSep}));
  CHECK(ids(t, "d\x01o\x0bg\x0c\x1f\x7f") == (std::vector<std::int32_t>{kCls, 12, kSep}));
  CHECK(ids(t, "") == (std::vector<std::int32_t>{kCls, kSep}));
  CHECK(ids(t, " \t\n\x01") == (std::vector<std::int32_t>{kCls, kSep}));
}

POLARMEM_TEST(truncation_keeps_the_first_pieces_and_sep) {
  const auto t = tokenizer(5);
  CHECK(ids(t, "dog dog dog") == (std::vector<std::int32_t>{kCls, 12, 12, 12, kSep}));
  CHECK(ids(t, "dog dog dog dog dog") == (std::vector<std::int32_t>{kCls, 12, 12, 12, kSep}));
  CHECK(ids(t, "dog unaffable") == (std::vector<std::int32_t>{kCls, 12, 5, 6, kSep}));  // a word cut in pieces
  CHECK(ids(tokenizer(2), "dog") == (std::vector<std::int32_t>{kCls, kSep}));
  CHECK(t.max_tokens() == 5);
}

POLARMEM_TEST(latin_letters_lose_their_accents_and_case) {
  const auto t = tokenizer();
  // a combining mark (U+0301) is an accent: stripped
  CHECK(ids(t, "do\xcc\x81g") == (std::vector<std::int32_t>{kCls, 12, kSep}));
  // "D\u00d6G" -> "dog"; NBSP a space, the soft hyphen dropped; "\u00bf" punctuation of its own
  CHECK(ids(t, "D\xc3\x96G") == (std::vector<std::int32_t>{kCls, 12, kSep}));
  CHECK(ids(t,
            "dog\xc2\xa0"
            "d\xc2\xad"
            "og") == (std::vector<std::int32_t>{kCls, 12, 12, kSep}));
  CHECK(ids(t,
            "\xc2\xbf"
            "dog") == (std::vector<std::int32_t>{kCls, kUnk, 12, kSep}));
  // an "\u00f8" has no decomposition: it stays, and no piece holds it
  CHECK(ids(t, "d\xc3\xb8g") == (std::vector<std::int32_t>{kCls, kUnk, kSep}));
  // WordPiece's 100 counts characters: 100 two-byte letters are still one word to split
  std::string e100;
  for (int i = 0; i < 100; ++i) e100 += "\xc3\xa9";
  CHECK(ids(t, e100) == (std::vector<std::int32_t>{kCls, kUnk, kSep}));
}

POLARMEM_TEST(general_punctuation_splits_spaces_and_drops_format_characters) {
  const auto t = tokenizer();
  // "don\u2019t": the curly apostrophe is punctuation of its own (no piece holds it)
  CHECK(ids(t, "don\xe2\x80\x99t") == (std::vector<std::int32_t>{kCls, 19, kUnk, 18, kSep}));
  // a thin space (U+2009) is a space; a zero-width space (U+200B) is dropped, joining the word
  CHECK(ids(t, "dog\xe2\x80\x89x") == (std::vector<std::int32_t>{kCls, 12, 21, kSep}));
  CHECK(ids(t, "do\xe2\x80\x8bg") == (std::vector<std::int32_t>{kCls, 12, kSep}));
  // an em dash and an ellipsis (U+2014, U+2026) split words off as punctuation
  CHECK(ids(t, "dog\xe2\x80\x94x\xe2\x80\xa6") == (std::vector<std::int32_t>{kCls, 12, kUnk, 21, kUnk, kSep}));
}

POLARMEM_TEST(cjk_ideographs_kana_hangul_and_fullwidth_forms) {
  const auto t = tokenizer();
  // U+6771 between two words sets them apart, as HF's handle_chinese_chars does: dog [UNK] dog
  // (one word "dog\u6771dog" would be a single [UNK]); U+3400 and U+9FFF bound the covered ranges.
  CHECK(ids(t,
            "dog\xe6\x9d\xb1"
            "dog") == (std::vector<std::int32_t>{kCls, 12, kUnk, 12, kSep}));
  CHECK(ids(t, "\xe3\x90\x80\xe9\xbf\xbf") == (std::vector<std::int32_t>{kCls, kUnk, kUnk, kSep}));
  // hiragana (U+306F) and the ideographic space (U+3000): the kana table's, a word and a space
  CHECK(ids(t, "dog \xe3\x81\xaf") == (std::vector<std::int32_t>{kCls, 12, kUnk, kSep}));
  CHECK(ids(t,
            "dog\xe3\x80\x80"
            "dog") == (std::vector<std::int32_t>{kCls, 12, 12, kSep}));
  // the Arabic comma (U+060C) is punctuation of its own; a Hebrew point (U+05B8) is stripped as an
  // accent, joining "do" and "g"
  CHECK(ids(t,
            "dog\xd8\x8c"
            "dog") == (std::vector<std::int32_t>{kCls, 12, kUnk, 12, kSep}));
  CHECK(ids(t, "do\xd6\xb8g") == (std::vector<std::int32_t>{kCls, 12, kSep}));
  // a Hangul syllable becomes its jamo, as NFD makes it: "\uac00" is U+1100 U+1161, one word
  CHECK(ids(t, "dog \xea\xb0\x80") == (std::vector<std::int32_t>{kCls, 12, 28, 29, kSep}));
  // a fullwidth exclamation mark (U+FF01) is punctuation of its own
  CHECK(ids(t, "dog\xef\xbc\x81") == (std::vector<std::int32_t>{kCls, 12, kUnk, kSep}));
  // a compatibility ideograph (U+F900) is set apart too, as the U+8C48 NFD maps it to; U+4DC0
  // (a hexagram, between the two ranges) stays in its word; so does U+2B820, which HF's ranges
  // skip, where U+20000 (Extension B) is set apart
  CHECK(ids(t,
            "dog\xef\xa4\x80"
            "dog") == (std::vector<std::int32_t>{kCls, 12, kUnk, 12, kSep}));
  CHECK(ids(t,
            "dog\xe4\xb7\x80"
            "dog") == (std::vector<std::int32_t>{kCls, kUnk, kSep}));
  CHECK(ids(t,
            "dog\xf0\xab\xa0\xa0"
            "dog") == (std::vector<std::int32_t>{kCls, kUnk, kSep}));
  CHECK(ids(t,
            "dog\xf0\xa0\x80\x80"
            "dog") == (std::vector<std::int32_t>{kCls, 12, kUnk, 12, kSep}));
  // private use (U+E000, U+F0000) is dropped, joining "do" and "g"
  CHECK(ids(t, "do\xee\x80\x80g") == (std::vector<std::int32_t>{kCls, 12, kSep}));
  CHECK(ids(t, "do\xf3\xb0\x80\x80g") == (std::vector<std::int32_t>{kCls, 12, kSep}));
  std::vector<std::int32_t> out;
  CHECK(!t.encode("\xe0\x82\xa9", &out));  // an overlong U+00A9: not UTF-8
  CHECK(!t.encode("\xe6\x9d", &out));       // a truncated ideograph
}

POLARMEM_TEST(other_characters_and_added_tokens_are_declined) {
  const auto t = tokenizer();
  std::vector<std::int32_t> out{7};
  CHECK(!t.encode("dog \xed\xa0\x80", &out));      // a surrogate (U+D800): not UTF-8
  CHECK(!t.encode("dog \xf4\x90\x80\x80", &out));  // U+110000: past Unicode
  CHECK(!t.encode("dog \xf5\x80\x80\x80", &out));  // no lead byte of UTF-8
  CHECK(!t.encode("\xf0\x8f\xbf\xbf", &out));      // an overlong U+FFFF: not UTF-8
  CHECK(!t.encode("\xf0\x9f\x90", &out));          // a truncated four-byte sequence
  CHECK(!t.encode("\xe2\x80", &out));           // a truncated three-byte sequence
  CHECK(!t.encode("\x80", &out));               // a lone continuation byte
  CHECK(!t.encode("\xc3", &out));               // a truncated sequence
  CHECK(!t.encode("a dog [MASK] here", &out));
  CHECK(!t.encode("[CLS]", &out));
  CHECK(!t.encode("[sep] after normalizing", &out));  // also found in the normalized text
  CHECK(
      !t.encode("[PA\x01"
                "D]",
                &out));  // ... where control characters are gone
  CHECK(out == std::vector<std::int32_t>{7});
  CHECK(ids(t, "[CLS") == (std::vector<std::int32_t>{kCls, kUnk, kUnk, kSep}));  // "[" and "cls"
}

POLARMEM_TEST(symbols_and_emoji_are_words_of_their_own_or_of_their_word) {
  const auto t = tokenizer();
  // U+2122 (letterlike) and U+1F436 (an emoji, four bytes) are no punctuation: each stays in its word,
  // which the vocabulary lacks; U+FE0F (a variation selector) is stripped as an accent.
  CHECK(ids(t, "dog \xe2\x84\xa2") == (std::vector<std::int32_t>{kCls, 12, kUnk, kSep}));
  CHECK(ids(t, "dog \xf0\x9f\x90\xb6") == (std::vector<std::int32_t>{kCls, 12, kUnk, kSep}));
  CHECK(ids(t, "dog\xef\xb8\x8f") == (std::vector<std::int32_t>{kCls, 12, kSep}));
}

POLARMEM_TEST(the_planes_past_the_basic_multilingual_plane) {
  const auto t = tokenizer();
  // U+1FB00 (legacy computing) and U+10000 (Linear B) stay in their word; U+10FFFF (a
  // noncharacter) too; U+E0041 (a tag) and U+E0100 (a variation selector) are dropped
  CHECK(ids(t, "dog \xf0\x9f\xac\x80") == (std::vector<std::int32_t>{kCls, 12, kUnk, kSep}));
  CHECK(ids(t, "dog\xf0\x90\x80\x80") == (std::vector<std::int32_t>{kCls, kUnk, kSep}));
  CHECK(ids(t, "dog\xf4\x8f\xbf\xbf") == (std::vector<std::int32_t>{kCls, kUnk, kSep}));
  CHECK(ids(t, "do\xf3\xa0\x81\x81g\xf3\xa0\x84\x80") == (std::vector<std::int32_t>{kCls, 12, kSep}));
  // Deseret capital long I (U+10400) lower-cases to U+10428, the same word either way
  std::vector<std::int32_t> upper, lower;
  CHECK(t.encode("\xf0\x90\x90\x80 dog", &upper) && t.encode("\xf0\x90\x90\xa8 dog", &lower));
  CHECK(upper == lower && upper == (std::vector<std::int32_t>{kCls, kUnk, 12, kSep}));
  // U+10100 (Aegean word separator line) is punctuation of its own
  CHECK(ids(t,
            "dog\xf0\x90\x84\x80"
            "dog") == (std::vector<std::int32_t>{kCls, 12, kUnk, 12, kSep}));
  // capital sigma lower-cases to sigma wherever it stands (tokenizers 0.23)
  CHECK(WordPieceTokenizer::covers(0x3A3) && WordPieceTokenizer::covers(0x10FFFF));
  CHECK(!WordPieceTokenizer::covers(0xD800) && !WordPieceTokenizer::covers(0x110000));
}

POLARMEM_TEST(bad_construction_is_refused) {
  CHECK_THROWS(WordPieceTokenizer(kVocabulary, kCls, kSep, 99, 16, {}));
  CHECK_THROWS(WordPieceTokenizer(kVocabulary, -1, kSep, kUnk, 16, {}));
  CHECK_THROWS(WordPieceTokenizer(kVocabulary, kCls, kSep, kUnk, 1, {}));
  // An empty literal declines nothing; a Latin one declines the text holding it
  const WordPieceTokenizer t(kVocabulary, kCls, kSep, kUnk, 8, {"", "\xc3\xa9"});
  CHECK(ids(t, "dog") == (std::vector<std::int32_t>{kCls, 12, kSep}));
  std::vector<std::int32_t> out;
  CHECK(!t.encode("caf\xc3\xa9", &out));
}

int main() { return polarmem::testing::run_all(); }
