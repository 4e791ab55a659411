// ItemRecord's protobuf field numbers (protos/polarmem/storage/v1/records.proto), for the core's
// reader of a record's layout fields (item_layout.cpp) and its writer of a new record
// (new_item_record.cpp); tests/unit/test_item_layout.py checks both against the generated classes.
#pragma once

#include <cstdint>

namespace polarmem::layout::fields {

constexpr std::uint32_t kItemId = 1, kItemKind = 2, kItemText = 3, kItemUri = 4, kItemMetadata = 5, kItemEvidence = 6,
                        kItemPartition = 7, kItemModel = 8, kItemTemplateVersion = 9, kItemCreated = 10,
                        kItemUpdated = 11, kItemVersion = 12, kItemMentions = 13, kItemHistory = 14;
constexpr std::uint32_t kEvidenceConcept = 1, kEvidenceScores = 2, kEvidenceMean = 3, kEvidenceTemplateStd = 4,
                        kEvidenceState = 5, kEvidenceObservations = 6, kEvidenceSource = 7;
constexpr std::uint32_t kPartitionMethod = 8;
constexpr std::uint32_t kMapKey = 1, kMapValue = 2;
constexpr std::uint64_t kStateHas = 1, kStateNotHas = 2;  // common/v1 ConceptState

enum WireType : std::uint32_t { kVarint = 0, kFixed64 = 1, kLength = 2, kStartGroup = 3, kEndGroup = 4, kFixed32 = 5 };

}  // namespace polarmem::layout::fields
