// The item layout (item_layout.hpp): keys, the compact index record, and a reader of the few
// ItemRecord fields they need.
#include "polarmem/item_layout.hpp"

#include <algorithm>
#include <cstring>
#include <map>

#include "polarmem/error.hpp"
#include "polarmem/item_record_fields.hpp"
#include "polarmem/protobuf_wire.hpp"

namespace polarmem::layout {
namespace {

// ---- protobuf wire format: just what ItemRecord's layout fields need ----------------------------
// (tests/unit/test_item_layout.py checks this reader against the generated Python classes on
// random records).
using namespace fields;  // NOLINT(google-build-using-namespace): the record's field numbers
using WireReader = wire::Reader;
using wire::malformed;
struct Evidence {
  std::uint32_t concept_id = 0;
  std::uint64_t state = 0;
  std::size_t scores = 0;
  float mean = 0.0f;
};

Evidence read_evidence(std::string_view bytes) {
  Evidence ev;
  WireReader in(bytes);
  while (!in.done()) {
    const auto [field, type] = in.tag();
    if (field == kEvidenceConcept && type == kVarint) {
      ev.concept_id = static_cast<std::uint32_t>(in.varint());
    } else if (field == kEvidenceScores && type == kLength) {  // packed floats
      const std::string_view packed = in.bytes();
      if (packed.size() % 4) malformed("packed template_scores of a length not a multiple of 4");
      ev.scores += packed.size() / 4;
    } else if (field == kEvidenceScores && type == kFixed32) {
      in.fixed32();
      ev.scores += 1;
    } else if (field == kEvidenceMean && type == kFixed32) {
      ev.mean = in.fixed32_float();
    } else if (field == kEvidenceState && type == kVarint) {
      ev.state = static_cast<std::uint32_t>(in.varint());  // an enum: protobuf keeps the low 32 bits
    } else {
      in.skip(field, type);
    }
  }
  return ev;
}

// The partition's method where this occurrence of the message sets it (occurrences merge).
void read_method(std::string_view bytes, std::string* method) {
  WireReader in(bytes);
  while (!in.done()) {
    const auto [field, type] = in.tag();
    if (field == kPartitionMethod && type == kLength) *method = std::string(in.bytes());
    else in.skip(field, type);
  }
}

std::pair<std::string, std::string> read_map_entry(std::string_view bytes) {
  std::pair<std::string, std::string> entry;
  WireReader in(bytes);
  while (!in.done()) {
    const auto [field, type] = in.tag();
    if (field == kMapKey && type == kLength) entry.first = std::string(in.bytes());
    else if (field == kMapValue && type == kLength) entry.second = std::string(in.bytes());
    else in.skip(field, type);
  }
  return entry;
}

// ---- little-endian fixed-size fields of the index record ----------------------------------------

template <typename T>
void append(std::string& out, T value) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  out.append(bytes, sizeof(T));
}

template <typename T>
T take(std::string_view record, std::size_t& at) {
  if (at > record.size() || record.size() - at < sizeof(T))
    fail(ErrorCode::kInvalidArgument, "an index record is truncated");
  T value;
  std::memcpy(&value, record.data() + at, sizeof(T));
  at += sizeof(T);
  return value;
}

std::string with_ns(std::string_view ns, std::size_t extra) {
  std::string key;
  key.reserve(ns.size() + 1 + extra);
  key.append(ns);
  key.push_back('\0');
  return key;
}

void append_varint(std::string& out, std::uint64_t value) {
  for (; value >= 0x80; value >>= 7) out.push_back(static_cast<char>((value & 0x7f) | 0x80));
  out.push_back(static_cast<char>(value));
}

void append_big_endian(std::string& key, std::uint32_t value) {
  for (int shift = 24; shift >= 0; shift -= 8) key.push_back(static_cast<char>((value >> shift) & 0xff));
}

std::string edge_key(std::string_view ns, char polarity, std::uint32_t concept_id, std::string_view item_id) {
  std::string key = with_ns(ns, 5 + item_id.size());
  key.push_back(polarity);
  append_big_endian(key, concept_id);
  key.append(item_id);
  return key;
}

template <typename Visit>
void each_edge(const IndexFields& fields, Visit visit) {
  for (const auto c : fields.has) visit('H', c);
  for (const auto c : fields.not_has) visit('N', c);
  for (const auto c : fields.align) visit('A', c);
}

}  // namespace

