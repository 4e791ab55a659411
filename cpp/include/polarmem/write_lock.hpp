// A namespace's write lock: every door that changes a namespace holds it — the library's writes
// through ChangeLock (domain/namespace.py), which keeps its listeners around it, and a native
// Remember next — so writes to one namespace are serialised whichever door they come through.
// Reentrant, as a write may make another under it (an observe's re-partition), and timed, as a
// view's hand-over waits a little for a write and then gives up.
#pragma once

#include <chrono>
#include <mutex>

namespace polarmem {

class WriteLock {
 public:
  void lock() { mutex_.lock(); }
  bool try_lock() { return mutex_.try_lock(); }
  bool try_lock_for(double seconds) { return mutex_.try_lock_for(std::chrono::duration<double>(seconds)); }
  void unlock() { mutex_.unlock(); }  // by the thread that holds it

 private:
  std::recursive_timed_mutex mutex_;
};

}  // namespace polarmem
