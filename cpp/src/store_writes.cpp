#include "polarmem/store_writes.hpp"

#include <algorithm>
#include <cctype>
#include <exception>
#include <optional>
#include <utility>

#include "polarmem/error.hpp"

namespace polarmem {

namespace {

bool contains_folded(std::string_view text, std::string_view lower) {
  return std::search(text.begin(), text.end(), lower.begin(), lower.end(),
                     [](char a, char b) { return std::tolower(static_cast<unsigned char>(a)) == b; }) != text.end();
}

// RocksDB's text on one line, as the client and the log read it.
std::string one_line(std::string_view message) {
  std::string out;
  bool space = false;
  for (const char c : message) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      space = !out.empty();
      continue;
    }
    if (space) out.push_back(' ');
    space = false;
    out.push_back(c);
  }
  return out;
}

}  // namespace

bool is_no_space(std::string_view message) {
  return contains_folded(message, "no space left") || contains_folded(message, "nospace");
}

StoreWrites::StoreWrites(std::shared_ptr<KvStore> store, bool sync, std::chrono::milliseconds reopen_interval)
    : store_(std::move(store)), sync_(sync), reopen_interval_(reopen_interval) {}

void StoreWrites::watch(Failed failed, Resumed resumed) {
  const std::lock_guard guard(mutex_);
  failed_ = std::make_shared<const Failed>(std::move(failed));
  resumed_ = std::make_shared<const Resumed>(std::move(resumed));
}

WriteFailure StoreWrites::failure() const {
  const std::lock_guard guard(mutex_);
  return failure_;
}

Error StoreWrites::failure_error_locked() const {
  if (failure_ == WriteFailure::disk_full)
    return Error(ErrorCode::kResourceExhausted,
                 "the data directory's disk is full: nothing was stored; free space on it and retry (writes resume "
                 "by themselves, reads keep working)");
  return Error(ErrorCode::kUnavailable,
               "the store could not write (" + failure_message_ + "): nothing was stored; retry later");
}

void StoreWrites::write(KvBatch& batch, std::string_view count_family, std::string_view count_key, std::size_t items) {
  std::unique_lock lock(mutex_);
  if (closed_)
    fail(ErrorCode::kUnavailable, "the store is closed (the server is shutting down); retry on another server");
  const bool reopened = failure_ != WriteFailure::none;
  if (reopened && !try_reopen_locked()) throw failure_error_locked();
  std::exception_ptr refused;  // a garbled count: this write alone refused, the store sound
  std::string message;
  try {
    const auto started = std::chrono::steady_clock::now();
    if (count_key.empty()) {
      store_->write(batch, sync_);
    } else {  // the count bumped in the same batch, one per write whichever door wrote
      store_->write_counted(batch, count_family, count_key, sync_);
    }
    if (items != 0) time_items(std::chrono::steady_clock::now() - started, items);
  } catch (const Error& e) {
    if (e.code() == ErrorCode::kFailedPrecondition) {
      refused = std::current_exception();
    } else {
      message = one_line(e.what());
    }
  } catch (const std::exception& e) {
    message = one_line(e.what());
  }
  std::optional<Error> error;
  if (!message.empty()) {
    failure_ = is_no_space(message) ? WriteFailure::disk_full : WriteFailure::io_error;
    failure_message_ = message;
    next_reopen_ = std::chrono::steady_clock::now() + reopen_interval_;
    error = failure_error_locked();
  }
  const WriteFailure kind = failure_;
  const std::shared_ptr<const Resumed> tell_resumed = reopened ? resumed_ : nullptr;
  const std::shared_ptr<const Failed> tell_failed = error ? failed_ : nullptr;
  lock.unlock();
  if (tell_resumed != nullptr) (*tell_resumed)();
  if (tell_failed != nullptr) (*tell_failed)(kind, message);
  if (refused) std::rethrow_exception(refused);
  if (error) throw *error;
}

void StoreWrites::time_items(std::chrono::steady_clock::duration took, std::size_t items) {
  const double per_item = std::chrono::duration<double>(took).count() / static_cast<double>(items);
  const auto bucket = static_cast<std::size_t>(
      std::lower_bound(kStoreWriteBounds.begin(), kStoreWriteBounds.end(), per_item) - kStoreWriteBounds.begin());
  timed_[bucket].fetch_add(items, std::memory_order_relaxed);
  timed_ns_.fetch_add(static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(took).count()),
                      std::memory_order_relaxed);
}

WriteTimes StoreWrites::write_times() const {
  WriteTimes out;
  for (std::size_t i = 0; i < out.counts.size(); ++i) out.counts[i] = timed_[i].load(std::memory_order_relaxed);
  out.sum = static_cast<double>(timed_ns_.load(std::memory_order_relaxed)) * 1e-9;
  return out;
}

bool StoreWrites::try_resume() {
  std::shared_ptr<const Resumed> tell;
  {
    const std::lock_guard guard(mutex_);
    if (failure_ == WriteFailure::none) return true;
    if (closed_ || !try_reopen_locked()) return false;
    tell = resumed_;
  }
  if (tell != nullptr) (*tell)();
  return true;
}

bool StoreWrites::try_reopen_locked() {
  const auto now = std::chrono::steady_clock::now();
  if (now < next_reopen_) return false;
  next_reopen_ = now + reopen_interval_;
  try {
    store_->reopen();
    KvBatch probe;
    store_->write(probe, sync_);  // proves the new log takes writes
  } catch (const std::exception&) {
    return false;  // still failing: the remembered failure stands (a later write tells its own)
  }
  failure_ = WriteFailure::none;
  failure_message_.clear();
  return true;
}

void StoreWrites::close() {
  const std::lock_guard guard(mutex_);
  closed_ = true;
}

}  // namespace polarmem
