#include "polarmem/kv_store.hpp"

#include <rocksdb/db.h>
#include <rocksdb/iterator.h>
#include <rocksdb/listener.h>
#include <rocksdb/options.h>
#include <rocksdb/table.h>
#include <rocksdb/utilities/checkpoint.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <mutex>
#include <shared_mutex>
#include <unordered_set>
#include <utility>

#include "polarmem/error.hpp"

namespace polarmem {

namespace {

// The newest table format RocksDB 7.8 reads (9.x writes 6 by default and reads 5).
constexpr int kTableFormatVersion = 5;

void check(const rocksdb::Status& status) {
  if (!status.ok()) throw KvError(status.ToString());
}

rocksdb::Slice slice(std::string_view bytes) { return {bytes.data(), bytes.size()}; }

rocksdb::ColumnFamilyOptions family_options() {
  rocksdb::ColumnFamilyOptions options;
  rocksdb::BlockBasedTableOptions table;
  table.format_version = kTableFormatVersion;
  options.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
  return options;
}

rocksdb::Options db_options(const KvOpenOptions& given) {
  rocksdb::Options options(rocksdb::DBOptions(), family_options());
  options.create_if_missing = given.create_if_missing;
  options.create_missing_column_families = given.create_missing_column_families;
  options.paranoid_checks = given.paranoid_checks;
  if (given.db_write_buffer_size > 0) options.db_write_buffer_size = given.db_write_buffer_size;
  options.wal_recovery_mode = given.wal_recovery == WalRecovery::absolute_consistency
                                  ? rocksdb::WALRecoveryMode::kAbsoluteConsistency
                                  : rocksdb::WALRecoveryMode::kPointInTimeRecovery;
  if (given.access == KvAccess::secondary) {
    options.max_open_files = -1;  // RocksDB requires it of a secondary
    // Each catch-up with the primary loads the new tables' handlers with max_file_opening_threads
    // threads, started afresh per column family per call whether or not a table is new (RocksDB
    // 7.8's VersionBuilder::LoadTableHandlers): at the default 16 that was 120 threads and ~3 ms
    // of CPU a catch-up, which a replica pays after every write it forwards (api/processes.py).
    options.max_file_opening_threads = 1;
  }
  return options;
}

// The store recovers from a failed write by closing and reopening (store_writes.cpp), so
// RocksDB's own recovery stays off: it flushes through a write-ahead-log writer that already
// failed, which Debian's build (assertions kept) answers by aborting the process (the disk-full
// test aborted in 3 of 6 runs with it on, 1 of about 50 with it off; InfoLog below took the
// rest). It also marks the database failed, so that close skips its flush.
class OwnRecovery final : public rocksdb::EventListener {
 public:
  explicit OwnRecovery(std::shared_ptr<std::atomic<bool>> failed) : failed_(std::move(failed)) {}
  void OnBackgroundError(rocksdb::BackgroundErrorReason, rocksdb::Status*) override { failed_->store(true); }
  void OnErrorRecoveryBegin(rocksdb::BackgroundErrorReason, rocksdb::Status, bool* auto_recovery) override {
    failed_->store(true);
    *auto_recovery = false;
  }

