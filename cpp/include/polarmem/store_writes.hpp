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

#include <array>
#include <atomic>
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

// Upper bounds (seconds) of the item writes' latency buckets, +Inf after the last: what the
// metrics export as polarmem_store_write_seconds (api/metrics.py reads them from here).
inline constexpr std::array<double, 14> kStoreWriteBounds{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                          0.1,    0.25,  0.5,    1.0,   2.5,  5.0,   10.0};

// The item writes so far: per item, the seconds its write took (a batch's time shared by its items).
struct WriteTimes {
  std::array<std::uint64_t, kStoreWriteBounds.size() + 1> counts{};  // items per bucket
  double sum = 0.0;
};

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
  // `items`: the items the batch writes, timed into write_times() when the write succeeds
  // (0: a write of no item, settings or a deletion, is not timed).
  void write(KvBatch& batch, std::string_view count_family = {}, std::string_view count_key = {},
             std::size_t items = 0);
  WriteTimes write_times() const;
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
  void time_items(std::chrono::steady_clock::duration took, std::size_t items);
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
  std::array<std::atomic<std::uint64_t>, kStoreWriteBounds.size() + 1> timed_{};  // items per bucket
  std::atomic<std::uint64_t> timed_ns_{0};
};

}  // namespace polarmem
