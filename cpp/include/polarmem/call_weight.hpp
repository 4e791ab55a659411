// A thread that does the work of several calls gets the scheduler's share of that many.
//
// A shared encoder pass (shared_text_runs.hpp) runs on one thread for every call in it and every
// call queued behind it, but the kernel's fair scheduler gives each runnable thread one share:
// beside a dozen threads answering vector Recalls, a pass that seven text calls waited on got a
// twelfth of the CPU (the realistic mix's text p50 24-25 ms, p99 46-51 ms on the 2-core host of
// docs/performance.md "A realistic mix", round 12). Weighting the pass's thread by the calls
// waiting on it makes the scheduler fair per call rather than per thread. It lowers the thread's
// nice value, which needs CAP_SYS_NICE or an RLIMIT_NICE that allows it (root has both; a
// container needs `--cap-add SYS_NICE` or `--ulimit nice=30`, the systemd unit sets LimitNICE);
// past RLIMIT_NICE the weight stops at its floor, and where the kernel allows nothing the thread
// keeps one share and nothing else changes.
#pragma once

#include <cstddef>

namespace polarmem {

class ScopedCallWeight {
 public:
  // Weights the calling thread for `calls` calls (one share at its present nice value per call)
  // until destroyed, when it gets its own nice value back.
  explicit ScopedCallWeight(std::size_t calls) noexcept;
  ~ScopedCallWeight();
  ScopedCallWeight(const ScopedCallWeight&) = delete;
  ScopedCallWeight& operator=(const ScopedCallWeight&) = delete;

  // Re-weights the thread for `calls` calls; callable from any thread, serialised with the
  // destructor by the caller.
  void carry(std::size_t calls) noexcept;

  // Whether the kernel lets this process raise a thread's weight (probed once on the calling
  // thread, which is left as it was).
  static bool available() noexcept;

  // The nice value whose scheduler weight is nearest `calls` times that of nice `base` (Linux's
  // table, down to -20). Pure: the tests check the mapping.
  static int nice_for(int base, std::size_t calls) noexcept;

 private:
  int thread_ = 0;
  int base_nice_ = 0;
  int nice_ = 0;
  bool known_ = false;
};

}  // namespace polarmem
