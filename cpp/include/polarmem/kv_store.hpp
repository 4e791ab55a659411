// The local store's RocksDB handle, owned by the core: open (read-write, read-only or as a
// secondary that follows a primary), point reads, scans, atomic batches across column families,
// checkpoints, a reopen in place and RocksDB's own repair. The write-failure policy that reopens
// it is store_writes.hpp's; the Python store (storage/local/store.py) calls both for every byte it
// reads or writes, so that compiled code (a native Remember) writes through the same handle.
//
// Tables are written at block-based format 5: the RocksDB this links (Debian's 7.8.3) reads no
// later format, and 9.x reads format 5, so a store stays readable by both (table_format.py moves a
// store that rocksdict wrote at format 6).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rocksdb {
class Env;
class Iterator;
}  // namespace rocksdb

namespace polarmem {

// A RocksDB status that is not OK, with RocksDB's own text ("Corruption: ...", "IO error: No
// space left on device ..."): the Python store classifies failures by that text.
class KvError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class KvAccess { read_write, read_only, secondary };
enum class WalRecovery { absolute_consistency, point_in_time };

struct KvOpenOptions {
  KvAccess access = KvAccess::read_write;
  std::string secondary_path;  // KvAccess::secondary: where the secondary keeps its own files
  std::string info_log_dir;    // "" keeps RocksDB's LOG in the store's directory
  bool create_if_missing = false;
  bool create_missing_column_families = false;
  bool paranoid_checks = true;
  std::size_t db_write_buffer_size = 0;  // 0: RocksDB's default (no shared memtable budget)
  WalRecovery wal_recovery = WalRecovery::absolute_consistency;
  rocksdb::Env* env = nullptr;  // nullptr: RocksDB's default; the tests put a failing disk here
};

// Operations collected before a write; KvStore::write turns them into one RocksDB WriteBatch
// with the store's current column-family handles (a batch never holds a handle that a reopen
// after a failed write may have closed).
class KvBatch {
 public:
  void put(std::string_view family, std::string_view key, std::string_view value);
  void remove(std::string_view family, std::string_view key);
  void remove_range(std::string_view family, std::string_view begin, std::string_view end);

 private:
  friend class KvStore;
  enum class Kind : std::uint8_t { put, remove, remove_range };
  struct Op {
    Kind kind;
    std::string family, key, value;  // remove_range: value is the (exclusive) end key
  };
  std::vector<Op> ops_;
};

class KvStore;
struct KvDatabase;  // the open database and its column-family handles (kv_store.cpp)

// A forward scan of one column family. A close of the store cuts it off: its later steps raise
// KvError (never read what a close freed).
class KvIterator {
 public:
  ~KvIterator();
  void seek(std::string_view key);
  void seek_to_first();
  bool valid() const;
  void next();
  // Up to `limit` entries from the current one on, while their keys start with `prefix`, moving
  // past them: a prefix scan in one call per batch instead of four per key. Raises KvError when
  // an error (a corrupt block) ended the scan.
  std::vector<std::pair<std::string, std::string>> take(std::string_view prefix, std::size_t limit);
  void check_status() const;  // throws KvError when an error (a corrupt block) ended the scan

 private:
  friend class KvStore;
  friend struct KvDatabase;
  KvIterator(std::shared_ptr<KvDatabase> db, rocksdb::Iterator* it);
  std::shared_ptr<KvDatabase> db_;
  std::unique_ptr<rocksdb::Iterator> it_;
};

class KvStore {
 public:
  // The column families a store holds, read from its MANIFEST without opening it.
  static std::vector<std::string> list_families(const std::string& path);
  // RocksDB's RepairDB: rebuilds the MANIFEST from whatever table and log files it can read.
  static void repair(const std::string& path);

  // Opens `path` with the column families `families` (the default family is opened too).
  KvStore(const std::string& path, const std::vector<std::string>& families, const KvOpenOptions& options);
  ~KvStore();
  KvStore(const KvStore&) = delete;
  KvStore& operator=(const KvStore&) = delete;

  // Waits for the calls in flight, cuts off open scans and closes the database (its LOCK is free
  // when this returns); later calls throw KvError.
  void close();
  bool is_open() const;
  // A read-write store closed and opened again in place, with the options it was opened with
  // (never creating it): the way back after a failed write (store_writes.hpp). Calls meanwhile
  // wait for it; after a reopen that failed they throw Error(kUnavailable); a store closed by
  // close() stays closed (KvError).
  void reopen();

  std::optional<std::string> get(std::string_view family, std::string_view key) const;
  // One RocksDB multi-get: the value of each key, nullopt where it is absent.
  std::vector<std::optional<std::string>> multi_get(std::string_view family,
                                                    const std::vector<std::string>& keys) const;
  // Atomic across column families; sync: the write-ahead log is synced before this returns.
  void write(const KvBatch& batch, bool sync);
  // `write` with a count of writes bumped in the same batch: the ASCII integer under
  // `counter_key` in `family` (absent: 0) plus one. Counted writes are serialised, so each adds
  // exactly one whichever door wrote it.
  void write_counted(KvBatch& batch, std::string_view family, std::string_view counter_key, bool sync);
  std::unique_ptr<KvIterator> scan(std::string_view family, bool fill_cache = true) const;

  void flush_wal(bool sync);
  std::uint64_t latest_sequence_number() const;
  void catch_up_with_primary();  // a secondary: reads what the primary wrote since
  void checkpoint(const std::string& dir);
  std::vector<std::string> live_table_files() const;  // the .sst names the MANIFEST lists

 private:
  std::string path_;
  std::vector<std::string> families_;
  KvOpenOptions options_;
  std::shared_ptr<KvDatabase> db_;  // set for the store's lifetime, reopened in place; shared with its scans
  std::mutex counted_;              // write_counted: the count's read and its write as one step
};

}  // namespace polarmem
