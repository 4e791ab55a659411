// The item layout (item_layout.hpp): the index record of an ItemRecord byte for byte as the
// Python store wrote it before the layout moved into the core (stores keep their records), the
// layouts a start-up reads, malformed input refused, and an item write's keys through a real
// store. tests/unit/test_item_layout.py checks the ItemRecord reader on random records.
#include <unistd.h>

#include <filesystem>
#include <string>
#include <tuple>
#include <vector>

#include "check.hpp"
#include "polarmem/error.hpp"
#include "polarmem/item_layout.hpp"
#include "polarmem/kv_store.hpp"

using namespace polarmem;
namespace fs = std::filesystem;

namespace {

// An ItemRecord as Python's protobuf serialised it: id "n1", kind TEXT, metadata {z: last,
// a: ünï}, evidence 3 HAS (scores .9 .8, mean .85), 1 NOT_HAS, 9 UNCERTAIN (score .5), the
// partition of method "calibrated", version 3, mentions 4 7.
const std::string kRecord(
    "\x0a\x02\x6e\x31\x10\x02\x1a\x0d\x61\x20\x64\x6f\x67\x2c\x20\x6e\x6f\x20\x63\x61\x74\x2a\x09\x0a\x01\x7a\x12\x04"
    "\x6c\x61\x73\x74\x2a\x0a\x0a\x01\x61\x12\x05\xc3\xbc\x6e\xc3\xaf\x32\x13\x08\x03\x12\x08\x66\x66\x66\x3f\xcd\xcc"
    "\x4c\x3f\x1d\x9a\x99\x59\x3f\x28\x01\x32\x04\x08\x01\x28\x02\x32\x0f\x08\x09\x12\x04\x00\x00\x00\x3f\x1d\x00\x00"
    "\x00\x3f\x28\x03\x3a\x15\x09\x00\x00\x00\x00\x00\x00\xe0\x3f\x42\x0a\x63\x61\x6c\x69\x62\x72\x61\x74\x65\x64\x60"
    "\x03\x6a\x02\x04\x07",
    117);
// Its index record as storage/local/index_record.py encoded it (round 36).
const std::string kIndexRecord(
    "\x02\x02\x01\x00\x01\x00\x00\x00\x01\x00\x00\x00\x02\x00\x00\x00\x02\x00\x00\x00\x03\x00\x00\x00\x01\x00\x00\x00"
    "\x04\x00\x00\x00\x07\x00\x00\x00\x03\x00\x00\x00\x09\x00\x00\x00\x9a\x99\x59\x3f\x00\x00\x00\x3f\x01\x00\x00\x00"
    "\x61\x05\x00\x00\x00\xc3\xbc\x6e\xc3\xaf\x01\x00\x00\x00\x7a\x04\x00\x00\x00\x6c\x61\x73\x74",
    79);

}  // namespace

POLARMEM_TEST(reads_the_fields_the_index_needs) {
  const layout::ItemFields item = layout::read_item(kRecord);
  CHECK(item.id == "n1");
  CHECK(item.index.kind == 2);
  CHECK(item.index.posterior);
  CHECK((item.index.has == std::vector<std::uint32_t>{3}));
  CHECK((item.index.not_has == std::vector<std::uint32_t>{1}));
  CHECK((item.index.align == std::vector<std::uint32_t>{4, 7}));
  CHECK(item.index.scored == 2);
  CHECK((item.index.scored_ids == std::vector<std::uint32_t>{3, 9}));
  CHECK(item.index.metadata.size() == 2 && item.index.metadata[0].first == "a" &&
        item.index.metadata[1].second == "last");
}

POLARMEM_TEST(encodes_the_index_record_as_stores_hold_it) {
  CHECK(layout::encode_index_record(layout::read_item(kRecord).index) == kIndexRecord);
  const layout::IndexFields back = layout::decode_index_record(kIndexRecord);
  CHECK(layout::encode_index_record(back) == kIndexRecord);
  CHECK(back.scored_means.size() == 2 && back.scored_means[1] == 0.5f);
}

POLARMEM_TEST(reads_layout_1_without_means_and_refuses_other_layouts) {
  std::string old = kIndexRecord.substr(0, 20 + 4 * 4);  // head and concept ids: no scored ids, means, metadata
  old[0] = 1;
  const layout::IndexFields read = layout::decode_index_record(old);
  CHECK(read.scored == 2 && read.scored_ids.empty() && read.has.size() == 1);
  std::string unknown = kIndexRecord;
  unknown[0] = 9;
  CHECK_THROWS_AS(layout::decode_index_record(unknown), Error);
  try {
    layout::decode_index_record(unknown);
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::kFailedPrecondition);
    CHECK(std::string(e.what()).find("layout 9") != std::string::npos);
  }
  CHECK_THROWS(layout::decode_index_record(kIndexRecord.substr(0, 30)));  // cut inside the ids
  CHECK_THROWS(layout::decode_index_record(kIndexRecord.substr(0, kIndexRecord.size() - 2)));  // inside a value
  CHECK_THROWS(layout::decode_index_record(""));
}

