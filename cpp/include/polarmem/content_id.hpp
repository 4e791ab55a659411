// The id the server gives an item sent without one: a hash of its kind, text, uri and content, so
// the same content remembered twice gets the same id (a retry is recognised, api/idempotency.py).
// An item with none of text, uri or content hashes `extra` too: what the library serialises of its
// vectors and evidence (domain/items.py content_id).
#pragma once

#include <string>
#include <string_view>

namespace polarmem {

// "h" + the first 31 hex digits of SHA-256 over each of kind, text, uri and content as an 8-byte
// little-endian length and its bytes, then `extra`.
std::string content_id(std::string_view kind, std::string_view text, std::string_view uri, std::string_view content,
                       std::string_view extra);

}  // namespace polarmem