 private:
  std::shared_ptr<std::atomic<bool>> failed_;
};

// RocksDB's info LOG through stdio, never through RocksDB's own file writer: on a full disk that
// writer keeps its first failure and the next line asserts (Debian's build keeps RocksDB's
// assertions: a core dump of the disk-full test showed ErrorHandler logging the write's error
// aborting the process in EnvLogger::Logv). A line the disk cannot take is dropped; the store's
// own log reports the failure.
class InfoLog final : public rocksdb::Logger {
 public:
  explicit InfoLog(const std::string& dir) {
    const std::string name = dir + "/LOG";
    if (std::FILE* previous = std::fopen(name.c_str(), "r")) {  // kept as RocksDB keeps it
      std::fclose(previous);
      const auto micros =
          std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
              .count();
      std::rename(name.c_str(), (name + ".old." + std::to_string(micros)).c_str());
    }
    file_ = std::fopen(name.c_str(), "w");
  }
  ~InfoLog() override {
    if (file_ != nullptr) std::fclose(file_);
  }
  using rocksdb::Logger::Logv;
  void Logv(const char* format, va_list ap) override {
    if (file_ == nullptr) return;
    char line[16384];  // RocksDB's event lines (JSON) run to a few KiB
    const auto now = std::chrono::system_clock::now();
    const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
    std::tm parts{};
    localtime_r(&seconds, &parts);
    const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count() % 1000000;
    int used = std::snprintf(line, sizeof line, "%04d/%02d/%02d-%02d:%02d:%02d.%06lld ", parts.tm_year + 1900,
                             parts.tm_mon + 1, parts.tm_mday, parts.tm_hour, parts.tm_min, parts.tm_sec,
                             static_cast<long long>(micros));
    used += std::vsnprintf(line + used, sizeof line - static_cast<std::size_t>(used) - 1, format, ap);
    used = std::min<int>(used, static_cast<int>(sizeof line) - 2);
    while (used > 0 && line[used - 1] == '\n') --used;  // some of RocksDB's lines bring their own
    line[used] = '\n';
    std::fwrite(line, 1, static_cast<std::size_t>(used) + 1, file_);
    std::fflush(file_);  // errors (a full disk) are dropped with the line
  }

 private:
  std::FILE* file_ = nullptr;
};

}  // namespace

// The open database. Every call holds `gate` shared while it uses the database; close holds it
// exclusively, so it waits for the calls in flight (a read, a synced write) and no longer: the
// scans still open are cut off (their RocksDB iterators freed, later use raises KvError) instead
// of keeping the database and its LOCK, which a reopen after a failed write needs at once.
struct KvDatabase {
  rocksdb::DB* db = nullptr;  // nullptr once closed
  bool writable = false;
  bool reopening = false;  // closed by a KvStore::reopen that failed, not by its owner: calls are told to retry
  std::shared_ptr<std::atomic<bool>> failed = std::make_shared<std::atomic<bool>>(false);  // a write or flush failed
  std::vector<std::string> names;
  std::vector<rocksdb::ColumnFamilyHandle*> handles;  // parallel to names
  std::shared_mutex gate;
  std::mutex scans_mutex;
  std::unordered_set<KvIterator*> scans;

  rocksdb::ColumnFamilyHandle* family(std::string_view name) const {
    for (std::size_t i = 0; i < names.size(); ++i)
      if (names[i] == name) return handles[i];
    throw KvError("Invalid argument: no column family " + std::string(name) + " is open");
  }

  // A writable store's memtables are flushed first: a clean close leaves every write in a table,
  // so the next open replays no log (RocksDB's own Close keeps them in the write-ahead log only).
  // Not after a failure: the log is what the reopen recovers from. The caller holds `gate`.
  rocksdb::Status close_locked();

  ~KvDatabase() {
    std::unique_lock lock(gate);
    close_locked();
  }
};

namespace {

constexpr const char* kClosed = "Invalid argument: the store is closed";

// A call's hold on the open database: the gate shared, the database checked open.
class Held {
 public:
  explicit Held(std::shared_ptr<KvDatabase> db) : db_(std::move(db)), lock_(db_->gate) {
    if (db_->db != nullptr) return;
    if (db_->reopening)
      fail(ErrorCode::kUnavailable, "the store could not reopen after a failed write yet; retry shortly");
    throw KvError(kClosed);
  }
  KvDatabase* operator->() const { return db_.get(); }
  const std::shared_ptr<KvDatabase>& shared() const { return db_; }

