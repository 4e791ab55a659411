#include "polarmem/wordpiece.hpp"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <utility>

#include "polarmem/error.hpp"

namespace polarmem {

namespace {

constexpr std::string_view kContinuation = "##";
constexpr std::size_t kMaxWordChars = 100;  // WordPiece's max_input_chars_per_word
// A thread's normalized-text buffer is kept between calls unless a long text grew it past this.
constexpr std::size_t kKeptBuffer = 1 << 16;

// What HF's normalizer and pre-tokenizer make of a code point of U+0080..U+10FFFF.
enum Kind : std::uint8_t {
  kKept,             // left as it is, part of a word
  kPunctuation,      // left as it is, a word of its own
  kDropped,          // removed: a control, format or private use character, or an accent stripped
  kPadded,           // a CJK ideograph HF sets apart with spaces (handle_chinese_chars)
  kHangulSyllable,   // its conjoining jamo, as NFD makes them
  kMapped,           // its own normalized text, in kMappedChars
  kDeclined,         // HF's answer depends on more than the character, or it is not a scalar value
};
struct MappedChar {
  const char* normalized;  // UTF-8
  bool punctuation;
};
// The code points from `first` to the next run's first; a kMapped run's are kMappedChars[mapped...].
struct Run {
  char32_t first;
  Kind kind;
  std::uint16_t mapped;
};
// The table generated from HF tokenizers by tests/wordpiece_tables.py for every code point past
// ASCII (kRuns, in code point order, ending with a kDeclined run from U+110000: past Unicode).
#include "wordpiece_tables.inc"

// The run holding code point c (at least U+0080).
const Run& run_of(char32_t c) {
  return *(std::upper_bound(std::begin(kRuns), std::end(kRuns), c,
                            [](char32_t code, const Run& run) { return code < run.first; }) -
           1);
}

const MappedChar& mapped(const Run& run, char32_t c) { return kMappedChars[run.mapped + (c - run.first)]; }

// A Hangul syllable, which NFD decomposes by Unicode's arithmetic into its conjoining jamo
// (leading consonant, vowel, and a trailing consonant unless it has none).
constexpr char32_t kHangulFirst = 0xAC00;

void append_utf8(char32_t c, std::string* out) {  // a code point of U+0800..U+FFFF: three bytes
  out->push_back(static_cast<char>(0xE0 | (c >> 12)));
  out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
  out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
}

void append_jamo(char32_t syllable, std::string* out) {
  const char32_t index = syllable - kHangulFirst;
  append_utf8(0x1100 + index / 588, out);         // leading consonant: 19 of them
  append_utf8(0x1161 + (index % 588) / 28, out);  // vowel: 21
  if (index % 28 != 0) append_utf8(0x11A7 + index % 28, out);  // trailing consonant: 27, or none
}

// The code point and length of the UTF-8 sequence at text[i] when the tokenizer covers it: two
// bytes (lead 0xC2-0xDF: U+0080..U+07FF), three (U+0800..U+FFFF) or four (lead 0xF0-0xF4:
// U+10000..U+10FFFF); {0, 0} otherwise: a truncated or overlong form, a surrogate, past U+10FFFF,
// or a declined character.
std::pair<char32_t, std::size_t> covered_at(std::string_view text, std::size_t i) {
  const auto lead = static_cast<unsigned char>(text[i]);
  const auto continues = [&](std::size_t at) {
    return at < text.size() && (static_cast<unsigned char>(text[at]) & 0xC0) == 0x80;
  };
  char32_t cp = 0;
  std::size_t length = 0;
  if (lead >= 0xC2 && lead <= 0xDF && continues(i + 1)) {
    cp = (static_cast<char32_t>(lead & 0x1F) << 6) | (static_cast<unsigned char>(text[i + 1]) & 0x3F);
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF && continues(i + 1) && continues(i + 2)) {
    cp = (static_cast<char32_t>(lead & 0x0F) << 12) |
         (static_cast<char32_t>(static_cast<unsigned char>(text[i + 1]) & 0x3F) << 6) |
         (static_cast<unsigned char>(text[i + 2]) & 0x3F);
    length = 3;
    if (cp < 0x800) return {0, 0};  // overlong: not UTF-8
  } else if (lead >= 0xF0 && lead <= 0xF4 && continues(i + 1) && continues(i + 2) && continues(i + 3)) {
    cp = (static_cast<char32_t>(lead & 0x07) << 18) |
         (static_cast<char32_t>(static_cast<unsigned char>(text[i + 1]) & 0x3F) << 12) |
         (static_cast<char32_t>(static_cast<unsigned char>(text[i + 2]) & 0x3F) << 6) |
         (static_cast<unsigned char>(text[i + 3]) & 0x3F);
    length = 4;
    if (cp < 0x10000) return {0, 0};  // overlong: not UTF-8 (past U+10FFFF the table declines)
  }
  return length != 0 && WordPieceTokenizer::covers(cp) ? std::pair<char32_t, std::size_t>{cp, length}
                                                       : std::pair<char32_t, std::size_t>{0, 0};
}

// HF's is_punctuation: char::is_ascii_punctuation, so $ + < = > ^ ` | ~ too, and Unicode's
// punctuation categories (the table's: \u00a1 \u00a7 \u00ab \u00b6 \u00b7 \u00bb \u00bf, the
// dashes, curly quotes and ellipsis of U+2010..U+205E, ...).
bool is_punctuation(char32_t c) {
  if (c >= 0x80) {
    const Run& run = run_of(c);
    return run.kind == kPunctuation || (run.kind == kMapped && mapped(run, c).punctuation);
  }
  return (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126);
}

// The code point at s[i] of a normalized text (ASCII or a covered sequence) and its length.
std::pair<char32_t, std::size_t> code_point(std::string_view s, std::size_t i) {
  if (static_cast<unsigned char>(s[i]) < 0x80) return {static_cast<unsigned char>(s[i]), 1};
  return covered_at(s, i);
}

// BertNormalizer: clean_text drops NUL and every control character but \t \n \r (DEL
// included: it is Cc), which are whitespace and become ' ' like ' ' itself; lowercase. Beyond
// ASCII the table says what it makes of each code point (accents and other combining marks
// stripped, Unicode lower case, other whitespace ' ', control, format and private use characters
// dropped, CJK ideographs set apart by spaces, Hangul syllables made jamo). False for a text it
// declines.
bool normalize(std::string_view text, std::string* out) {
  out->clear();
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (static_cast<unsigned char>(c) >= 0x80) {
      const auto [cp, length] = covered_at(text, i);
      if (length == 0) return false;
      const Run& run = run_of(cp);
      switch (run.kind) {
        case kKept:
        case kPunctuation: out->append(text.substr(i, length)); break;
        case kDropped: break;
        case kPadded:
          out->push_back(' ');
          out->append(text.substr(i, length));
          out->push_back(' ');
          break;
        case kHangulSyllable: append_jamo(cp, out); break;
        case kMapped: out->append(mapped(run, cp).normalized); break;
        case kDeclined: return false;
      }
      i += length - 1;
    } else if (c == '\t' || c == '\n' || c == '\r') {
      out->push_back(' ');
    } else if (c >= 32 && c != 127) {
      out->push_back(c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c);
    }
  }
  return true;
}

// WordPiece's length of a word: characters, not bytes.
std::size_t characters(std::string_view word) {
  return static_cast<std::size_t>(
      std::count_if(word.begin(), word.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

}  // namespace

bool WordPieceTokenizer::covers(char32_t c) { return c < 0x80 || run_of(c).kind != kDeclined; }

WordPieceTokenizer::WordPieceTokenizer(std::vector<std::string> vocabulary, std::int32_t cls_id, std::int32_t sep_id,
                                       std::int32_t unk_id, std::size_t max_tokens,
                                       std::vector<std::string> declined_literals, bool latin)
    : cls_id_(cls_id), sep_id_(sep_id), unk_id_(unk_id), max_tokens_(max_tokens), latin_(latin) {
  const auto size = static_cast<std::int64_t>(vocabulary.size());
  for (std::int32_t id : {cls_id, sep_id, unk_id}) {
    if (id < 0 || id >= size) {
      fail(ErrorCode::kInvalidArgument,
           "special token id " + std::to_string(id) + " outside the vocabulary of " + std::to_string(size));
    }
  }
  if (max_tokens < 2) fail(ErrorCode::kInvalidArgument, "max_tokens must leave room for [CLS] and [SEP]");
  starts_.reserve(vocabulary.size());
  for (std::size_t id = 0; id < vocabulary.size(); ++id) {
    std::string& token = vocabulary[id];
    if (token.empty()) continue;
    const auto value = static_cast<std::int32_t>(id);
    if (token.size() > kContinuation.size() && token.compare(0, kContinuation.size(), kContinuation) == 0) {
      std::string rest = token.substr(kContinuation.size());
      longest_continuation_ = std::max(longest_continuation_, rest.size());
      continuations_.emplace(std::move(rest), value);
    }
    longest_start_ = std::max(longest_start_, token.size());
    starts_.emplace(std::move(token), value);
  }
  // An empty literal would match everywhere.
  for (auto& literal : declined_literals) {
    if (literal.empty()) continue;
    // An added token HF matches after normalizing ("normalized": true) is found in the
    // normalized text; one it matches before, in the raw text. Both are checked, as the
    // tokenizer.json flag is not passed in: declining too often only costs a fallback.
    std::string normalized;
    if (normalize(literal, &normalized) && !normalized.empty()) normalized_literals_.push_back(std::move(normalized));
    literals_.push_back(std::move(literal));
  }
}

bool WordPieceTokenizer::encode(std::string_view text, std::vector<std::int32_t>* ids) const {
  for (const auto& literal : literals_) {
    if (text.find(literal) != std::string_view::npos) return false;
  }
  if (!latin_ && std::any_of(text.begin(), text.end(), [](char c) { return static_cast<unsigned char>(c) >= 0x80; }))
    return false;
  thread_local std::string normalized;
  if (!normalize(text, &normalized)) return false;
  for (const auto& literal : normalized_literals_) {
    if (normalized.find(literal) != std::string::npos) return false;
  }

  ids->clear();
  ids->push_back(cls_id_);
  const std::size_t room = max_tokens_ - 1;  // [SEP] comes last
  const std::string_view s = normalized;
  std::size_t i = 0;
  // Words after the truncation point cannot change the pieces before it.
  while (i < s.size() && ids->size() < room) {
    const auto [c, length] = code_point(s, i);
    if (c == ' ') {
      ++i;
    } else if (is_punctuation(c)) {
      append_word(s.substr(i, length), ids);
      i += length;
    } else {
      std::size_t end = i + length;
      while (end < s.size()) {
        const auto [next, next_length] = code_point(s, end);
        if (next == ' ' || is_punctuation(next)) break;
        end += next_length;
      }
      append_word(s.substr(i, end - i), ids);
      i = end;
    }
  }
  if (ids->size() > room) ids->resize(room);
  ids->push_back(sep_id_);
  if (normalized.capacity() > kKeptBuffer) std::string().swap(normalized);
  return true;
}

// Greedy longest match first, as HF's WordPiece: a word that does not split into known pieces
// entirely is one [UNK]. A piece longer than the vocabulary's longest token is never tried.
void WordPieceTokenizer::append_word(std::string_view word, std::vector<std::int32_t>* ids) const {
  if (word.size() > kMaxWordChars && characters(word) > kMaxWordChars) {
    ids->push_back(unk_id_);
    return;
  }
  const std::size_t before = ids->size();
  std::size_t start = 0;
  while (start < word.size()) {
    const Table& table = start == 0 ? starts_ : continuations_;
    const std::size_t longest = start == 0 ? longest_start_ : longest_continuation_;
    std::size_t end = std::min(word.size(), start + longest);
    Table::const_iterator found = table.end();
    for (; end > start; --end) {
      found = table.find(word.substr(start, end - start));
      if (found != table.end()) break;
    }
    if (found == table.end()) {
      ids->resize(before);
      ids->push_back(unk_id_);
      return;
    }
    ids->push_back(found->second);
    start = end;
  }
}

}  // namespace polarmem
