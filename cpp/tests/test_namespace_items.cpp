// NamespaceItems (namespace_items.hpp): one call per write keeps the index, ids, metadata
// postings, records, slot map and counts of a namespace in step; a failed add names nothing; a
// removal past the tombstone share compacts and renumbers everything alike. The library-level
// behaviour (forget, rewrites, start-up rebuild, replicas) is tested through the Python store.
#include <memory>
#include <string>
#include <vector>

#include "check.hpp"
#include "polarmem/error.hpp"
#include "polarmem/item_layout.hpp"
#include "polarmem/namespace_items.hpp"

using namespace polarmem;

namespace {

constexpr std::size_t kDim = 4;

struct Namespace {
  std::shared_ptr<Index> index =
      std::make_shared<Index>(std::vector<SpaceConfig>{SpaceConfig{"sem", kDim, false, Storage::kF32, {}}}, 1);
  std::shared_ptr<ItemIds> ids = std::make_shared<ItemIds>();
  std::shared_ptr<MetadataPostings> metadata = std::make_shared<MetadataPostings>();
  NamespaceItems items{"ns", index, ids, metadata};
  Namespace() { index->ensure_concepts(16); }
};

layout::IndexFields fields(std::vector<std::uint32_t> has, std::vector<std::uint32_t> not_has, std::string topic) {
  layout::IndexFields f;
  f.kind = 2;
  f.has = std::move(has);
  f.not_has = std::move(not_has);
  f.metadata = {{"topic", std::move(topic)}};
  return f;
}

// A serialised ItemRecord with an id, HAS evidence for `concept` and metadata topic = `topic`
// (protobuf's wire format, as item_layout.cpp reads it).
std::string record(const std::string& id, std::uint8_t concept_id, const std::string& topic) {
  const auto field = [](std::string& out, char tag, const std::string& bytes) {
    out.push_back(tag);
    out.push_back(static_cast<char>(bytes.size()));
    out.append(bytes);
  };
  std::string entry, evidence, out;
  field(entry, '\x0a', "topic");
  field(entry, '\x12', topic);
  evidence.push_back('\x08');
  evidence.push_back(static_cast<char>(concept_id));
  evidence.append("\x28\x01");
  field(out, '\x0a', id);
  out.append("\x10\x02");  // kind TEXT
  field(out, '\x2a', entry);
  field(out, '\x32', evidence);
  return out;
}

void add(Namespace& ns, const std::vector<std::string>& ids, const std::vector<layout::IndexFields>& items,
         const std::vector<std::string>& records = {}) {
  std::vector<std::string> encoded;
  for (const auto& f : items) encoded.push_back(layout::encode_index_record(f));
  std::vector<std::string_view> views(encoded.begin(), encoded.end()), record_views(records.begin(), records.end());
  std::vector<float> rows(ids.size() * kDim, 0.5f);
  VectorInput sem{"sem", rows.data(), ids.size(), kDim, nullptr, nullptr};
  ns.items.add(ids, views, {sem}, {}, record_views);
}

}  // namespace

POLARMEM_TEST(an_add_names_slots_counts_and_files_metadata) {
  Namespace ns;
  ns.items.keep_records();
  add(ns, {"a", "b"}, {fields({1}, {2}, "x"), fields({1, 3}, {}, "y")}, {record("a", 1, "x"), record("b", 1, "y")});
  CHECK(ns.items.slot("a") == 0 && ns.items.slot("b") == 1 && !ns.items.slot("c"));
  CHECK(ns.ids->get(1) == "b" && ns.index->live_count() == 2);
  const auto counts = ns.items.counts();
  CHECK(counts.kinds.at(2) == 2 && counts.has.at(1) == 2 && counts.has.at(3) == 1 && counts.not_has.at(2) == 1);
  CHECK((ns.metadata->matching({{"topic", "y"}}) == std::vector<std::int64_t>{1}));
  CHECK(ns.items.records()->count() == 2);
}

