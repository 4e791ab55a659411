// A new item's record: the serialised polarmem.storage.v1.ItemRecord a Remember stores, built
// from the checked input — its fields, the client's (or the verifier's) evidence and, for a text
// item, what its own words say (text_evidence.hpp) — for every door that writes. Version 1,
// updated when created, no partition: the library partitions an item with scores afterwards
// (domain/evidence.py partition_record). The evidence of a record already stored is merged by the
// library (observe, a text edit, a concept backfill), by the same lexical rule (lexical_states).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "polarmem/text_evidence.hpp"

namespace polarmem::layout {

// Who produced an item's evidence when the client names no one (domain/items.py DEFAULT_SOURCE).
inline constexpr const char* kDefaultSource = "client";

struct NewItemRecord {
  std::string id;
  std::int32_t kind = 0;  // common/v1 ItemKind
  std::string text, uri;
  std::vector<std::pair<std::string, std::string>> metadata;
  std::string model, template_version;
  std::int64_t created_ms = 0;
  // The client's or the verifier's evidence by concept id, in the order given: template scores,
  // then asserted states (a state replaces the concept's scores), all from `source`.
  std::vector<std::pair<std::uint32_t, std::vector<float>>> scores;
  std::vector<std::pair<std::uint32_t, std::int32_t>> states;
  std::string source;
};

// How a text item's own words are read into its record: its mentions always, and with `lexical`
// a state per concept it states that no other evidence decides (text::lexical_states).
struct TextReading {
  const text::Vocabulary* vocabulary = nullptr;
  const text::TriggerTable* triggers = nullptr;
  bool lexical = false;
  bool word_mentions = false;  // an open vocabulary (text::text_evidence)
};

// The serialised record; `reading` null: the text is not read (not a text item, or no text).
std::string encode_new_item_record(const NewItemRecord& item, const TextReading* reading);

}  // namespace polarmem::layout