 private:
  std::shared_ptr<KvDatabase> db_;
  std::shared_lock<std::shared_mutex> lock_;
};

}  // namespace

// ---- batches -----------------------------------------------------------------------------------

void KvBatch::put(std::string_view family, std::string_view key, std::string_view value) {
  ops_.push_back({Kind::put, std::string(family), std::string(key), std::string(value)});
}

void KvBatch::remove(std::string_view family, std::string_view key) {
  ops_.push_back({Kind::remove, std::string(family), std::string(key), {}});
}

void KvBatch::remove_range(std::string_view family, std::string_view begin, std::string_view end) {
  ops_.push_back({Kind::remove_range, std::string(family), std::string(begin), std::string(end)});
}

// ---- iterators ---------------------------------------------------------------------------------

rocksdb::Status KvDatabase::close_locked() {
  if (db == nullptr) return rocksdb::Status::OK();
  {
    std::lock_guard guard(scans_mutex);
    for (auto* scan : scans) scan->it_.reset();
  }
  rocksdb::Status status =
      writable && !failed->load() ? db->Flush(rocksdb::FlushOptions(), handles) : rocksdb::Status::OK();
  for (auto* handle : handles) db->DestroyColumnFamilyHandle(handle);
  handles.clear();
  const rocksdb::Status closed = db->Close();
  if (status.ok()) status = closed;
  delete db;
  db = nullptr;
  return status;
}

KvIterator::KvIterator(std::shared_ptr<KvDatabase> db, rocksdb::Iterator* it) : db_(std::move(db)), it_(it) {
  std::lock_guard guard(db_->scans_mutex);
  db_->scans.insert(this);
}

KvIterator::~KvIterator() {
  std::shared_lock lock(db_->gate);
  {
    std::lock_guard guard(db_->scans_mutex);
    db_->scans.erase(this);
  }
  it_.reset();  // before the database it reads can close
}

// Each step holds the gate shared and checks the scan was not cut off by a close.
#define POLARMEM_SCAN_STEP          \
  std::shared_lock lock(db_->gate); \
  if (it_ == nullptr) throw KvError(kClosed)

void KvIterator::seek(std::string_view key) {
  POLARMEM_SCAN_STEP;
  it_->Seek(slice(key));
}
void KvIterator::seek_to_first() {
  POLARMEM_SCAN_STEP;
  it_->SeekToFirst();
}
bool KvIterator::valid() const {
  POLARMEM_SCAN_STEP;
  return it_->Valid();
}
void KvIterator::next() {
  POLARMEM_SCAN_STEP;
  it_->Next();
}
std::vector<std::pair<std::string, std::string>> KvIterator::take(std::string_view prefix, std::size_t limit) {
  POLARMEM_SCAN_STEP;
  std::vector<std::pair<std::string, std::string>> entries;
  for (; entries.size() < limit && it_->Valid() && it_->key().starts_with(slice(prefix)); it_->Next())
    entries.emplace_back(it_->key().ToString(), it_->value().ToString());
  check(it_->status());
  return entries;
}
void KvIterator::check_status() const {
  POLARMEM_SCAN_STEP;
  check(it_->status());
}
#undef POLARMEM_SCAN_STEP

// ---- the store ---------------------------------------------------------------------------------

std::vector<std::string> KvStore::list_families(const std::string& path) {
  std::vector<std::string> names;
  check(rocksdb::DB::ListColumnFamilies(rocksdb::DBOptions(), path, &names));
  return names;
}

void KvStore::repair(const std::string& path) {
  rocksdb::Options options(rocksdb::DBOptions(), family_options());
  options.info_log = std::make_shared<InfoLog>(path);
  check(rocksdb::RepairDB(path, options));
}

namespace {

// Opens `path` into `db` (closed, its gate held or not yet shared); throws KvError as RocksDB
// refuses, leaving `db` closed.
void open_into(KvDatabase& db, const std::string& path, const std::vector<std::string>& families,
               const KvOpenOptions& given) {
  db.names = {rocksdb::kDefaultColumnFamilyName};
  for (const auto& name : families)
    if (name != rocksdb::kDefaultColumnFamilyName) db.names.push_back(name);
  std::vector<rocksdb::ColumnFamilyDescriptor> descriptors;
  for (const auto& name : db.names) descriptors.emplace_back(name, family_options());
  rocksdb::Options options = db_options(given);
  const std::string& log_dir = !given.info_log_dir.empty()           ? given.info_log_dir
                               : given.access == KvAccess::secondary ? given.secondary_path
                                                                     : path;
  if (given.create_if_missing) {
    std::error_code ignored;  // RocksDB's open says what is wrong with the path
    std::filesystem::create_directories(path, ignored);
  }
  options.info_log = std::make_shared<InfoLog>(log_dir);
  if (given.env != nullptr) options.env = given.env;
  options.max_bgerror_resume_count = 0;
  db.failed->store(false);  // a reopen: the database that failed is closed, its listener gone
  options.listeners.push_back(std::make_shared<OwnRecovery>(db.failed));
  const rocksdb::DBOptions& base = options;
  switch (given.access) {
    case KvAccess::read_write:
      check(rocksdb::DB::Open(base, path, descriptors, &db.handles, &db.db));
      db.writable = true;
      break;
    case KvAccess::read_only: check(rocksdb::DB::OpenForReadOnly(base, path, descriptors, &db.handles, &db.db)); break;
    case KvAccess::secondary:
      check(rocksdb::DB::OpenAsSecondary(base, path, given.secondary_path, descriptors, &db.handles, &db.db));
      break;
  }
}

}  // namespace

KvStore::KvStore(const std::string& path, const std::vector<std::string>& families, const KvOpenOptions& given)
    : path_(path), families_(families), options_(given), db_(std::make_shared<KvDatabase>()) {
  open_into(*db_, path, families, given);
}

KvStore::~KvStore() {
  std::unique_lock lock(db_->gate);
  db_->close_locked();  // a close error here has no one to go to; close() reports it
}

void KvStore::close() {
  std::unique_lock lock(db_->gate);
  db_->reopening = false;  // closed for good, by its owner
  check(db_->close_locked());
}

bool KvStore::is_open() const {
  std::shared_lock lock(db_->gate);
  return db_->db != nullptr;
}

void KvStore::reopen() {
  if (options_.access != KvAccess::read_write) throw KvError("Not supported: only a read-write store reopens");
  // The gate held throughout: calls meanwhile wait for the reopen instead of failing, and open
  // scans are cut off by the close.
  std::unique_lock lock(db_->gate);
  if (db_->db == nullptr && !db_->reopening) throw KvError(kClosed);  // its owner closed it
  db_->reopening = true;
  // A close error is the failed log writer's, which the reopen leaves behind: the files are
  // closed either way.
  db_->close_locked();
  KvOpenOptions options = options_;
  options.create_if_missing = false;  // a store that vanished is not started anew
  open_into(*db_, path_, families_, options);  // throws: the store stays closed, calls told to retry
  db_->reopening = false;
}

std::optional<std::string> KvStore::get(std::string_view family, std::string_view key) const {
  const Held db(db_);
  std::string value;
  const rocksdb::Status status = db->db->Get(rocksdb::ReadOptions(), db->family(family), slice(key), &value);
  if (status.IsNotFound()) return std::nullopt;
  check(status);
  return value;
}

std::vector<std::optional<std::string>> KvStore::multi_get(std::string_view family,
                                                           const std::vector<std::string>& keys) const {
  const Held db(db_);
  std::vector<rocksdb::Slice> slices(keys.begin(), keys.end());
  std::vector<rocksdb::PinnableSlice> values(keys.size());
  std::vector<rocksdb::Status> statuses(keys.size());
  db->db->MultiGet(rocksdb::ReadOptions(), db->family(family), keys.size(), slices.data(), values.data(),
                   statuses.data());
  std::vector<std::optional<std::string>> out(keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (statuses[i].IsNotFound()) continue;
    check(statuses[i]);
    out[i] = values[i].ToString();
  }
  return out;
}

void KvStore::write(const KvBatch& batch, bool sync) {
  const Held db(db_);
  rocksdb::WriteBatch write_batch;
  for (const auto& op : batch.ops_) {
    auto* family = db->family(op.family);
    switch (op.kind) {
      case KvBatch::Kind::put: check(write_batch.Put(family, op.key, op.value)); break;
      case KvBatch::Kind::remove: check(write_batch.Delete(family, op.key)); break;
      case KvBatch::Kind::remove_range: check(write_batch.DeleteRange(family, op.key, op.value)); break;
    }
  }
  rocksdb::WriteOptions options;
  options.sync = sync;
  const rocksdb::Status status = db->db->Write(options, &write_batch);
  if (!status.ok()) db->failed->store(true);
  check(status);
}

void KvStore::write_counted(KvBatch& batch, std::string_view family, std::string_view counter_key, bool sync) {
  const std::lock_guard guard(counted_);
  const std::optional<std::string> stored = get(family, counter_key);
  std::uint64_t count = 0;
  if (stored) {
    const char* end = stored->data() + stored->size();
    const auto [at, error] = std::from_chars(stored->data(), end, count);
    if (error != std::errc() || at != end || stored->empty()) {
      // A refusal of this write alone (the store is sound): not a KvError, which callers take
      // for a failed disk. The key is shown with its separators escaped, so it names the count.
      std::string shown;
      for (const char c : counter_key) {
        if (c >= 0x20 && c < 0x7f) {
          shown.push_back(c);
        } else {
          char escaped[5];
          std::snprintf(escaped, sizeof escaped, "\\x%02x", static_cast<unsigned char>(c));
          shown += escaped;
        }
      }
      fail(ErrorCode::kFailedPrecondition, "the write count under '" + shown + "' in " + std::string(family) +
                                               " is not an integer ('" + *stored +
                                               "'): that count is damaged, and writes counted by it are refused");
    }
  }
  batch.put(family, counter_key, std::to_string(count + 1));
  write(batch, sync);
}

std::unique_ptr<KvIterator> KvStore::scan(std::string_view family, bool fill_cache) const {
  const Held db(db_);
  rocksdb::ReadOptions options;
  options.fill_cache = fill_cache;
  rocksdb::Iterator* it = db->db->NewIterator(options, db->family(family));
  return std::unique_ptr<KvIterator>(new KvIterator(db.shared(), it));
}

void KvStore::flush_wal(bool sync) {
  const Held db(db_);
  if (db->failed->load()) throw KvError("IO error: a write failed; the store must reopen before its log is synced");
  check(db->db->FlushWAL(sync));
}

std::uint64_t KvStore::latest_sequence_number() const { return Held(db_)->db->GetLatestSequenceNumber(); }

void KvStore::catch_up_with_primary() { check(Held(db_)->db->TryCatchUpWithPrimary()); }

void KvStore::checkpoint(const std::string& dir) {
  const Held db(db_);
  rocksdb::Checkpoint* made = nullptr;
  check(rocksdb::Checkpoint::Create(db->db, &made));
  const std::unique_ptr<rocksdb::Checkpoint> checkpoint(made);
  check(checkpoint->CreateCheckpoint(dir));
}

std::vector<std::string> KvStore::live_table_files() const {
  const Held db(db_);
  std::vector<rocksdb::LiveFileMetaData> files;
  db->db->GetLiveFilesMetaData(&files);
  std::vector<std::string> names;
  for (const auto& file : files) {
    const auto slash = file.name.find_last_of('/');
    names.push_back(slash == std::string::npos ? file.name : file.name.substr(slash + 1));
  }
  return names;
}

}  // namespace polarmem
