// A software prefetch the optimiser keeps.
//
// GCC treats __builtin_prefetch as free of side effects, so a loop that does nothing but prefetch
// (one prefetch per cache line of a row) is an empty loop to it and is deleted at -O1 and above:
// the row prefetches of the tiered scan compiled to nothing (checked with objdump: no prefetch
// instruction in index.cpp.o) until this helper. An asm volatile statement is never deleted.
#pragma once

namespace polarmem {

inline void prefetch_line(const void* address) noexcept {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  asm volatile("prefetcht0 %0" : : "m"(*static_cast<const char*>(address)));
#elif defined(__aarch64__) && (defined(__GNUC__) || defined(__clang__))
  asm volatile("prfm pldl1keep, %a0" : : "p"(address));
#else
  __builtin_prefetch(address);
#endif
}

}  // namespace polarmem
