#include "polarmem/wordpiece.hpp"

#include <algorithm>

#include "polarmem/error.hpp"

namespace polarmem {

namespace {

constexpr std::string_view kContinuation = "##";
constexpr std::size_t kMaxWordChars = 100;  // WordPiece's max_input_chars_per_word
// A thread's normalized-text buffer is kept between calls unless a long text grew it past this.
constexpr std::size_t kKeptBuffer = 1 << 16;

bool is_ascii(std::string_view text) {
  return std::none_of(text.begin(), text.end(), [](char c) { return static_cast<unsigned char>(c) >= 0x80; });
}

// HF's is_punctuation on ASCII: char::is_ascii_punctuation, so $ + < = > ^ ` | ~ too.
bool is_punctuation(char c) {
  return (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126);
}

// BertNormalizer on ASCII: clean_text drops NUL and every control character but \t \n \r (DEL
// included: it is Cc), which are whitespace and become ' ' like ' ' itself; lowercase.
void normalize(std::string_view text, std::string* out) {
  out->clear();
  for (char c : text) {
    if (c == '\t' || c == '\n' || c == '\r') {
      out->push_back(' ');
    } else if (c >= 32 && c != 127) {
      out->push_back(c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c);
    }
  }
}

}  // namespace

WordPieceTokenizer::WordPieceTokenizer(std::vector<std::string> vocabulary, std::int32_t cls_id, std::int32_t sep_id,
                                       std::int32_t unk_id, std::size_t max_tokens,
                                       std::vector<std::string> declined_literals)
    : cls_id_(cls_id), sep_id_(sep_id), unk_id_(unk_id), max_tokens_(max_tokens) {
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
  // A non-ASCII literal never occurs in accepted text; an empty one would match everywhere.
  for (auto& literal : declined_literals) {
    if (literal.empty() || !is_ascii(literal)) continue;
    // An added token HF matches after normalizing ("normalized": true) is found in the
    // normalized text; one it matches before, in the raw text. Both are checked, as the
    // tokenizer.json flag is not passed in: declining too often only costs a fallback.
    std::string normalized;
    normalize(literal, &normalized);
    if (!normalized.empty()) normalized_literals_.push_back(std::move(normalized));
    literals_.push_back(std::move(literal));
  }
}

bool WordPieceTokenizer::encode(std::string_view text, std::vector<std::int32_t>* ids) const {
  if (!is_ascii(text)) return false;
  for (const auto& literal : literals_) {
    if (text.find(literal) != std::string_view::npos) return false;
  }
  thread_local std::string normalized;
  normalize(text, &normalized);
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
    if (s[i] == ' ') {
      ++i;
    } else if (is_punctuation(s[i])) {
      append_word(s.substr(i, 1), ids);
      ++i;
    } else {
      std::size_t end = i + 1;
      while (end < s.size() && s[end] != ' ' && !is_punctuation(s[end])) ++end;
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
  if (word.size() > kMaxWordChars) {
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
