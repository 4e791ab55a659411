// ScopedCallWeight: the nice value for n calls' weight, set on the thread and given back, and
// re-weighting from another thread. Where the kernel refuses (no CAP_SYS_NICE), the thread's nice
// value must stay as it was.
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

#include "check.hpp"
#include "polarmem/call_weight.hpp"

using namespace polarmem;

namespace {

int thread_id() { return static_cast<int>(::syscall(SYS_gettid)); }
int nice_of(int thread) { return ::getpriority(PRIO_PROCESS, static_cast<id_t>(thread)); }

// What the kernel lets this thread go down to: anything with CAP_SYS_NICE (root here), else
// RLIMIT_NICE's floor.
int lowest_allowed() {
  if (::geteuid() == 0) return -20;
  rlimit limit{};
  ::getrlimit(RLIMIT_NICE, &limit);
  const rlim_t ceiling = limit.rlim_cur == RLIM_INFINITY || limit.rlim_cur > 40 ? 40 : limit.rlim_cur;
  return 20 - static_cast<int>(ceiling);
}

}  // namespace

POLARMEM_TEST(nice_for_picks_the_nearest_weight) {
  CHECK(ScopedCallWeight::nice_for(0, 0) == 0);
  CHECK(ScopedCallWeight::nice_for(0, 1) == 0);
  CHECK(ScopedCallWeight::nice_for(0, 2) == -3);    // 1991 against 2048
  CHECK(ScopedCallWeight::nice_for(0, 7) == -9);    // 7620 against 7168
  CHECK(ScopedCallWeight::nice_for(5, 3) == 0);     // 3 x 335 against 1024
  CHECK(ScopedCallWeight::nice_for(0, 1000) == -20);
  CHECK(ScopedCallWeight::nice_for(-20, 4) == -20);
  CHECK(ScopedCallWeight::nice_for(40, 1) == 19);   // out of range: clamped
}

POLARMEM_TEST(a_weight_holds_for_its_scope_where_the_kernel_allows_it) {
  const int thread = thread_id();
  const int base = nice_of(thread);
  const bool allowed = ScopedCallWeight::available();
  std::printf("  raising a thread's weight is %s here (nice %d)\n", allowed ? "allowed" : "refused", base);
  CHECK(nice_of(thread) == base);  // the probe left the thread as it was
  {
    ScopedCallWeight weight(4);
    CHECK(nice_of(thread) == (allowed ? ScopedCallWeight::nice_for(base, 4) : base));
    weight.carry(1);
    CHECK(nice_of(thread) == base);
    weight.carry(7);
    CHECK(nice_of(thread) == (allowed ? ScopedCallWeight::nice_for(base, 7) : base));
  }
  CHECK(nice_of(thread) == base);
}

POLARMEM_TEST(a_weight_past_rlimit_nice_stops_at_its_floor) {
  // Run as root, the whole range is allowed; run with `ulimit -e 30` as another user, the weight
  // for a thousand calls (nice -20) stops at -10 instead of failing outright.
  const int thread = thread_id();
  const int base = nice_of(thread);
  {
    ScopedCallWeight weight(1000);
    const int expected = ScopedCallWeight::available() ? std::min(std::max(-20, lowest_allowed()), base) : base;
    CHECK(nice_of(thread) == expected);
  }
  CHECK(nice_of(thread) == base);
}

POLARMEM_TEST(another_thread_re_weights_a_running_pass) {
  std::mutex mutex;
  std::condition_variable changed;
  ScopedCallWeight* weight = nullptr;
  int worker = 0, base = 0, seen = 0;
  bool measured = false, release = false;
  std::thread pass([&] {
    ScopedCallWeight own(1);
    std::unique_lock lock(mutex);
    weight = &own;
    worker = thread_id();
    base = nice_of(worker);
    changed.notify_all();
    changed.wait(lock, [&] { return measured; });
    weight = nullptr;
    release = true;
  });
  {
    std::unique_lock lock(mutex);
    changed.wait(lock, [&] { return weight != nullptr; });
    weight->carry(5);
    seen = nice_of(worker);
    measured = true;
    changed.notify_all();
  }
  pass.join();
  CHECK(release);
  CHECK(seen == (ScopedCallWeight::available() ? ScopedCallWeight::nice_for(base, 5) : base));
}

int main() { return polarmem::testing::run_all(); }
