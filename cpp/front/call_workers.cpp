#include "call_workers.hpp"

#include <algorithm>

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
    threads_.emplace_back([this] { loop(); });
  } else {
    ready_.notify_one();
  }
}

void CallWorkers::loop() {
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
