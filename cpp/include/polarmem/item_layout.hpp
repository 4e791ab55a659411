// The local store's item layout: the keys an item write puts in each column family and the
// compact index record beside each ItemRecord, in one place for every writer (the Python store
// today, a native Remember next: docs/fast-front.md "What is left").
//
// Keys (`ns` is the namespace name, \0 separates key parts):
//   items    ns \0 item_id                      ItemRecord (protobuf)
//   index    ns \0 item_id                      the compact index record below
//   vectors  ns \0 item_id \0 space             u32 row count + float32 rows (little-endian)
//   edges    ns \0 H|N|A concept(u32 BE) id      empty: the HAS / NOT_HAS / ALIGN postings
//   concepts ns \0 concept(u32 BE)              ConceptRecord (id = 1, name = 2)
//
// The index record repeats what rebuilding the in-memory index needs of an item, so a start-up
// reads a few dozen bytes per item instead of a whole ItemRecord (little-endian):
//   u8 layout (2)  u8 item kind  u16 flags (bit 0: partitioned by a posterior, "calibrated")
//   u32 n_has  u32 n_not_has  u32 n_align  u32 n_scored (evidence entries with scores)
//   u32 x (n_has + n_not_has + n_align): HAS, then NOT_HAS, then ALIGN concept ids
//   u32 x n_scored: the scored concepts' ids; f32 x n_scored: their mean scores (layout 2)
//   per metadata entry, in key order: u32 key length, key, u32 value length, value (UTF-8)
// Layout 1 (written before confidence grades) lacks the scored ids and means; it is still read.
//
// The fields come from the serialised ItemRecord itself (a reader of the few fields the layout
// needs), so a writer hands over the bytes it stores and nothing else.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "polarmem/kv_store.hpp"

namespace polarmem::layout {

constexpr std::uint8_t kIndexLayout = 2;
constexpr std::uint16_t kFlagPosterior = 1;

// What the index needs of one item.
struct IndexFields {
  std::uint8_t kind = 0;  // storage ItemKind
  bool posterior = false;
  std::vector<std::uint32_t> has, not_has, align;  // evidence order; align: the text's mentions
  std::uint32_t scored = 0;                        // evidence entries with scores
  std::vector<std::uint32_t> scored_ids;           // layout 2: the scored concepts, evidence order
  std::vector<float> scored_means;
  std::vector<std::pair<std::string, std::string>> metadata;  // by key
};

struct ItemFields {
  std::string id;
  IndexFields index;
};

// The id and index fields of a serialised ItemRecord. Bytes that are not a well-formed
// ItemRecord raise kInvalidArgument.
ItemFields read_item(std::string_view item_record);

std::string encode_index_record(const IndexFields& fields);
// Layouts 1 and 2; any other raises kFailedPrecondition, a truncated record kInvalidArgument.
IndexFields decode_index_record(std::string_view record);

std::string item_key(std::string_view ns, std::string_view item_id);
std::string vector_key(std::string_view ns, std::string_view item_id, std::string_view space);
std::string concept_key(std::string_view ns, std::uint32_t concept_id);

// A space's vectors as stored: `rows` x `dim` floats.
struct VectorRows {
  std::string space;
  const float* data = nullptr;
  std::size_t rows = 0;
  std::size_t dim = 0;
};

// One item's write, added to `batch`: its record, index record, vectors and edges. `previous`
// (the stored record it replaces, empty for a new item) has its edges removed, and its vectors
// in `previous_spaces` that `vectors` does not replace are deleted. Returns the index record.
std::string put_item(KvBatch& batch, std::string_view ns, std::string_view item_record,
                     const std::vector<VectorRows>& vectors, std::string_view previous = {},
                     const std::vector<std::string>& previous_spaces = {});

// A concept's record (ConceptRecord: its id and name) under concept_key.
void put_concept(KvBatch& batch, std::string_view ns, std::uint32_t concept_id, std::string_view name);

// An item's removal: record, index record, its vectors in `spaces` and its edges.
void remove_item(KvBatch& batch, std::string_view ns, std::string_view item_record,
                 const std::vector<std::string>& spaces);

}  // namespace polarmem::layout
