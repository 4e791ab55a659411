// What a run measured, and the CPU clocks it reads: this process (getrusage) and the server's
// processes (/proc/PID/stat, with the CPU of children they have reaped, e.g. PostgreSQL backends).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace loadgen {

struct RunResult {
  std::vector<double> latencies_us;     // of OK calls
  std::map<std::string, int64_t> codes; // status code name -> calls
  int64_t started = 0;
  int64_t not_started = 0;              // open loop: over --max-outstanding, never sent
  double wall_s = 0;
  double client_cpu_s = 0;
  std::vector<double> server_cpu_s;     // one per --server-pid
  double behind_s = 0;                  // open loop: how late the last call was started
};

// Seconds of user + system CPU of this process so far.
double SelfCpuSeconds();

// Seconds of user + system CPU of `pid`, its threads, and its reaped children; -1 if unreadable.
double ProcessCpuSeconds(int pid);

// The status code's name as grpc spells it (OK, DEADLINE_EXCEEDED, ...).
std::string StatusCodeName(int code);

// One JSON object with the run's settings (already rendered as `settings_json` members) and figures.
std::string ResultJson(const std::string& settings_json, RunResult& result, const std::vector<int>& server_pids);

}  // namespace loadgen
