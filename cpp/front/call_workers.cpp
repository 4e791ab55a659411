#include "call_workers.hpp"

#include <pthread.h>

#include <algorithm>
#include <system_error>

namespace polarmem::front {

CallWorkers::CallWorkers(std::size_t max_threads) : max_threads_(std::max<std::size_t>(1, max_threads)) {}

CallWorkers::~CallWorkers() {
  {
    std::lock_guard guard(mutex_);
    stopping_ = true;
  }
  ready_.notify_all();
  for (std::thread& thread : threads_) thread.join();
}

void CallWorkers::run(std::function<void()> work) {
  std::lock_guard guard(mutex_);
  queue_.push_back(std::move(work));
  if (idle_ < queue_.size() && threads_.size() < max_threads_) {
    try {
      threads_.emplace_back([this] { loop(); });
      return;
    } catch (const std::system_error&) {
      // Out of threads: a running one takes it in turn; with none, the caller must do the work.
      if (threads_.empty()) {
        queue_.pop_back();
        throw;
      }
    }
  }
  ready_.notify_one();
}

void CallWorkers::loop() {
  // A thread inherits its starter's name (here one of gRPC's "nexting_thread"s): named apart so
  // top and perf tell the front's text Recalls from gRPC's own work.
  pthread_setname_np(pthread_self(), kThreadName);
  std::unique_lock lock(mutex_);
  for (;;) {
    if (queue_.empty()) {
      if (stopping_) return;
      ++idle_;
      ready_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      --idle_;
      continue;
    }
    std::function<void()> work = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    work();
    lock.lock();
  }
}

}  // namespace polarmem::front
