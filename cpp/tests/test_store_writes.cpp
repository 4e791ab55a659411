// The store's write-failure policy (store_writes.hpp) against a disk that fails on cue: a file
// system whose writable files refuse appends and syncs while `failing` is set, with RocksDB's
// "no space" or a plain I/O error. tests/integration/test_disk_full.py drives the same policy
// through the server on a real full tmpfs where it may mount one.
#include <rocksdb/env.h>
#include <rocksdb/file_system.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "check.hpp"
#include "polarmem/error.hpp"
#include "polarmem/kv_store.hpp"
#include "polarmem/store_writes.hpp"

using polarmem::Error;
using polarmem::ErrorCode;
using polarmem::KvBatch;
using polarmem::KvError;
using polarmem::KvOpenOptions;
using polarmem::KvStore;
using polarmem::StoreWrites;
using polarmem::WriteFailure;
namespace fs = std::filesystem;

namespace {

enum class Fault { none, no_space, io_error };

rocksdb::IOStatus fault_status(Fault fault) {
  if (fault == Fault::no_space) return rocksdb::IOStatus::NoSpace("No space left on device");
  return rocksdb::IOStatus::IOError("injected: the device went away");
}

class FailingFile final : public rocksdb::FSWritableFileOwnerWrapper {
 public:
  FailingFile(std::unique_ptr<rocksdb::FSWritableFile>&& file, const std::atomic<Fault>* fault)
      : FSWritableFileOwnerWrapper(std::move(file)), fault_(fault) {}
  rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& options,
                           rocksdb::IODebugContext* dbg) override {
    if (*fault_ != Fault::none) return fault_status(*fault_);
    return FSWritableFileOwnerWrapper::Append(data, options, dbg);
  }
  rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& options,
                           const rocksdb::DataVerificationInfo& info, rocksdb::IODebugContext* dbg) override {
    if (*fault_ != Fault::none) return fault_status(*fault_);
    return FSWritableFileOwnerWrapper::Append(data, options, info, dbg);
  }
  rocksdb::IOStatus Sync(const rocksdb::IOOptions& options, rocksdb::IODebugContext* dbg) override {
    if (*fault_ != Fault::none) return fault_status(*fault_);
    return FSWritableFileOwnerWrapper::Sync(options, dbg);
  }

 private:
  const std::atomic<Fault>* fault_;
};

class FailingDisk final : public rocksdb::FileSystemWrapper {
 public:
  FailingDisk() : FileSystemWrapper(rocksdb::FileSystem::Default()) {}
  const char* Name() const override { return "FailingDisk"; }
  rocksdb::IOStatus NewWritableFile(const std::string& name, const rocksdb::FileOptions& options,
                                    std::unique_ptr<rocksdb::FSWritableFile>* out,
                                    rocksdb::IODebugContext* dbg) override {
    std::unique_ptr<rocksdb::FSWritableFile> file;
    const rocksdb::IOStatus status = FileSystemWrapper::NewWritableFile(name, options, &file, dbg);
    if (status.ok()) *out = std::make_unique<FailingFile>(std::move(file), &fault);
    return status;
  }
  std::atomic<Fault> fault{Fault::none};
};

const std::vector<std::string> kFamilies = {"meta", "items"};

struct Fixture {
  explicit Fixture(const std::string& name)
      : path(fs::temp_directory_path() / ("polarmem-writes-" + name + "-" + std::to_string(::getpid()))),
        disk(std::make_shared<FailingDisk>()),
        env(rocksdb::NewCompositeEnv(disk)) {
    fs::remove_all(path);
    KvOpenOptions options;
    options.create_if_missing = true;
    options.create_missing_column_families = true;
    options.env = env.get();
    store = std::make_shared<KvStore>(path.string(), kFamilies, options);
    writes = std::make_unique<StoreWrites>(store, true, std::chrono::milliseconds(50));
    writes->watch(
        [this](WriteFailure kind, const std::string& message) {
          failures.push_back(kind);
          messages.push_back(message);
        },
        [this] { ++resumes; });
  }
  ~Fixture() {
    writes.reset();
    store.reset();
    env.reset();
    fs::remove_all(path);
  }
  void put(const std::string& key, const std::string& value) {
    KvBatch batch;
    batch.put("items", key, value);
    writes->write(batch, "meta", "count");
  }
  // The code of the error `put` throws, or nullopt when it wrote.
  std::optional<ErrorCode> put_error(const std::string& key) {
    try {
      put(key, "v");
    } catch (const Error& e) {
      last_error = e.what();
      return e.code();
    }
    return std::nullopt;
  }

  fs::path path;
  std::shared_ptr<FailingDisk> disk;
  std::unique_ptr<rocksdb::Env> env;
  std::shared_ptr<KvStore> store;
  std::unique_ptr<StoreWrites> writes;
  std::vector<WriteFailure> failures;
  std::vector<std::string> messages;
  int resumes = 0;
  std::string last_error;
};

void wait_past_interval() { std::this_thread::sleep_for(std::chrono::milliseconds(80)); }

}  // namespace

POLARMEM_TEST(a_counted_write_bumps_its_count_in_the_same_batch) {
  Fixture f("counted");
  f.put("a", "1");
  f.put("b", "2");
  CHECK(f.store->get("meta", "count") == "2" && f.store->get("items", "b") == "2");
  CHECK(f.writes->failure() == WriteFailure::none && f.writes->try_resume());
  CHECK(f.failures.empty() && f.resumes == 0);
}

