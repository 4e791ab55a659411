#include "polarmem/request_checks.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "polarmem/text_parse.hpp"
#include "polarmem/utf8.hpp"

namespace polarmem::checks {

namespace {

// Characters Python's repr() escapes beyond the ASCII controls: the C1 controls, and the
// separators and format characters a message reader could not see (str.isprintable() is false).
bool unprintable(char32_t c) {
  return c < 0x20 || (c >= 0x7F && c <= 0xA0) || c == 0xAD || c == 0x1680 || (c >= 0x2000 && c <= 0x200F) ||
         (c >= 0x2028 && c <= 0x202F) || (c >= 0x205F && c <= 0x2064) || c == 0x3000 || c == 0xFEFF ||
         (c >= 0xD800 && c <= 0xDFFF);
}

std::string hex_escape(char32_t c) {
  char buffer[12];
  if (c <= 0xFF) {
    std::snprintf(buffer, sizeof buffer, "\\x%02x", static_cast<unsigned>(c));
  } else if (c <= 0xFFFF) {
    std::snprintf(buffer, sizeof buffer, "\\u%04x", static_cast<unsigned>(c));
  } else {
    std::snprintf(buffer, sizeof buffer, "\\U%08x", static_cast<unsigned>(c));
  }
  return buffer;
}

// The first `limit` characters of `utf8`.
std::string_view first_chars(std::string_view utf8, std::size_t limit) {
  std::size_t i = 0;
  for (std::size_t n = 0; i < utf8.size() && n < limit; ++n) i += utf8::next_char(utf8, i).second;
  return utf8.substr(0, i);
}

std::string repr(std::string_view utf8) {
  const bool double_quotes = utf8.find('\'') != std::string_view::npos && utf8.find('"') == std::string_view::npos;
  const char quote = double_quotes ? '"' : '\'';
  std::string out(1, quote);
  for (std::size_t i = 0; i < utf8.size();) {
    const auto [c, length] = utf8::next_char(utf8, i);
    i += length;
    if (c == '\\' || c == static_cast<char32_t>(quote)) {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (unprintable(c)) {
      out += hex_escape(c);
    } else {
      utf8::append(c, &out);
    }
  }
  out += quote;
  return out;
}

// `text` cut to `limit` characters, with an ellipsis where it was longer.
std::string cut(std::string text, std::size_t limit) {
  const auto kept = first_chars(text, limit);
  return kept.size() == text.size() ? text : std::string(kept) + "\xE2\x80\xA6";  // …
}

std::string shape_repr(const std::vector<std::size_t>& shape) {
  std::string out = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + (shape.size() == 1 ? ",)" : ")");
}

std::string indexed(std::string_view where, std::string_view space) {
  return std::string(where) + "[" + quoted(space) + "]";
}

// " (did you mean 'dog'?)" / " (did you mean 'dog', 'hot dog' or 'dogs'?)", or "".
std::string did_you_mean(const std::vector<std::string>& close) {
  if (close.empty()) return "";
  std::string listed;
  for (std::size_t i = 0; i < close.size(); ++i) {
    if (i > 0) listed += i + 1 == close.size() ? " or " : ", ";
    listed += repr(close[i]);
  }
  return " (did you mean " + listed + "?)";
}

}  // namespace

std::string quoted(std::string_view utf8) { return cut(repr(utf8), kMaxQuotedChars); }

std::string cut_message(std::string message) { return cut(std::move(message), kMaxMessageChars); }

std::string float_repr(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char buffer[64];
  const auto written = std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::scientific).ptr;
  // "-d.ddde+XX": the shortest digits that read back, and the exponent
  const std::string_view text(buffer, static_cast<std::size_t>(written - buffer));
  const auto e = text.find('e');
  const bool negative = text[0] == '-';
  std::string digits;
  for (const char c : text.substr(negative ? 1 : 0, e - (negative ? 1 : 0)))
    if (c != '.') digits += c;
  const int exponent = std::stoi(std::string(text.substr(e + 1)));
  const int point = exponent + 1;  // digits before the decimal point
  std::string out = negative ? "-" : "";
  if (point > 16 || point < -3) {  // Python's repr switches to an exponent here
    out.append(digits, 0, 1);
    if (digits.size() > 1) out.append(".").append(digits, 1, std::string::npos);
    char power[16];
    std::snprintf(power, sizeof power, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    return out.append(power);
  }
  if (point <= 0) return out.append("0.").append(static_cast<std::size_t>(-point), '0').append(digits);
  const auto whole = static_cast<std::size_t>(point);
  if (digits.size() <= whole) return out.append(digits).append(whole - digits.size(), '0').append(".0");
  return out.append(digits, 0, whole).append(".").append(digits, whole, std::string::npos);
}

std::string count_problem(std::string_view field, std::int64_t value, std::int64_t low, std::int64_t high) {
  if (value >= low && value <= high) return "";
  return std::string(field) + " must be >= " + std::to_string(low) + " and <= " + std::to_string(high) +
         " (an integer), got " + std::to_string(value);
}

std::string vector_problem(std::string_view where, std::string_view space, std::size_t dim, bool rows,
                           const std::vector<std::size_t>& shape, const float* values, std::size_t count) {
  const std::string named = indexed(where, space);
  if (!rows && count != dim) {
    return named + ": expected dimension " + std::to_string(dim) + ", got " + std::to_string(count);
  }
  if (rows && (shape.empty() || shape.back() != dim || shape.size() > 2)) {
    return named + ": expected dimension " + std::to_string(dim) + ", got shape " + shape_repr(shape);
  }
  for (std::size_t i = 0; i < count; ++i) {
    if (!std::isfinite(values[i])) return named + ": has a NaN or infinite value; send finite floats";
  }
  // one vector, or each row of a multi-vector item's
  const std::size_t width = rows ? dim : count;
  for (std::size_t start = 0; width > 0 && start < count; start += width) {
    bool direction = false;
    for (std::size_t i = start; i < start + width && !direction; ++i) direction = values[i] != 0.0f;
    if (!direction) return named + ": a vector is all zeros and has no direction; send non-zero vectors";
  }
  return "";
}

std::string unknown_space(std::string_view where, std::string_view space, const std::vector<std::string>& spaces) {
  std::string listed;
  for (const auto& name : spaces) listed += (listed.empty() ? "" : ", ") + name;
  return std::string(where) + ": unknown vector space " + quoted(space) + " (namespace has: " + listed + ")";
}

std::string metadata_problem(std::string_view where, const std::vector<std::pair<std::string, std::string>>& pairs) {
  const std::string field(where);
  if (pairs.size() > kMaxMetadataKeys) {
    return field + ": at most " + std::to_string(kMaxMetadataKeys) + " keys per item (MAX_METADATA_KEYS), got " +
           std::to_string(pairs.size()) + "; keep bulky data in the item's text or behind its uri";
  }
  std::size_t total = 0;
  for (const auto& [key, value] : pairs) {
    const auto shown = [&key] { return quoted(first_chars(key, 64)); };  // (only when refused)
    if (key.size() > kMaxMetadataKeyBytes) {
      return field + ": key " + shown() + " may hold at most " + std::to_string(kMaxMetadataKeyBytes) +
             " bytes (MAX_METADATA_KEY_BYTES), got " + std::to_string(key.size());
    }
    if (value.size() > kMaxMetadataValueBytes) {
      return field + "[" + shown() + "]: a value may hold at most " + std::to_string(kMaxMetadataValueBytes) +
             " bytes (MAX_METADATA_VALUE_BYTES), got " + std::to_string(value.size());
    }
    total += key.size() + value.size();
  }
  if (total > kMaxMetadataTotalBytes) {
    return field + ": keys and values together may hold at most " + std::to_string(kMaxMetadataTotalBytes) +
           " bytes (MAX_METADATA_TOTAL_BYTES), got " + std::to_string(total);
  }
  return "";
}

std::string concept_name_problem(std::string_view where, std::string_view name) {
  if (!text::normalise_name(name).empty()) return "";
  return std::string(where) + ": concept name " + quoted(name) + " has no letters or digits";
}

std::string empty_query(std::vector<std::string> skipped) {
  std::sort(skipped.begin(), skipped.end());
  skipped.erase(std::unique(skipped.begin(), skipped.end()), skipped.end());
  std::string listed;
  for (const auto& name : skipped) listed += (listed.empty() ? "" : ", ") + name;
  return "query is empty" + (listed.empty() ? "" : " (unknown concepts skipped: " + listed + ")") +
         ": give text, vectors, or required / forbidden concepts";
}

std::string unknown_concepts(std::string_view field, const std::vector<std::string>& unknown,
                             const std::vector<std::vector<std::string>>& suggestions, std::string_view ns) {
  std::string listed;
  for (std::size_t i = 0; i < unknown.size(); ++i) {
    listed += (i ? ", " : "") + quoted(unknown[i]);
    if (i < suggestions.size()) listed += did_you_mean(suggestions[i]);
  }
  const bool one = unknown.size() == 1;
  return std::string(field) + ": " + listed + (one ? " is" : " are") + " not in the vocabulary of namespace " +
         repr(ns) + "; fix the name, or set allow_unknown_concepts to recall without " + (one ? "it" : "them");
}

}  // namespace polarmem::checks
