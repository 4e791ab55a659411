// UTF-8 as the library's Python code sees text: code points decoded leniently (a bad byte is one
// U+FFFD, surrogates pass through, since the library encodes with surrogatepass) and Python's
// own notion of whitespace. Shared by the text parse and the fact-checked context.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

namespace polarmem::utf8 {

// One decoded character of UTF-8 text: its code point (or 0xFFFD for a bad byte) and length.
inline std::pair<char32_t, std::size_t> next_char(std::string_view s, std::size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  std::size_t length = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 1;
  if (i + length > s.size()) length = 1;
  if (length == 1) return {c < 0x80 ? c : 0xFFFD, 1};
  char32_t cp = c & (0x7F >> length);
  for (std::size_t k = 1; k < length; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  return {cp, length};
}

// What Python's str.isspace() (and so a regex's \s, str.split() and str.strip()) calls whitespace.
inline bool is_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

// `s` without the whitespace (is_space) at its end, or at both ends: Python's str.rstrip() / strip().
inline std::string_view strip_end(std::string_view s) {
  std::size_t end = 0;  // one past the last non-space character
  for (std::size_t i = 0; i < s.size();) {
    const auto [c, length] = next_char(s, i);
    i += length;
    if (!is_space(c)) end = i;
  }
  return s.substr(0, end);
}

inline std::string_view strip(std::string_view s) {
  s = strip_end(s);
  std::size_t start = 0;
  while (start < s.size()) {
    const auto [c, length] = next_char(s, start);
    if (!is_space(c)) break;
    start += length;
  }
  return s.substr(start);
}

// Whether `s` shows nothing: empty, or only whitespace (is_space) and the format characters that
// show nothing though str.strip() keeps them (zero-width space, non-joiner and joiner, word
// joiner, the BOM). A note or a question of these has no words: the servers refuse them as text.
inline bool shows_nothing(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const auto [c, length] = next_char(s, i);
    i += length;
    if (!is_space(c) && !(c >= 0x200B && c <= 0x200D) && c != 0x2060 && c != 0xFEFF) return false;
  }
  return true;
}

inline void append(char32_t c, std::string* out) {  // surrogates too: the library passes them through
  if (c < 0x80) {
    out->push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (c >> 6)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (c >> 12)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (c >> 18)));
    out->push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

}  // namespace polarmem::utf8
