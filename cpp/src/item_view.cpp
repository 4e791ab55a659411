#include "polarmem/item_view.hpp"

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "polarmem/error.hpp"
#include "polarmem/item_record_fields.hpp"
#include "polarmem/protobuf_wire.hpp"

namespace polarmem::layout {

namespace {

using namespace fields;  // NOLINT(google-build-using-namespace): the record's field numbers

// polarmem.v1.Item and its parts (protos/polarmem/v1/memory_service.proto). ConceptEvidenceView
// numbers its fields as ConceptEvidence does, with the concept's name at 1 where the record keeps
// its id; PartitionView is PartitionRecord field for field, so a record's partition is shown as
// stored.
constexpr std::uint32_t kViewId = 1, kViewKind = 2, kViewText = 3, kViewUri = 4, kViewMetadata = 5, kViewEvidence = 6,
                        kViewPartition = 7, kViewModel = 8, kViewCreated = 9, kViewUpdated = 10, kViewVersion = 11,
                        kViewHas = 12, kViewNotHas = 13, kViewUncertain = 14, kViewMentions = 15, kViewHistory = 16;
constexpr std::uint32_t kSnapshotVersion = 1, kSnapshotTime = 2, kSnapshotHas = 3, kSnapshotNotHas = 4,
                        kSnapshotUncertain = 5;
constexpr std::uint32_t kChangeVersion = 1, kChangeTime = 2, kChangeHas = 3, kChangeNotHas = 4, kChangeUncertain = 5;

std::string name_of(const text::Vocabulary& vocabulary, std::uint32_t id) {
  std::string name;
  if (!vocabulary.name(id, &name)) fail(ErrorCode::kOutOfRange, "no concept " + std::to_string(id));
  return name;
}

// A repeated uint32 field, packed or not.
void read_ids(wire::Reader& in, std::uint32_t type, std::vector<std::uint32_t>* out) {
  if (type == kLength) {
    wire::Reader packed(in.bytes());
    while (!packed.done()) out->push_back(static_cast<std::uint32_t>(packed.varint()));
  } else if (type == kVarint) {
    out->push_back(static_cast<std::uint32_t>(in.varint()));
  } else {
    wire::malformed("a repeated concept id of a wire type neither varint nor packed");
  }
}

void names_field(wire::Writer& out, std::uint32_t field, const text::Vocabulary& vocabulary,
                 const std::vector<std::uint32_t>& ids) {
  for (const auto id : ids) out.message_field(field, name_of(vocabulary, id));  // "" too: a repeated string
}

struct ShownEvidence {
  std::string message;  // the ConceptEvidenceView
  std::uint32_t concept_id = 0;
  std::uint64_t state = 0;
};

ShownEvidence show_evidence(std::string_view bytes, const text::Vocabulary& vocabulary) {
  wire::Reader in(bytes);
  ShownEvidence shown;
  std::vector<float> scores;
  float mean = 0.0f, template_std = 0.0f;
  std::uint64_t observations = 0;
  std::string_view source;
  while (!in.done()) {
    const auto [field, type] = in.tag();
    if (field == kEvidenceConcept && type == kVarint) {
      shown.concept_id = static_cast<std::uint32_t>(in.varint());
    } else if (field == kEvidenceScores && type == kLength) {
      const std::string_view packed = in.bytes();
      if (packed.size() % 4) wire::malformed("packed template_scores of a length not a multiple of 4");
      wire::Reader floats(packed);
      while (!floats.done()) scores.push_back(floats.fixed32_float());
    } else if (field == kEvidenceScores && type == kFixed32) {
      scores.push_back(in.fixed32_float());
    } else if ((field == kEvidenceMean || field == kEvidenceTemplateStd) && type == kFixed32) {
      (field == kEvidenceMean ? mean : template_std) = in.fixed32_float();
    } else if (field == kEvidenceState && type == kVarint) {
      shown.state = static_cast<std::uint32_t>(in.varint());  // an enum: protobuf keeps the low 32 bits
    } else if (field == kEvidenceObservations && type == kVarint) {
      observations = static_cast<std::uint32_t>(in.varint());
    } else if (field == kEvidenceSource && type == kLength) {
      source = in.bytes();
    } else {
      in.skip(field, type);
    }
  }
  wire::Writer out;
  out.bytes_field(kEvidenceConcept, name_of(vocabulary, shown.concept_id));
  out.packed_floats(kEvidenceScores, scores);
  out.fixed32_field(kEvidenceMean, mean);
  out.fixed32_field(kEvidenceTemplateStd, template_std);
  out.varint_field(kEvidenceState, shown.state);
  out.varint_field(kEvidenceObservations, observations);
  out.bytes_field(kEvidenceSource, source);
  shown.message = out.take();
  return shown;
}

std::string show_snapshot(std::string_view bytes, const text::Vocabulary& vocabulary) {
  wire::Reader in(bytes);
  std::uint64_t version = 0, time_ms = 0;
  std::vector<std::uint32_t> has, not_has, uncertain;
  while (!in.done()) {
    const auto [field, type] = in.tag();
    if (field == kSnapshotVersion && type == kVarint) {
      version = in.varint();
    } else if (field == kSnapshotTime && type == kVarint) {
      time_ms = in.varint();
    } else if (field == kSnapshotHas) {
      read_ids(in, type, &has);
    } else if (field == kSnapshotNotHas) {
      read_ids(in, type, &not_has);
    } else if (field == kSnapshotUncertain) {
      read_ids(in, type, &uncertain);
    } else {
      in.skip(field, type);  // its partition: not shown
    }
  }
  wire::Writer out;
  out.varint_field(kChangeVersion, version);
  out.varint_field(kChangeTime, time_ms);
  names_field(out, kChangeHas, vocabulary, has);
  names_field(out, kChangeNotHas, vocabulary, not_has);
  names_field(out, kChangeUncertain, vocabulary, uncertain);
  return out.take();
}

}  // namespace

std::string item_view(std::string_view item_record, const text::Vocabulary& vocabulary, bool history) {
  std::string_view id, text, uri, model;
  std::uint64_t kind = 0, created = 0, updated = 0, version = 0;
  std::vector<std::string_view> metadata, evidence, snapshots;
  std::optional<std::string_view> partition;
  std::vector<std::uint32_t> mentions;
  wire::Reader in(item_record);
  while (!in.done()) {
    const auto [field, type] = in.tag();
    if (type == kLength && field == kItemId) {
      id = in.bytes();
    } else if (type == kVarint && field == kItemKind) {
      kind = static_cast<std::uint32_t>(in.varint());
    } else if (type == kLength && field == kItemText) {
      text = in.bytes();
    } else if (type == kLength && field == kItemUri) {
      uri = in.bytes();
    } else if (type == kLength && field == kItemMetadata) {
      metadata.push_back(in.bytes());  // a map entry, shown as stored (the same map<string, string>)
    } else if (type == kLength && field == kItemEvidence) {
      evidence.push_back(in.bytes());
    } else if (type == kLength && field == kItemPartition) {
      partition = in.bytes();  // (a repeated message field merges; a record is written with one)
    } else if (type == kLength && field == kItemModel) {
      model = in.bytes();
    } else if (type == kVarint && field == kItemCreated) {
      created = in.varint();
    } else if (type == kVarint && field == kItemUpdated) {
      updated = in.varint();
    } else if (type == kVarint && field == kItemVersion) {
      version = in.varint();
    } else if (field == kItemMentions && (type == kLength || type == kVarint)) {
      read_ids(in, type, &mentions);
    } else if (type == kLength && field == kItemHistory) {
      snapshots.push_back(in.bytes());
    } else {
      in.skip(field, type);
    }
  }
  wire::Writer out;
  out.bytes_field(kViewId, id);
  out.varint_field(kViewKind, kind);
  out.bytes_field(kViewText, text);
  out.bytes_field(kViewUri, uri);
  for (const auto entry : metadata) out.message_field(kViewMetadata, entry);
  std::vector<std::uint32_t> has, not_has, uncertain;
  for (const auto bytes : evidence) {
    const ShownEvidence shown = show_evidence(bytes, vocabulary);
    out.message_field(kViewEvidence, shown.message);
    (shown.state == kStateHas ? has : shown.state == kStateNotHas ? not_has : uncertain).push_back(shown.concept_id);
  }
  if (partition) out.message_field(kViewPartition, *partition);
  out.bytes_field(kViewModel, model);
  out.varint_field(kViewCreated, created);
  out.varint_field(kViewUpdated, updated);
  out.varint_field(kViewVersion, version);
  names_field(out, kViewHas, vocabulary, has);
  names_field(out, kViewNotHas, vocabulary, not_has);
  names_field(out, kViewUncertain, vocabulary, uncertain);
  names_field(out, kViewMentions, vocabulary, mentions);
  if (history)
    for (const auto snapshot : snapshots) out.message_field(kViewHistory, show_snapshot(snapshot, vocabulary));
  return out.take();
}

}  // namespace polarmem::layout