POLARMEM_TEST(a_full_disk_is_answered_to_every_write_until_a_reopen_then_writes_resume) {
  Fixture f("full");
  f.put("kept", "1");
  f.disk->fault = Fault::no_space;
  CHECK(f.put_error("lost") == ErrorCode::kResourceExhausted);
  CHECK(f.last_error.find("disk is full") != std::string::npos);
  CHECK(f.writes->failure() == WriteFailure::disk_full);
  CHECK(f.failures.size() == 1 && f.failures[0] == WriteFailure::disk_full);
  CHECK(f.messages[0].find("No space left on device") != std::string::npos);
  // Before the interval: answered from the remembered failure, the disk not tried again.
  CHECK(f.put_error("lost-too") == ErrorCode::kResourceExhausted && f.failures.size() == 1);
  CHECK(f.store->get("items", "kept") == "1");  // reads keep working
  CHECK(!f.writes->try_resume());               // not due yet
  f.disk->fault = Fault::none;
  wait_past_interval();
  CHECK(f.writes->try_resume() && f.resumes == 1 && f.writes->failure() == WriteFailure::none);
  f.put("after", "2");
  CHECK(f.store->get("items", "after") == "2" && f.store->get("items", "kept") == "1");
  CHECK(!f.store->get("items", "lost").has_value() && !f.store->get("items", "lost-too").has_value());
  CHECK(f.store->get("meta", "count") == "2");  // the refused writes counted nothing
}

POLARMEM_TEST(an_io_error_answers_unavailable_with_rocksdbs_text_and_a_write_reopens_when_due) {
  Fixture f("io");
  f.disk->fault = Fault::io_error;
  CHECK(f.put_error("x") == ErrorCode::kUnavailable);
  CHECK(f.last_error.find("the store could not write (") == 0);
  CHECK(f.last_error.find("the device went away") != std::string::npos);
  CHECK(f.writes->failure() == WriteFailure::io_error && f.failures.size() == 1);
  f.disk->fault = Fault::none;
  wait_past_interval();
  CHECK(!f.put_error("y").has_value());  // the write itself reopened the store
  CHECK(f.resumes == 1 && f.store->get("items", "y") == "v");
}

POLARMEM_TEST(a_reopen_while_the_disk_still_fails_keeps_the_failure_and_reads_are_told_to_retry) {
  Fixture f("still");
  f.put("kept", "1");
  f.disk->fault = Fault::no_space;
  CHECK(f.put_error("x") == ErrorCode::kResourceExhausted);
  wait_past_interval();
  CHECK(!f.writes->try_resume() && f.resumes == 0);
  CHECK(f.writes->failure() == WriteFailure::disk_full);
  CHECK(f.put_error("y") == ErrorCode::kResourceExhausted);  // not due again yet
  f.disk->fault = Fault::none;
  wait_past_interval();
  CHECK(f.writes->try_resume() && f.resumes == 1);
  CHECK(f.store->get("items", "kept") == "1");
}

POLARMEM_TEST(a_damaged_count_refuses_that_write_alone_and_no_failure_is_taken) {
  Fixture f("count");
  KvBatch garbled;
  garbled.put("meta", "count", "12x");
  f.store->write(garbled, false);
  try {
    f.put("a", "1");
    CHECK(false);
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::kFailedPrecondition);
  }
  CHECK(f.writes->failure() == WriteFailure::none && f.failures.empty());
  KvBatch uncounted;
  uncounted.put("items", "b", "2");
  f.writes->write(uncounted);
  CHECK(f.store->get("items", "b") == "2");
}

POLARMEM_TEST(after_close_writes_are_refused_and_a_closed_store_is_not_reopened) {
  Fixture f("close");
  f.writes->close();
  CHECK(f.put_error("a") == ErrorCode::kUnavailable);
  CHECK(f.last_error.find("closed") != std::string::npos);
  f.store->close();
  CHECK_THROWS_AS(f.store->reopen(), KvError);
  CHECK_THROWS_AS(f.store->get("items", "a"), KvError);
}

POLARMEM_TEST(reads_racing_a_reopen_wait_for_it_and_see_the_store) {
  Fixture f("race");
  f.put("kept", "1");
  std::atomic<bool> stop{false};
  std::atomic<int> reads{0}, wrong{0};
  std::thread reader([&] {
    while (!stop) {
      try {
        ++(f.store->get("items", "kept") == "1" ? reads : wrong);
      } catch (...) {  // a reopen that succeeds is waited for, never seen
        ++wrong;
      }
    }
  });
  for (int i = 0; i < 20; ++i) f.store->reopen();
  stop = true;
  reader.join();
  CHECK(wrong == 0 && reads > 0);
  CHECK(f.store->get("items", "kept") == "1");
}

POLARMEM_TEST(after_a_reopen_that_failed_reads_are_told_to_retry_until_one_succeeds) {
  Fixture f("failed-open");
  f.put("kept", "1");
  const std::string current = (f.path / "CURRENT").string();
  fs::rename(current, current + ".aside");  // the open finds no store (and must not make one)
  CHECK_THROWS_AS(f.store->reopen(), KvError);
  try {
    f.store->get("items", "kept");
    CHECK(false);
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::kUnavailable);
  }
  fs::rename(current + ".aside", current);
  f.store->reopen();
  CHECK(f.store->get("items", "kept") == "1");
}

int main() { return polarmem::testing::run_all(); }
