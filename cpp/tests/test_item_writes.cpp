// ItemWrites (item_writes.hpp): new items into a real RocksDB store and the namespace's memory in
// one call — queued concept records in the same batch, the write counted, the index told after
// the store — and a refused write leaving memory as it was with the concepts queued again. The
// library's and the front's Remember both go through it (tests/integration/test_native_remember.py).
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "check.hpp"
#include "polarmem/error.hpp"
#include "polarmem/item_writes.hpp"
#include "polarmem/kv_store.hpp"
#include "polarmem/new_item_record.hpp"
#include "polarmem/vocabulary.hpp"

using namespace polarmem;
namespace fs = std::filesystem;

namespace {

constexpr std::size_t kDim = 4;
const std::vector<std::string> kFamilies = {"meta", "namespaces", "concepts", "items", "vectors", "edges", "index"};

struct Fixture {
  explicit Fixture(const std::string& name)
      : path(fs::temp_directory_path() / ("polarmem-item-writes-" + name + "-" + std::to_string(::getpid()))) {
    fs::remove_all(path);
    KvOpenOptions options;
    options.create_if_missing = true;
    options.create_missing_column_families = true;
    store = std::make_shared<KvStore>(path.string(), kFamilies, options);
    writes = std::make_shared<StoreWrites>(store, false, std::chrono::milliseconds(50));
    index->ensure_concepts(0);
    writer = std::make_shared<ItemWrites>("ns", writes, items, appends,
                                          std::vector<ItemWrites::Space>{{"sem", kDim, false}});
  }
  ~Fixture() {
    writer.reset();
    writes.reset();
    store.reset();
    fs::remove_all(path);
  }

  fs::path path;
  std::shared_ptr<KvStore> store;
  std::shared_ptr<StoreWrites> writes;
  std::shared_ptr<Index> index =
      std::make_shared<Index>(std::vector<SpaceConfig>{SpaceConfig{"sem", kDim, false, Storage::kF32, {}}}, 1);
  std::shared_ptr<ItemIds> ids = std::make_shared<ItemIds>();
  std::shared_ptr<MetadataPostings> metadata = std::make_shared<MetadataPostings>();
  std::shared_ptr<NamespaceItems> items = std::make_shared<NamespaceItems>("ns", index, ids, metadata);
  std::shared_ptr<text::Vocabulary> vocabulary = std::make_shared<text::Vocabulary>();
  std::shared_ptr<ConceptAppends> appends = std::make_shared<ConceptAppends>(vocabulary, index);
  std::shared_ptr<ItemWrites> writer;
};

// A new item's record asserting HAS for `concept_id` (the client's state).
std::string note(const std::string& id, std::uint32_t concept_id) {
  layout::NewItemRecord item;
  item.id = id;
  item.kind = 2;
  item.text = "a note";
  item.source = "client";
  item.states = {{concept_id, 1}};
  return layout::encode_new_item_record(item, nullptr);
}

}  // namespace

POLARMEM_TEST(new_items_are_stored_then_indexed_with_their_concepts) {
  Fixture f("stored");
  const auto bound = f.appends->allocate({"garden"});
  CHECK(bound.size() == 1 && bound[0] == 0);
  const std::string a = note("a", 0), b = note("b", 0);
  const float row[kDim] = {1.0f, 0.0f, 0.0f, 0.0f};
  // b sends no `sem`: its slot is marked absent, not filled with another item's row
  f.writer->add({a, b}, {{{"sem", row, 1, kDim}}, {}});
  CHECK(f.items->slot("a") == 0 && f.items->slot("b") == 1);
  CHECK(f.index->size() == 2);
  CHECK(f.store->get("items", layout::item_key("ns", "a")) == a);
  CHECK(f.store->get("index", layout::item_key("ns", "b")).has_value());
  CHECK(f.store->get("vectors", layout::vector_key("ns", "a", "sem")).has_value());
  CHECK(!f.store->get("vectors", layout::vector_key("ns", "b", "sem")).has_value());
  CHECK(f.store->get("concepts", layout::concept_key("ns", 0)).has_value());  // in the same batch
  CHECK(f.store->get("meta", std::string("writes\0ns", 9)) == "1");
  CHECK(f.appends->take().empty());
  const auto counts = f.items->counts();
  CHECK(counts.has.at(0) == 2);
}

POLARMEM_TEST(a_refused_write_stores_nothing_and_queues_its_concepts_again) {
  Fixture f("refused");
  f.appends->allocate({"garden"});
  f.writes->close();  // every later write is refused (UNAVAILABLE)
  CHECK_THROWS_AS(f.writer->add({note("a", 0)}, {{}}), Error);
  CHECK(!f.items->slot("a").has_value() && f.index->size() == 0);
  const auto pending = f.appends->take();
  CHECK(pending.size() == 1 && pending[0].second == "garden");
}

POLARMEM_TEST(a_vector_the_index_refuses_is_refused_before_the_write) {
  Fixture f("vectors");
  const float row[2] = {1.0f, 0.0f};
  CHECK_THROWS(f.writer->add({note("a", 0)}, {{{"sem", row, 1, 2}}}));        // the wrong width
  CHECK_THROWS(f.writer->add({note("a", 0)}, {{{"other", row, 1, 2}}}));      // a space it lacks
  CHECK(!f.store->get("items", layout::item_key("ns", "a")).has_value() && !f.items->slot("a").has_value());
  CHECK(!f.store->get("meta", std::string("writes\0ns", 9)).has_value());
}

int main() { return polarmem::testing::run_all(); }
