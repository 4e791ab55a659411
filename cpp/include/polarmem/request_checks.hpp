// The words of a refused request field, written once: the core's Recall (cpp/front/
// namespace_view.cpp, for the front and the library alike) states every refusal with them, and
// the library's writes check the item fields they share with a Recall (vectors, metadata,
// concept names) by the same functions through the binding (domain/items.py). Each returns what
// is wrong, naming the field and the fix, or "" when nothing is.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace polarmem::checks {

// A value echoed in a message is cut to this many characters (errors.py's MAX_QUOTED_CHARS, which
// imports nothing: tests/unit/test_request_checks.py holds the two equal): messages travel in
// gRPC trailers, which have a size limit.
inline constexpr std::size_t kMaxQuotedChars = 80;

// A refusal's message is cut to this many characters, with an ellipsis (api/server.py cuts every
// other status message to it too: MAX_STATUS_MESSAGE_CHARS): a request naming 20,000 characters
// must get its INVALID_ARGUMENT, not a transport error for trailers past their limit.
inline constexpr std::size_t kMaxMessageChars = 400;
std::string cut_message(std::string message);

// Python's repr() of a str given as UTF-8 ('dog', "it's", '\n' escaped), cut to kMaxQuotedChars
// characters with an ellipsis, as the library quotes a client's value.
std::string quoted(std::string_view utf8);
// Python's repr() of a float: the shortest digits that read back, "nan", "inf", "1e+16", "1.0".
std::string float_repr(double value);

// `field` must be an integer in [low, high]; `value` is what was given.
std::string count_problem(std::string_view field, std::int64_t value, std::int64_t low, std::int64_t high);

// `values` (`count` floats, given as `shape`) for vector space `space` of width `dim`, under
// `where` ("vectors"): one vector of `dim` values, or with `rows` (a multi-vector space's item)
// (rows, dim) or (dim,); finite, and no vector all zeros.
std::string vector_problem(std::string_view where, std::string_view space, std::size_t dim, bool rows,
                           const std::vector<std::size_t>& shape, const float* values, std::size_t count);
// A vector for a space the namespace lacks (`spaces`: the names it has, in order).
std::string unknown_space(std::string_view where, std::string_view space, const std::vector<std::string>& spaces);

// An item id: 1 to this many bytes of UTF-8 without NUL (domain/items.py check_item_id words the
// refusal; a note the core stores itself is held to the same bound, cpp/front/note_remember.cpp).
inline constexpr std::size_t kMaxItemIdBytes = 256;

// Metadata (key, value) pairs under `where`: within the MAX_METADATA_* limits below.
inline constexpr std::size_t kMaxMetadataKeys = 256;
inline constexpr std::size_t kMaxMetadataKeyBytes = 256;
inline constexpr std::size_t kMaxMetadataValueBytes = 64 * 1024;
inline constexpr std::size_t kMaxMetadataTotalBytes = 256 * 1024;  // every key and value, UTF-8
std::string metadata_problem(std::string_view where, const std::vector<std::pair<std::string, std::string>>& pairs);

// A concept name under `where` must have a letter or digit (a non-empty normal form).
std::string concept_name_problem(std::string_view where, std::string_view name);

// A query left with nothing to rank by; `skipped`: the unknown concept names it skipped.
std::string empty_query(std::vector<std::string> skipped);

// Explicit names of `field` ("required" / "forbidden") the vocabulary of `ns` lacks, each with
// the closest known names (`suggestions`, best first), and how to recall without them.
std::string unknown_concepts(std::string_view field, const std::vector<std::string>& unknown,
                             const std::vector<std::vector<std::string>>& suggestions, std::string_view ns);

}  // namespace polarmem::checks
