// Error codes the core signals; the binding translates them to Python exceptions in one place.
#pragma once

#include <stdexcept>
#include <string>

namespace polarmem {

enum class ErrorCode {
  kInvalidArgument,     // malformed input: wrong shape, NaN, unknown space, k == 0
  kOutOfRange,          // a concept id or slot outside what the index holds
  kFailedPrecondition,  // valid input the index's current state cannot accept (removed slot)
  kResourceExhausted,   // the store's disk is full: nothing was written (store_writes.hpp)
  kUnavailable,         // the store cannot write now (an I/O error, a reopen, a shutdown): retry
};

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const noexcept { return code_; }

 private:
  ErrorCode code_;
};

[[noreturn]] inline void fail(ErrorCode code, const std::string& message) { throw Error(code, message); }

}  // namespace polarmem
