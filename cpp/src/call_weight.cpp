#include "polarmem/call_weight.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>

#if defined(__linux__)
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace polarmem {
namespace {

// Linux's CFS weight per nice value, -20 .. 19 (kernel/sched/core.c, sched_prio_to_weight).
constexpr int kWeights[40] = {88761, 71755, 56483, 46273, 36291, 29154, 23254, 18705, 14949, 11916,
                              9548,  7620,  6100,  4904,  3906,  3121,  2501,  1991,  1586,  1277,
                              1024,  820,   655,   526,   423,   335,   272,   215,   172,   137,
                              110,   87,    70,    56,    45,    36,    29,    23,    18,    15};
constexpr int kMinNice = -20, kMaxNice = 19;

// Weights are compared on a log scale (the nearest ratio); the logs are taken once.
double log_weight(int nice) {
  static const auto logs = [] {
    std::array<double, 40> out{};
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = std::log(static_cast<double>(kWeights[i]));
    return out;
  }();
  return logs[static_cast<std::size_t>(nice - kMinNice)];
}

#if defined(__linux__)
int this_thread() noexcept { return static_cast<int>(::syscall(SYS_gettid)); }

// The thread's nice value, or false where the kernel does not say.
bool nice_of(int thread, int& nice) noexcept {
  errno = 0;
  nice = ::getpriority(PRIO_PROCESS, static_cast<id_t>(thread));
  return errno == 0;
}

bool set_nice(int thread, int nice) noexcept {
  return ::setpriority(PRIO_PROCESS, static_cast<id_t>(thread), nice) == 0;
}

// The lowest nice value RLIMIT_NICE lets a thread without CAP_SYS_NICE set: 20 - the limit.
int rlimit_floor() noexcept {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NICE, &limit) != 0) return kMaxNice;
  const rlim_t ceiling = limit.rlim_cur == RLIM_INFINITY || limit.rlim_cur > 40 ? 40 : limit.rlim_cur;
  return 20 - static_cast<int>(ceiling);
}
#endif

}  // namespace

int ScopedCallWeight::nice_for(int base, std::size_t calls) noexcept {
  base = base < kMinNice ? kMinNice : base > kMaxNice ? kMaxNice : base;
  if (calls <= 1) return base;
  const double wanted = log_weight(base) + std::log(static_cast<double>(calls));
  int best = base;
  for (int nice = base - 1; nice >= kMinNice; --nice)
    if (std::abs(log_weight(nice) - wanted) < std::abs(log_weight(best) - wanted)) best = nice;
  return best;
}

ScopedCallWeight::ScopedCallWeight(std::size_t calls) noexcept {
#if defined(__linux__)
  thread_ = this_thread();
  known_ = nice_of(thread_, base_nice_);
  nice_ = base_nice_;
  carry(calls);
#else
  (void)calls;
#endif
}

void ScopedCallWeight::carry(std::size_t calls) noexcept {
#if defined(__linux__)
  if (!known_ || !available()) return;  // where the kernel allows nothing, no syscall per pass
  const int nice = nice_for(base_nice_, calls);
  if (nice == nice_) return;
  if (set_nice(thread_, nice)) {
    nice_ = nice;
    return;
  }
  // Refused (no CAP_SYS_NICE): as low as RLIMIT_NICE allows, never above the thread's own.
  const int allowed = std::min(std::max(nice, rlimit_floor()), base_nice_);
  if (allowed != nice_ && set_nice(thread_, allowed)) nice_ = allowed;
#else
  (void)calls;
#endif
}

ScopedCallWeight::~ScopedCallWeight() {
#if defined(__linux__)
  // Raising a nice value back is always permitted.
  if (nice_ != base_nice_) (void)set_nice(thread_, base_nice_);
#endif
}

bool ScopedCallWeight::available() noexcept {
#if defined(__linux__)
  static const bool probed = [] {
    const int thread = this_thread();
    int nice = 0;
    if (!nice_of(thread, nice) || nice <= kMinNice) return false;
    if (!set_nice(thread, nice - 1)) return false;
    (void)set_nice(thread, nice);
    return true;
  }();
  return probed;
#else
  return false;
#endif
}

}  // namespace polarmem