POLARMEM_TEST(refuses_bytes_that_are_not_an_item_record) {
  CHECK_THROWS(layout::read_item(kRecord.substr(0, 40)));  // a field cut short
  CHECK_THROWS(layout::read_item(std::string("\x0c", 1)));      // an end of group with none open
  CHECK_THROWS(layout::read_item(std::string("\x0b", 1)));      // a group that never ends
  CHECK_THROWS(layout::read_item(std::string("\x0b\x14", 2)));  // a group ended by field 2's end
  // an unknown group (field 98 holding field 1 = 5) is skipped, as protobuf skips it
  CHECK(layout::read_item(std::string("\x93\x06\x08\x05\x94\x06\x0a\x01x", 9)).id == "x");
  CHECK_THROWS(layout::read_item(std::string("\x00", 1)));  // field number 0
  CHECK(layout::read_item("").id.empty());  // the empty message is a valid, empty record
}

POLARMEM_TEST(an_item_write_puts_every_key_and_a_rewrite_moves_the_edges) {
  const fs::path path = fs::temp_directory_path() / ("polarmem-layout-" + std::to_string(::getpid()));
  fs::remove_all(path);
  KvOpenOptions options;
  options.create_if_missing = options.create_missing_column_families = true;
  KvStore store(path.string(), {"items", "index", "vectors", "edges"}, options);
  const std::vector<float> rows = {1, 2, 3, 4, 5, 6};
  KvBatch batch;
  const std::string index = layout::put_item(batch, "ns", kRecord, {{"sem", rows.data(), 2, 3}});
  store.write(batch, false);
  CHECK(index == kIndexRecord);
  CHECK(store.get("items", std::string("ns\0n1", 5)) == kRecord);
  CHECK(store.get("index", std::string("ns\0n1", 5)) == kIndexRecord);
  const auto vector = store.get("vectors", std::string("ns\0n1\0sem", 9));
  CHECK(vector && vector->size() == 4 + 6 * 4 && (*vector)[0] == 2);
  CHECK(store.get("edges", std::string("ns\0H\0\0\0\x03n1", 10)).has_value());
  CHECK(store.get("edges", std::string("ns\0N\0\0\0\x01n1", 10)).has_value());
  CHECK(store.get("edges", std::string("ns\0A\0\0\0\x07n1", 10)).has_value());
  CHECK(layout::concept_key("ns", 258) == std::string("ns\0\0\0\x01\x02", 7));

  // The next version drops every state and the vectors: the old edges and vectors go.
  const std::string bare("\x0a\x02\x6e\x31", 4);  // id "n1" alone
  KvBatch rewrite;
  layout::put_item(rewrite, "ns", bare, {}, kRecord, {"sem"});
  store.write(rewrite, false);
  CHECK(!store.get("edges", std::string("ns\0H\0\0\0\x03n1", 10)).has_value());
  CHECK(!store.get("vectors", std::string("ns\0n1\0sem", 9)).has_value());
  CHECK(store.get("items", std::string("ns\0n1", 5)) == bare);

  KvBatch removal;
  layout::remove_item(removal, "ns", bare, {"sem"});
  store.write(removal, false);
  CHECK(!store.get("items", std::string("ns\0n1", 5)).has_value());
  CHECK(!store.get("index", std::string("ns\0n1", 5)).has_value());
  store.close();
  fs::remove_all(path);
}

POLARMEM_TEST(a_concept_record_is_what_protobuf_writes) {
  // ConceptRecord(id=300, name="wine glass"), (id=0, name="dog") and a 200-byte name, as
  // Python's protobuf serialised them
  const std::vector<std::tuple<std::uint32_t, std::string, std::string>> cases = {
      {300, "wine glass", std::string("\x08\xac\x02\x12\x0a", 5) + "wine glass"},
      {0, "dog", std::string("\x12\x03", 2) + "dog"},
      {5, std::string(200, 'x'), std::string("\x08\x05\x12\xc8\x01", 5) + std::string(200, 'x')},
  };
  const fs::path path = fs::temp_directory_path() / ("polarmem-concepts-" + std::to_string(::getpid()));
  fs::remove_all(path);
  KvOpenOptions options;
  options.create_if_missing = options.create_missing_column_families = true;
  KvStore store(path.string(), {"concepts"}, options);
  KvBatch batch;
  for (const auto& [id, name, wire] : cases) layout::put_concept(batch, "ns", id, name);
  store.write(batch, false);
  for (const auto& [id, name, wire] : cases) CHECK(store.get("concepts", layout::concept_key("ns", id)) == wire);
  store.close();
  fs::remove_all(path);
}

int main() { return polarmem::testing::run_all(); }
