#include "polarmem/new_item_record.hpp"

#include <algorithm>
#include <unordered_map>

#include "polarmem/item_record_fields.hpp"
#include "polarmem/protobuf_wire.hpp"

namespace polarmem::layout {

namespace {

using namespace fields;  // NOLINT(google-build-using-namespace): the record's field numbers
using WireWriter = wire::Writer;

struct Evidence {
  std::uint32_t concept_id = 0;
  std::vector<float> scores;
  std::int32_t state = 0;
  std::uint32_t observations = 0;
  std::string source;
};

// The item's evidence as the library's merge rule builds a new record's (module doc): scores,
// then states over them, then the text's lexical states where no other evidence decides.
std::vector<Evidence> evidence_of(const NewItemRecord& item, const text::TextEvidence* reading, bool lexical) {
  std::vector<Evidence> evidence;
  std::unordered_map<std::uint32_t, std::size_t> at;
  const auto entry = [&](std::uint32_t concept_id) -> Evidence& {
    const auto [found, added] = at.emplace(concept_id, evidence.size());
    if (added) evidence.push_back(Evidence{concept_id, {}, 0, 0, {}});
    return evidence[found->second];
  };
  for (const auto& [concept_id, scores] : item.scores) {
    Evidence& e = entry(concept_id);
    e.scores = scores;
    e.observations = 1;
    e.source = item.source;
  }
  for (const auto& [concept_id, state] : item.states) {
    const bool added = !at.count(concept_id);
    Evidence& e = entry(concept_id);
    e.scores.clear();
    e.state = state;
    e.observations = added ? 1 : e.observations + 1;
    e.source = item.source;
  }
  if (reading != nullptr && lexical) {
    std::vector<std::uint32_t> decided;
    for (const auto& e : evidence)
      if (e.source != "lexical") decided.push_back(e.concept_id);
    for (const auto& [concept_id, negated] : text::lexical_states(*reading, decided, nullptr)) {
      Evidence& e = entry(concept_id);
      e.state = static_cast<std::int32_t>(negated ? kStateNotHas : kStateHas);
      e.observations = 1;
      e.source = "lexical";
    }
  }
  return evidence;
}

}  // namespace

std::string encode_new_item_record(const NewItemRecord& item, const TextReading* reading) {
  text::TextEvidence read;
  if (reading != nullptr)
    read = text::text_evidence(item.text, *reading->vocabulary, *reading->triggers, reading->word_mentions);
  WireWriter out;
  out.bytes_field(kItemId, item.id);
  out.varint_field(kItemKind, static_cast<std::uint64_t>(static_cast<std::int64_t>(item.kind)));
  out.bytes_field(kItemText, item.text);
  out.bytes_field(kItemUri, item.uri);
  std::vector<std::pair<std::string, std::string>> metadata = item.metadata;
  std::sort(metadata.begin(), metadata.end());  // by key, as protobuf's deterministic serialiser writes a map
  for (const auto& [key, value] : metadata) {
    WireWriter entry;  // a map entry carries its key and value even when empty, as protobuf writes it
    entry.message_field(kMapKey, key);
    entry.message_field(kMapValue, value);
    out.message_field(kItemMetadata, entry.take());
  }
  for (const auto& e :
       evidence_of(item, reading != nullptr ? &read : nullptr, reading != nullptr && reading->lexical)) {
    WireWriter message;
    message.varint_field(kEvidenceConcept, e.concept_id);
    message.packed_floats(kEvidenceScores, e.scores);
    message.varint_field(kEvidenceState, static_cast<std::uint64_t>(static_cast<std::int64_t>(e.state)));
    message.varint_field(kEvidenceObservations, e.observations);
    message.bytes_field(kEvidenceSource, e.source);
    out.message_field(kItemEvidence, message.take());
  }
  out.bytes_field(kItemModel, item.model);
  out.bytes_field(kItemTemplateVersion, item.template_version);
  out.varint_field(kItemCreated, static_cast<std::uint64_t>(item.created_ms));
  out.varint_field(kItemUpdated, static_cast<std::uint64_t>(item.created_ms));
  out.varint_field(kItemVersion, 1);
  out.packed_varints(kItemMentions, read.mentions);
  return out.take();
}

}  // namespace polarmem::layout