POLARMEM_TEST(a_failed_add_names_nothing) {
  Namespace ns;
  add(ns, {"a"}, {fields({1}, {}, "x")});
  const std::string encoded = layout::encode_index_record(fields({1}, {}, "x"));
  std::vector<float> rows(kDim + 1, 0.5f);
  VectorInput wrong{"sem", rows.data(), 1, kDim + 1, nullptr, nullptr};  // the space holds 4 dimensions
  CHECK_THROWS(ns.items.add({"b"}, {encoded}, {wrong}, {}, {}));
  CHECK(!ns.items.slot("b") && ns.ids->size() == 1 && ns.index->size() == 1);
  CHECK(ns.items.counts().has.at(1) == 1);
  add(ns, {"b"}, {fields({4}, {}, "x")});  // the next add takes the next slot
  CHECK(ns.items.slot("b") == 1);
  CHECK_THROWS(ns.items.add({"c"}, {std::string("\x09", 1)}, {}, {}, {}));  // an unreadable layout
  CHECK(!ns.items.slot("c"));
}

POLARMEM_TEST(a_replace_moves_counts_and_metadata) {
  Namespace ns;
  ns.items.keep_records();
  add(ns, {"a"}, {fields({1}, {}, "x")}, {record("a", 1, "x")});
  ns.items.replace(record("a", 1, "x"), record("a", 5, "z"), {}, {});
  const auto counts = ns.items.counts();
  CHECK(counts.has.at(1) == 0 && counts.has.at(5) == 1 && counts.kinds.at(2) == 1);
  CHECK(ns.metadata->matching({{"topic", "x"}}).empty());
  CHECK((ns.metadata->matching({{"topic", "z"}}) == std::vector<std::int64_t>{0}));
  std::vector<std::string> held;
  const std::int64_t slot = 0;
  CHECK(ns.items.records()->get(&slot, 1, &held) && held[0] == record("a", 5, "z"));
  CHECK_THROWS(ns.items.replace(record("q", 1, "x"), record("q", 1, "x"), {}, {}));  // not stored
}

POLARMEM_TEST(removals_past_the_tombstone_share_compact_and_renumber_alike) {
  Namespace ns;
  ns.items.compact_min_tombstones = 2;
  ns.items.keep_records();
  std::vector<std::string> ids, records;
  std::vector<layout::IndexFields> items;
  for (int i = 0; i < 8; ++i) {
    ids.push_back(std::string(1, 'i').append(std::to_string(i)));
    items.push_back(fields({1}, {}, i % 2 ? "odd" : "even"));
    records.push_back(record(ids.back(), 1, i % 2 ? "odd" : "even"));
  }
  add(ns, ids, items, records);
  CHECK(!ns.items.remove(records[0]));  // 1 tombstone of 8
  CHECK(ns.items.remove(records[2]));   // 2 of 8: compacted
  CHECK(ns.index->size() == 6 && ns.ids->size() == 6 && ns.ids->generation() % 2 == 0);
  CHECK(ns.items.slot("i1") == 0 && ns.items.slot("i7") == 5 && !ns.items.slot("i2"));
  CHECK(ns.ids->get(*ns.items.slot("i3")) == "i3");
  CHECK((ns.metadata->matching({{"topic", "even"}}) == std::vector<std::int64_t>{*ns.items.slot("i4"), 4}));
  std::vector<std::string> held;
  const std::int64_t slot = *ns.items.slot("i5");
  CHECK(ns.items.records()->get(&slot, 1, &held) && held[0] == records[5]);
  CHECK(ns.items.counts().has.at(1) == 6);
  CHECK_THROWS(ns.items.remove(records[0]));  // removed already
}

POLARMEM_TEST(read_back_records_fill_only_empty_slots) {
  Namespace ns;
  ns.items.keep_records();
  add(ns, {"a", "b"}, {fields({1}, {}, "x"), fields({1}, {}, "x")}, {});
  ns.items.fill_records({"a", "nobody"}, {record("a", 1, "x"), record("n", 1, "x")});
  CHECK(ns.items.records()->count() == 1);
  ns.items.fill_records({"a"}, {record("a", 9, "x")});  // held already: kept
  std::vector<std::string> held;
  const std::int64_t slot = 0;
  CHECK(ns.items.records()->get(&slot, 1, &held) && held[0] == record("a", 1, "x"));
}

int main() { return polarmem::testing::run_all(); }
