// BERT's uncased WordPiece tokenization, exactly as the Hugging Face `tokenizers` library runs a
// tokenizer.json of BertNormalizer (clean_text, lowercase, accents stripped), BertPreTokenizer,
// WordPiece ("##" continuations, [UNK] past 100 characters) and the template [CLS] A [SEP],
// truncated to max_tokens. The compiled path tokenizes a query with it, so the library and the
// compiled path give a text the same ids without Python.
//
// What it covers, each as HF does: every Unicode scalar value.
// - ASCII: NUL and control characters dropped, \t \n \r a space, A-Z lower-cased;
// - every other code point through a table generated from HF itself (cpp/src/wordpiece_tables.inc,
//   runs of code points that behave alike and the normalized text of those that change):
//   accents and other combining marks stripped ("Zoë", "Łódź", "Αθήνα", Indic vowel signs, kana
//   voicing marks, variation selectors), Unicode lower case (Latin, Greek, Cyrillic, Armenian,
//   Deseret, Osage, Adlam...), NFD's decompositions (a few two-part vowel signs, the musical
//   symbols), NBSP and the typographic spaces a space, control, format and private use characters
//   dropped, the rest as it is (scripts, symbols, emoji "🐶 👍🏽", unassigned code points), and
//   Unicode's punctuation split off ("Maya’s — “done”…");
// - a Hangul syllable (U+AC00..U+D7A3) becomes its conjoining jamo, as NFD makes it;
// - the CJK ideographs HF's handle_chinese_chars names ("東京": U+3400..U+4DBF, U+4E00..U+9FFF,
//   Extensions B to F but U+2B820..U+2B91F) are set apart by spaces, so each is a word of its own;
//   so are the compatibility ideographs (U+F900..U+FAFF, U+2F800..U+2FA1F), as the unified
//   ideographs NFD maps them to.
// The pre-tokenizer splits on spaces and makes every punctuation character a word of its own.
// Declined (encode() returns false): a character whose HF answer depends on its neighbours (the
// generator finds none in tokenizers 0.23, whose lower case of capital sigma is always σ), text
// that is not UTF-8, and a text containing an added token's content (HF splits "[CLS]" out as one
// token).
// NFD's canonical ordering of adjacent combining marks HF keeps (spacing marks such as U+A9C0,
// marks newer than its category tables) is not done: no token of the BERT uncased vocabulary holds
// one, so a word with one is [UNK] in either order.
//
// Immutable after construction: any number of threads may encode at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace polarmem {

class WordPieceTokenizer {
 public:
  // vocabulary: token strings by id ("" for an unused id); max_tokens: the truncation length,
  // [CLS] and [SEP] included (at least 2); declined_literals: the added tokens' contents;
  // latin: encode the Latin range too (false: ASCII only, for a normalizer that keeps accents).
  WordPieceTokenizer(std::vector<std::string> vocabulary, std::int32_t cls_id, std::int32_t sep_id, std::int32_t unk_id,
                     std::size_t max_tokens, std::vector<std::string> declined_literals, bool latin = true);

  // False when the text holds a declined character, is not UTF-8, or holds a declined literal (ids
  // untouched); otherwise ids holds [CLS], the first max_tokens - 2 word pieces and [SEP].
  bool encode(std::string_view text, std::vector<std::int32_t>* ids) const;

  // Whether code point `c` is one the tokenizer reproduces (every Unicode scalar value its table
  // does not decline): a text with any other is declined.
  static bool covers(char32_t c);

  std::size_t max_tokens() const { return max_tokens_; }

 private:
  struct Hash {
    using is_transparent = void;  // find() by string_view, without building a std::string
    std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
  };
  using Table = std::unordered_map<std::string, std::int32_t, Hash, std::equal_to<>>;

  void append_word(std::string_view word, std::vector<std::int32_t>* ids) const;

  Table starts_;         // every token, as it may open a word
  Table continuations_;  // "##" tokens without their "##", as they may continue one
  std::size_t longest_start_ = 0, longest_continuation_ = 0;
  std::int32_t cls_id_, sep_id_, unk_id_;
  std::size_t max_tokens_;
  bool latin_;
  std::vector<std::string> literals_;             // as given: matched in the raw text
  std::vector<std::string> normalized_literals_;  // normalized: matched in the normalized text
};

}  // namespace polarmem