ItemFields read_item(std::string_view item_record) {
  ItemFields out;
  IndexFields& f = out.index;
  std::map<std::string, std::string> metadata;  // a repeated key keeps its last value, as protobuf's maps do
  std::string method;
  WireReader in(item_record);
  while (!in.done()) {
    const auto [field, type] = in.tag();
    if (field == kItemId && type == kLength) {
      out.id = std::string(in.bytes());
    } else if (field == kItemKind && type == kVarint) {
      f.kind = static_cast<std::uint8_t>(in.varint());
    } else if (field == kItemMetadata && type == kLength) {
      auto entry = read_map_entry(in.bytes());
      metadata[std::move(entry.first)] = std::move(entry.second);
    } else if (field == kItemEvidence && type == kLength) {
      const Evidence ev = read_evidence(in.bytes());
      if (ev.state == kStateHas) f.has.push_back(ev.concept_id);
      if (ev.state == kStateNotHas) f.not_has.push_back(ev.concept_id);
      if (ev.scores > 0) {
        f.scored += 1;
        f.scored_ids.push_back(ev.concept_id);
        f.scored_means.push_back(ev.mean);
      }
    } else if (field == kItemPartition && type == kLength) {
      read_method(in.bytes(), &method);
    } else if (field == kItemMentions && type == kLength) {  // packed
      WireReader packed(in.bytes());
      while (!packed.done()) f.align.push_back(static_cast<std::uint32_t>(packed.varint()));
    } else if (field == kItemMentions && type == kVarint) {
      f.align.push_back(static_cast<std::uint32_t>(in.varint()));
    } else {
      in.skip(field, type);
    }
  }
  f.posterior = method == "calibrated";
  f.metadata.assign(metadata.begin(), metadata.end());
  return out;
}

std::string encode_index_record(const IndexFields& f) {
  std::string out;
  append<std::uint8_t>(out, kIndexLayout);
  append<std::uint8_t>(out, f.kind);
  append<std::uint16_t>(out, f.posterior ? kFlagPosterior : 0);
  append<std::uint32_t>(out, static_cast<std::uint32_t>(f.has.size()));
  append<std::uint32_t>(out, static_cast<std::uint32_t>(f.not_has.size()));
  append<std::uint32_t>(out, static_cast<std::uint32_t>(f.align.size()));
  append<std::uint32_t>(out, static_cast<std::uint32_t>(f.scored_ids.size()));
  for (const auto* ids : {&f.has, &f.not_has, &f.align, &f.scored_ids})
    for (const auto c : *ids) append<std::uint32_t>(out, c);
  for (const float m : f.scored_means) append<float>(out, m);
  for (const auto& [key, value] : f.metadata) {
    append<std::uint32_t>(out, static_cast<std::uint32_t>(key.size()));
    out.append(key);
    append<std::uint32_t>(out, static_cast<std::uint32_t>(value.size()));
    out.append(value);
  }
  return out;
}

IndexFields decode_index_record(std::string_view record) {
  IndexFields f;
  std::size_t at = 0;
  const auto version = take<std::uint8_t>(record, at);
  if (version != 1 && version != 2) {
    fail(ErrorCode::kFailedPrecondition,
         "index record layout " + std::to_string(version) + " is not readable by this server (reads 1, 2)");
  }
  f.kind = take<std::uint8_t>(record, at);
  f.posterior = (take<std::uint16_t>(record, at) & kFlagPosterior) != 0;
  const auto n_has = take<std::uint32_t>(record, at), n_not = take<std::uint32_t>(record, at);
  const auto n_align = take<std::uint32_t>(record, at);
  f.scored = take<std::uint32_t>(record, at);
  // Counts are checked against what the record holds before anything is reserved for them.
  const std::uint64_t graded = version >= 2 ? f.scored : 0;
  if ((std::uint64_t{n_has} + n_not + n_align + 2 * graded) * 4 > record.size() - at)
    fail(ErrorCode::kInvalidArgument, "an index record is truncated");
  for (auto [ids, count] : {std::pair{&f.has, n_has}, {&f.not_has, n_not}, {&f.align, n_align}}) {
    ids->reserve(count);
    for (std::uint32_t i = 0; i < count; ++i) ids->push_back(take<std::uint32_t>(record, at));
  }
  for (std::uint64_t i = 0; i < graded; ++i) f.scored_ids.push_back(take<std::uint32_t>(record, at));
  for (std::uint64_t i = 0; i < graded; ++i) f.scored_means.push_back(take<float>(record, at));
  while (at < record.size()) {
    std::string texts[2];
    for (std::string& text : texts) {
      const auto size = take<std::uint32_t>(record, at);
      if (size > record.size() - at) fail(ErrorCode::kInvalidArgument, "an index record is truncated");
      text.assign(record.data() + at, size);
      at += size;
    }
    f.metadata.emplace_back(std::move(texts[0]), std::move(texts[1]));
  }
  return f;
}

