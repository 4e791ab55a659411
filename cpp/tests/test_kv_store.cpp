// The store's RocksDB handle (kv_store.hpp): an atomic batch across column families, scans, a
// close that waits for no reader (open scans are cut off, the LOCK is free at once), read-only
// and checkpoint opens, and tables written at format 5. The storage tests under tests/ drive it
// through the Python store (damage, disk full, replicas, backups).
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "check.hpp"
#include "polarmem/error.hpp"
#include "polarmem/kv_store.hpp"

using polarmem::KvAccess;
using polarmem::KvBatch;
using polarmem::KvError;
using polarmem::KvOpenOptions;
using polarmem::KvStore;
namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kFamilies = {"meta", "items"};

fs::path fresh_directory(const std::string& name) {
  const fs::path path = fs::temp_directory_path() / ("polarmem-kv-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(path);
  return path;
}

KvOpenOptions creating() {
  KvOpenOptions options;
  options.create_if_missing = true;
  options.create_missing_column_families = true;
  return options;
}

void write_three(KvStore& store) {
  KvBatch batch;
  batch.put("items", "a", "1");
  batch.put("items", "b", "2");
  batch.put("meta", "version", "3");
  store.write(batch, true);
}

}  // namespace

POLARMEM_TEST(a_batch_is_written_across_families_and_read_back) {
  const auto path = fresh_directory("batch");
  KvStore store(path.string(), kFamilies, creating());
  write_three(store);
  CHECK(store.get("items", "a") == "1");
  CHECK(!store.get("items", "zz").has_value());
  const auto both = store.multi_get("items", {"b", "q"});
  CHECK(both.size() == 2 && both[0] == "2" && !both[1].has_value());
  KvBatch removal;
  removal.remove_range("items", "a", "b");  // [a, b): a only
  store.write(removal, true);
  CHECK(!store.get("items", "a").has_value() && store.get("items", "b") == "2");
  CHECK_THROWS_AS(store.get("nope", "a"), KvError);
  fs::remove_all(path);
}

POLARMEM_TEST(a_scan_reads_in_key_order_from_its_seek) {
  const auto path = fresh_directory("scan");
  KvStore store(path.string(), kFamilies, creating());
  write_three(store);
  auto scan = store.scan("items");
  scan->seek("a");
  std::string seen;
  for (const auto& [key, value] : scan->take("", 10)) seen += key + "=" + value + ";";
  CHECK(seen == "a=1;b=2;");
  CHECK(!scan->valid());  // take moved past what it returned
  auto from_b = store.scan("items");
  from_b->seek("b");
  CHECK(from_b->take("a", 10).empty() && from_b->valid());  // stops at the first key without the prefix
  fs::remove_all(path);
}

POLARMEM_TEST(close_cuts_off_open_scans_and_frees_the_lock_at_once) {
  const auto path = fresh_directory("close");
  KvStore store(path.string(), kFamilies, creating());
  write_three(store);
  auto scan = store.scan("items");
  scan->seek_to_first();
  store.close();
  CHECK(!store.is_open());
  CHECK_THROWS_AS(scan->valid(), KvError);
  CHECK_THROWS_AS(store.get("items", "a"), KvError);
  KvStore reopened(path.string(), kFamilies, KvOpenOptions{});  // the LOCK is free: no scan kept it
  CHECK(reopened.get("items", "b") == "2");
  scan.reset();  // a cut-off scan is freed after its store closed
  fs::remove_all(path);
}

POLARMEM_TEST(read_only_and_checkpoint_opens_see_every_write_and_tables_are_format_5) {
  const auto path = fresh_directory("checkpoint");
  const auto copy = fresh_directory("checkpoint-copy");
  {
    KvStore store(path.string(), kFamilies, creating());
    write_three(store);
    store.checkpoint(copy.string());
    CHECK_THROWS_AS(KvStore(path.string(), kFamilies, KvOpenOptions{}), KvError);  // one writer: the LOCK is held
  }
  KvOpenOptions read_only;
  read_only.access = KvAccess::read_only;
  KvStore snapshot(copy.string(), kFamilies, read_only);
  CHECK(snapshot.get("meta", "version") == "3");
  CHECK(!snapshot.live_table_files().empty());
  KvStore closed_cleanly(path.string(), kFamilies, read_only);  // close flushed: the writes are in tables
  CHECK(!closed_cleanly.live_table_files().empty());
  bool format_5 = false;
  for (const auto& entry : fs::directory_iterator(path)) {
    if (entry.path().filename().string().rfind("OPTIONS-", 0) != 0) continue;
    std::ifstream file(entry.path());
    std::stringstream text;
    text << file.rdbuf();
    format_5 = text.str().find("format_version=5") != std::string::npos &&
               text.str().find("format_version=6") == std::string::npos;
  }
  CHECK(format_5);
  CHECK(KvStore::list_families(path.string()).size() == 3);  // default, meta, items
  fs::remove_all(path);
  fs::remove_all(copy);
}

POLARMEM_TEST(counted_writes_from_many_threads_each_add_one) {
  const fs::path path = fresh_directory("counted");
  KvStore store(path.string(), kFamilies, creating());
  std::vector<std::thread> writers;
  for (int t = 0; t < 4; ++t) {
    writers.emplace_back([&store, t] {
      for (int i = 0; i < 50; ++i) {
        KvBatch batch;
        std::string key = std::to_string(t);
        key.append("-").append(std::to_string(i));
        batch.put("items", key, "v");
        store.write_counted(batch, "meta", "writes", false);
      }
    });
  }
  for (auto& writer : writers) writer.join();
  CHECK(store.get("meta", "writes") == "200");
  CHECK(store.get("items", "3-49") == "v");
  KvBatch garbage;
  garbage.put("meta", "bad", "12x");
  store.write(garbage, false);
  KvBatch counted;
  counted.put("items", "never", "v");
  CHECK_THROWS_AS(store.write_counted(counted, "meta", "bad", false), polarmem::Error);  // a refusal, not a disk fault
  CHECK(!store.get("items", "never").has_value());  // nothing of a refused write is stored
  store.close();
  fs::remove_all(path);
}

int main() { return polarmem::testing::run_all(); }
