// The local store's write-failure policy, one for every door that writes through the store's
// handle (kv_store.hpp). A write that fails on the disk (full, or an I/O error) is classified by
// RocksDB's text, remembered and answered to every later write until a reopen succeeds: RocksDB
// keeps a log writer's error for good ("Writer has previous error"), so the way back is a close
// and an open, which replays the log (absolute consistency: a failed append left no acknowledged
// record behind) and starts a new one, and an empty write proves the new log takes writes. A
// reopen is tried at most once per reopen interval, by the next write or by the server's watchdog
// (try_resume), so writes resume once the cause is gone, without a restart
// (docs/failure-behaviour.md).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "polarmem/error.hpp"
#include "polarmem/kv_store.hpp"

namespace polarmem {

enum class WriteFailure : std::uint8_t { none, disk_full, io_error };

// Whether RocksDB's text says the disk is full (writes and opens alike).
bool is_no_space(std::string_view message);

class StoreWrites {
 public:
  // Told of each write the disk refused (with RocksDB's text) and of each successful reopen;
  // called on the writing thread, before the write's error is thrown, with no lock held.
  using Failed = std::function<void(WriteFailure, const std::string& message)>;
  using Resumed = std::function<void()>;

  StoreWrites(std::shared_ptr<KvStore> store, bool sync, std::chrono::milliseconds reopen_interval);

  // One atomic write (synced when the store is). With a count key, the ASCII count under it in
  // `count_family` is bumped in the same batch (KvStore::write_counted). Throws
  // Error(kResourceExhausted) for a full disk and Error(kUnavailable) for an I/O error, while a
  // reopen is not due yet, or once closed; Error(kFailedPrecondition) for a damaged count (this
  // write alone refused, the store sound).
  void write(KvBatch& batch, std::string_view count_family = {}, std::string_view count_key = {});
  // After a failed write: reopens the store if the interval has passed. True when writes work
  // (again, or never failed).
  bool try_resume();
  // Later writes are refused (the server is shutting down); waits for the write in flight. The
  // handle stays its owner's to close.
  void close();
  WriteFailure failure() const;
  void watch(Failed failed, Resumed resumed);

 private:
  Error failure_error_locked() const;  // what every write answers while failure_ stands
  bool try_reopen_locked();

  std::shared_ptr<KvStore> store_;
  const bool sync_;
  const std::chrono::milliseconds reopen_interval_;
  mutable std::mutex mutex_;  // writes, one at a time, and the failure state
  bool closed_ = false;
  WriteFailure failure_ = WriteFailure::none;
  std::string failure_message_;  // RocksDB's text of the write that failed
  std::chrono::steady_clock::time_point next_reopen_;
  std::shared_ptr<const Failed> failed_;  // swapped whole by watch, read under mutex_, called outside it
  std::shared_ptr<const Resumed> resumed_;
};

}  // namespace polarmem