std::string item_key(std::string_view ns, std::string_view item_id) {
  std::string key = with_ns(ns, item_id.size());
  key.append(item_id);
  return key;
}

std::string vector_key(std::string_view ns, std::string_view item_id, std::string_view space) {
  std::string key = item_key(ns, item_id);
  key.push_back('\0');
  key.append(space);
  return key;
}

std::string concept_key(std::string_view ns, std::uint32_t concept_id) {
  std::string key = with_ns(ns, 4);
  append_big_endian(key, concept_id);
  return key;
}

std::string put_item(KvBatch& batch, std::string_view ns, std::string_view item_record,
                     const std::vector<VectorRows>& vectors, std::string_view previous,
                     const std::vector<std::string>& previous_spaces) {
  const ItemFields item = read_item(item_record);
  const std::string key = item_key(ns, item.id);
  if (!previous.empty()) {
    const ItemFields before = read_item(previous);
    each_edge(before.index,
              [&](char polarity, std::uint32_t c) { batch.remove("edges", edge_key(ns, polarity, c, before.id)); });
  }
  for (const std::string& space : previous_spaces) {
    const bool replaced =
        std::any_of(vectors.begin(), vectors.end(), [&](const VectorRows& v) { return v.space == space; });
    if (!replaced) batch.remove("vectors", vector_key(ns, item.id, space));
  }
  std::string index_record = encode_index_record(item.index);
  batch.put("items", key, item_record);
  batch.put("index", key, index_record);
  for (const VectorRows& v : vectors) {
    std::string value;
    value.reserve(4 + v.rows * v.dim * sizeof(float));
    append<std::uint32_t>(value, static_cast<std::uint32_t>(v.rows));
    value.append(reinterpret_cast<const char*>(v.data), v.rows * v.dim * sizeof(float));
    batch.put("vectors", vector_key(ns, item.id, v.space), value);
  }
  each_edge(item.index,
            [&](char polarity, std::uint32_t c) { batch.put("edges", edge_key(ns, polarity, c, item.id), ""); });
  return index_record;
}

void put_concept(KvBatch& batch, std::string_view ns, std::uint32_t concept_id, std::string_view name) {
  // ConceptRecord's wire format: field 1 (varint) the id, field 2 (bytes) the name; defaults (id
  // 0, no name) are left out, as protobuf's own serialiser leaves them.
  std::string record;
  if (concept_id != 0) {
    record.push_back('\x08');
    append_varint(record, concept_id);
  }
  if (!name.empty()) {
    record.push_back('\x12');
    append_varint(record, name.size());
    record.append(name);
  }
  batch.put("concepts", concept_key(ns, concept_id), record);
}

void remove_item(KvBatch& batch, std::string_view ns, std::string_view item_record,
                 const std::vector<std::string>& spaces) {
  const ItemFields item = read_item(item_record);
  const std::string key = item_key(ns, item.id);
  batch.remove("items", key);
  batch.remove("index", key);
  for (const std::string& space : spaces) batch.remove("vectors", vector_key(ns, item.id, space));
  each_edge(item.index,
            [&](char polarity, std::uint32_t c) { batch.remove("edges", edge_key(ns, polarity, c, item.id)); });
}

}  // namespace polarmem::layout
