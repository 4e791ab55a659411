// Command line of the load generator and the request file it replays.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace loadgen {

enum class Mode { kClosed, kOpen };

struct Options {
  std::string target;          // host:port of the server (loopback in the benchmarks)
  std::string rpc;             // recall | remember | get_item | get_namespace
  std::string requests_path;   // length-prefixed serialized request messages
  Mode mode = Mode::kClosed;
  int concurrency = 1;         // closed loop: calls in flight
  double rate = 0;             // open loop: calls started per second
  int64_t max_calls = 10000;   // bound on measured calls
  double duration_s = 10;      // bound on measured time
  double warmup_s = 0;         // calls before the measurement, not recorded
  int deadline_ms = 10000;     // per call
  int channels = 1;            // separate HTTP/2 connections, used round-robin
  bool once = false;           // send each request at most once (Remember: ids must be new)
  int64_t max_outstanding = 4096;  // open loop: calls beyond this are not started (counted)
  std::vector<int> server_pids;    // processes whose CPU time is read from /proc over the measurement
  std::string latencies_out;       // optional: every OK call's latency (µs), one per line, for percentiles over
                                   // several concurrent load generators (a request mix)
};

// Parses argv; on a bad or missing flag prints what is wrong and how to fix it, and exits 2.
Options ParseOptions(int argc, char** argv);

// Reads the request file: each record is a little-endian uint32 length, then that many bytes.
// Exits 2 with the file and record index on a truncated file or an empty one.
std::vector<std::string> ReadRequestFile(const std::string& path);

}  // namespace loadgen
