#include "stats.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

namespace loadgen {

double SelfCpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_utime.tv_sec + usage.ru_utime.tv_usec * 1e-6 + usage.ru_stime.tv_sec + usage.ru_stime.tv_usec * 1e-6;
}

double ProcessCpuSeconds(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return -1;
  // The command name (field 2) may hold spaces: fields are counted after its closing ')'.
  size_t close = line.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream fields(line.substr(close + 2));
  std::string field;
  double ticks = 0;
  // Fields 3.. follow; utime, stime, cutime, cstime are fields 14-17.
  for (int index = 3; index <= 17 && fields >> field; ++index) {
    if (index >= 14) ticks += std::stod(field);
  }
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

std::string StatusCodeName(int code) {
  static const char* kNames[] = {
      "OK",        "CANCELLED",      "UNKNOWN",           "INVALID_ARGUMENT",   "DEADLINE_EXCEEDED",
      "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
      "ABORTED",   "OUT_OF_RANGE",   "UNIMPLEMENTED",     "INTERNAL",           "UNAVAILABLE",
      "DATA_LOSS", "UNAUTHENTICATED"};
  if (code >= 0 && code < static_cast<int>(sizeof(kNames) / sizeof(kNames[0]))) return kNames[code];
  return "CODE_" + std::to_string(code);
}

namespace {

// Nearest-rank percentile of sorted values.
double Percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return NAN;
  size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * sorted.size()));
  return sorted[std::min(sorted.size(), std::max<size_t>(rank, 1)) - 1];
}

std::string Number(double value) {
  if (std::isnan(value) || std::isinf(value)) return "null";
  std::ostringstream out;
  out.precision(6);
  out << value;
  return out.str();
}

}  // namespace

std::string ResultJson(const std::string& settings_json, RunResult& r, const std::vector<int>& server_pids) {
  std::sort(r.latencies_us.begin(), r.latencies_us.end());
  int64_t ok = static_cast<int64_t>(r.latencies_us.size());
  int64_t completed = 0;
  for (const auto& [name, count] : r.codes) completed += count;
  double mean = 0;
  for (double v : r.latencies_us) mean += v;
  mean = ok ? mean / ok : NAN;
  std::ostringstream out;
  out << "{" << settings_json << ", \"started\": " << r.started << ", \"completed\": " << completed
      << ", \"ok\": " << ok << ", \"not_started\": " << r.not_started << ", \"codes\": {";
  bool first = true;
  for (const auto& [name, count] : r.codes) {
    out << (first ? "" : ", ") << "\"" << name << "\": " << count;
    first = false;
  }
  out << "}, \"wall_s\": " << Number(r.wall_s) << ", \"throughput_rps\": " << Number(r.wall_s > 0 ? ok / r.wall_s : NAN)
      << ", \"latency_ms\": {\"p50\": " << Number(Percentile(r.latencies_us, 50) / 1e3)
      << ", \"p95\": " << Number(Percentile(r.latencies_us, 95) / 1e3)
      << ", \"p99\": " << Number(Percentile(r.latencies_us, 99) / 1e3)
      << ", \"p99.9\": " << Number(Percentile(r.latencies_us, 99.9) / 1e3) << ", \"mean\": " << Number(mean / 1e3)
      << ", \"min\": " << Number(ok ? r.latencies_us.front() / 1e3 : NAN)
      << ", \"max\": " << Number(ok ? r.latencies_us.back() / 1e3 : NAN) << "}"
      << ", \"behind_s\": " << Number(r.behind_s) << ", \"client_cpu_s\": " << Number(r.client_cpu_s)
      << ", \"client_cores\": " << Number(r.wall_s > 0 ? r.client_cpu_s / r.wall_s : NAN) << ", \"server\": [";
  for (size_t i = 0; i < server_pids.size(); ++i) {
    double cpu = r.server_cpu_s[i];
    out << (i ? ", " : "") << "{\"pid\": " << server_pids[i] << ", \"cpu_s\": " << Number(cpu)
        << ", \"cores\": " << Number(r.wall_s > 0 ? cpu / r.wall_s : NAN)
        << ", \"cpu_ms_per_call\": " << Number(completed ? cpu * 1e3 / completed : NAN) << "}";
  }
  out << "]}";
  return out.str();
}

}  // namespace loadgen
