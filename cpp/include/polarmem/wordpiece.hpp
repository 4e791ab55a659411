// BERT's uncased WordPiece tokenization, exactly as the Hugging Face `tokenizers` library runs a
// tokenizer.json of BertNormalizer (clean_text, lowercase, accents stripped), BertPreTokenizer,
// WordPiece ("##" continuations, [UNK] past 100 characters) and the template [CLS] A [SEP],
// truncated to max_tokens. The compiled path tokenizes a query with it, so the library and the
// compiled path give a text the same ids without Python.
//
// What it covers, each as HF does:
// - ASCII: NUL and control characters dropped, \t \n \r a space, A-Z lower-cased;
// - through tables generated from HF itself (cpp/src/wordpiece_tables.inc: accents and other
//   combining marks stripped, Unicode lower case, NBSP and the typographic spaces a space, the
//   soft hyphen and format characters dropped): U+0080..U+052F (Latin, IPA, Greek, Cyrillic:
//   "Zoë", "Łódź", "Αθήνα", "Москва"), U+0530..U+1FFF (Armenian, Hebrew, Arabic, Syriac, Thaana,
//   Devanagari and the other Indic scripts, Sinhala, Thai, Lao, Tibetan, Myanmar, Georgian,
//   Ethiopic, Khmer, Mongolian, Vietnamese letters, Greek Extended; a few two-part Indic vowel
//   signs become their two parts, as NFD splits them; round 29 past Devanagari, Thai and the
//   Hangul Jamo U+1100..U+11FF), U+2000..U+206F (General
//   Punctuation: "Maya’s — “done”…"), U+2070..U+2BFF (superscripts, currency "€", letterlike
//   "™", arrows, mathematical and technical symbols, shapes, dingbats "✓ ❤"), U+3000..U+318F (CJK
//   punctuation, kana with their voicing marks stripped, Bopomofo, Hangul Compatibility Jamo),
//   U+FE00..U+FE0F (variation selectors, stripped), U+FF00..U+FFEF (fullwidth forms), the rest
//   of the Basic Multilingual Plane but the surrogates, private use and the CJK compatibility
//   ideographs (Glagolitic, Coptic, Tifinagh, Yi, Vai, presentation forms...: round 29) and
//   U+1F000..U+1FAFF (emoji and pictographs: "🐶 👍🏽", round 29);
// - a Hangul syllable (U+AC00..U+D7A3) becomes its conjoining jamo, as NFD makes it;
// - the CJK ideographs of U+3400..U+4DBF and U+4E00..U+9FFF ("東京") are set apart by spaces, as
//   HF's handle_chinese_chars does, so each is a word of its own.
// The pre-tokenizer splits on spaces and makes every punctuation character a word of its own.
// Any other character (private use, the CJK compatibility ideographs, everything past the Basic
// Multilingual Plane but the emoji blocks), and capital sigma, whose HF answer depends on more
// than the character (final sigma), is declined, and so is a text
// containing an added token's content (HF splits "[CLS]" out as one token): encode() returns
// false and the caller asks the HF tokenizer.
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

  // False when the text holds a character outside the covered range or a declined literal (ids
  // untouched); otherwise ids holds [CLS], the first max_tokens - 2 word pieces and [SEP].
  bool encode(std::string_view text, std::vector<std::int32_t>* ids) const;

  // Whether code point `c` is one the tokenizer reproduces (ASCII, its tables' blocks, the CJK
  // ideographs, the Hangul syllables): a text with any other is declined.
  static bool covers(char32_t c);

  std::size_t max_tokens() const { return max_tokens_; }
  bool latin() const { return latin_; }

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
