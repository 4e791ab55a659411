// What the compiled front says when it failed on a call itself (an exception escaped the core's
// answer: the core states everything it refuses, request_checks.hpp, so anything thrown is a
// fault): the caller's INTERNAL message and the operator's log line. Plain C++ (no gRPC), so
// CTest checks both wherever the core builds (cpp/tests/test_fault_log.cpp).
#pragma once

#include <chrono>
#include <string>
#include <string_view>

namespace polarmem::front {

// The INTERNAL status's message; `what`: the exception's words, or null where it had none.
std::string fault_message(std::string_view method, const char* what);

// One line in the Python listener's log format ("%(asctime)s %(levelname)s %(name)s:
// %(message)s", local time, api/server.py), ending in a newline: a fault the front answered has
// no Python traceback, and the PolarMemInternalErrors runbook (docs/operations.md) sends the
// operator to this line. Line breaks in the message are written as spaces, so one fault is one
// line for whatever reads the log line by line.
std::string internal_error_line(std::string_view method, std::string_view message,
                                std::chrono::system_clock::time_point when);

// That line for now, on stderr (where the Python listener's log goes), in one write.
void log_internal(std::string_view method, std::string_view message);

}  // namespace polarmem::front
