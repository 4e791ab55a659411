// Threads for the Recalls the gRPC thread that read them should not answer. The front answers a
// Recall on the callback thread that read it off the socket (fast_front.cpp): no hand-over to a
// second thread, which cost more server CPU than a small Recall's own work. gRPC has few such
// threads (half the cores, 2 to 16) and they read every other call too, so two kinds of Recall
// run here instead: one that may wait — a text Recall waits for the shared encoder pass
// (shared_text_runs.hpp), whose thread is re-weighted by the calls it carries (call_weight.hpp),
// unless it is the only call in the front (no other Recall's pass to wait for) — and, on a host with more cores
// than reading threads, one that arrives while every other reading thread is answering
// (answer_where_read).
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace polarmem::front {

// gRPC C++'s threads for callback methods where its poller does not run them itself (its
// CallbackAlternativeCQ, gRPC 1.51 as Debian ships it): half the cores, 2 to 16.
inline std::size_t reading_threads(std::size_t cores) { return std::clamp<std::size_t>(cores / 2, 2, 16); }

// Whether a Recall is answered on the thread that read it, `busy` of gRPC's `readers` reading
// threads already answering one, on a host of `cores`: always where the reading threads cover the
// cores (the CPU has no other thread to give the work to), otherwise while one reading thread
// stays free to read, so that the other cores get the calls beyond (through CallWorkers) instead
// of waiting in the sockets.
inline bool answer_where_read(std::size_t busy, std::size_t readers, std::size_t cores) {
  return cores <= readers || busy + 1 < readers;
}

class CallWorkers {
 public:
  static constexpr const char* kThreadName = "polarmem-recall";  // at most 15 characters (Linux)

  // Threads start as work needs them, up to `max_threads` (at least 1), and stay; past that,
  // work queues in arrival order. A waiting text Recall must reach the encoder's queue to share
  // its next pass, so the cap should be the calls the front admits at once.
  explicit CallWorkers(std::size_t max_threads);
  // Runs what is queued, then joins the threads (no run() may race it).
  ~CallWorkers();
  CallWorkers(const CallWorkers&) = delete;
  CallWorkers& operator=(const CallWorkers&) = delete;

  // Queues `work`; throws std::system_error (and queues nothing) when it needs a thread, none
  // can start and none is running.
  void run(std::function<void()> work);

 private:
  void loop();

  const std::size_t max_threads_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> queue_;
  std::vector<std::thread> threads_;
  std::size_t idle_ = 0;
  bool stopping_ = false;
};

}  // namespace polarmem::front
