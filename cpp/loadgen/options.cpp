#include "options.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>

namespace loadgen {
namespace {

const char kUsage[] =
    "usage: polarmem-loadgen --target HOST:PORT --rpc recall|remember|get_item|get_namespace\n"
    "         --requests FILE [--mode closed|open] [--concurrency N] [--rate CALLS_PER_S]\n"
    "         [--max-calls M] [--duration-s T] [--warmup-s W] [--deadline-ms D] [--channels C]\n"
    "         [--once] [--max-outstanding K] [--server-pid PID]... [--latencies-out FILE]\n"
    "FILE holds the RPC's request messages, each as a little-endian uint32 length and the\n"
    "serialized message. Closed loop keeps N calls in flight; open loop starts calls at a fixed\n"
    "rate whatever the answers do. The run stops at M measured calls or T seconds, whichever\n"
    "comes first. Prints one JSON object: latency percentiles, throughput, status codes, and the\n"
    "CPU time of this process and of each --server-pid over the measurement.\n";

[[noreturn]] void Fail(const std::string& message) {
  std::cerr << "polarmem-loadgen: " << message << "\n" << kUsage;
  std::exit(2);
}

double ParseNumber(const char* flag, const char* text) {
  char* end = nullptr;
  double value = std::strtod(text, &end);
  if (end == text || *end != '\0') Fail(std::string(flag) + " needs a number, got '" + text + "'");
  return value;
}

}  // namespace

Options ParseOptions(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      std::cout << kUsage;
      std::exit(0);
    }
    if (flag == "--once") {
      o.once = true;
      continue;
    }
    if (i + 1 >= argc) Fail(flag + " needs a value");
    const char* value = argv[++i];
    if (flag == "--target") o.target = value;
    else if (flag == "--rpc") o.rpc = value;
    else if (flag == "--requests") o.requests_path = value;
    else if (flag == "--mode") {
      std::string m = value;
      if (m == "closed") o.mode = Mode::kClosed;
      else if (m == "open") o.mode = Mode::kOpen;
      else Fail("--mode must be closed or open, got '" + m + "'");
    } else if (flag == "--concurrency") o.concurrency = static_cast<int>(ParseNumber("--concurrency", value));
    else if (flag == "--rate") o.rate = ParseNumber("--rate", value);
    else if (flag == "--max-calls") o.max_calls = static_cast<int64_t>(ParseNumber("--max-calls", value));
    else if (flag == "--duration-s") o.duration_s = ParseNumber("--duration-s", value);
    else if (flag == "--warmup-s") o.warmup_s = ParseNumber("--warmup-s", value);
    else if (flag == "--deadline-ms") o.deadline_ms = static_cast<int>(ParseNumber("--deadline-ms", value));
    else if (flag == "--channels") o.channels = static_cast<int>(ParseNumber("--channels", value));
    else if (flag == "--max-outstanding")
      o.max_outstanding = static_cast<int64_t>(ParseNumber("--max-outstanding", value));
    else if (flag == "--latencies-out") o.latencies_out = value;
    else if (flag == "--server-pid") o.server_pids.push_back(static_cast<int>(ParseNumber("--server-pid", value)));
    else Fail("unknown flag " + flag);
  }
  if (o.target.empty()) Fail("--target is required (e.g. 127.0.0.1:50051)");
  if (o.rpc != "recall" && o.rpc != "remember" && o.rpc != "get_item" && o.rpc != "get_namespace")
    Fail("--rpc must be recall, remember, get_item or get_namespace, got '" + o.rpc + "'");
  if (o.requests_path.empty()) Fail("--requests is required (a file of length-prefixed request messages)");
  if (o.concurrency < 1) Fail("--concurrency must be at least 1");
  if (o.mode == Mode::kOpen && o.rate <= 0) Fail("--mode open needs --rate > 0 (calls started per second)");
  if (o.max_calls < 1) Fail("--max-calls must be at least 1");
  if (o.duration_s <= 0) Fail("--duration-s must be > 0: every run is bounded in time");
  if (o.warmup_s < 0) Fail("--warmup-s must be >= 0");
  if (o.deadline_ms < 1) Fail("--deadline-ms must be at least 1");
  if (o.channels < 1) Fail("--channels must be at least 1");
  if (o.max_outstanding < 1) Fail("--max-outstanding must be at least 1");
  return o;
}

std::vector<std::string> ReadRequestFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) Fail("cannot open --requests file '" + path + "'");
  std::vector<std::string> records;
  while (true) {
    unsigned char header[4];
    in.read(reinterpret_cast<char*>(header), 4);
    if (in.gcount() == 0) break;
    if (in.gcount() != 4)
      Fail("--requests file '" + path + "' is truncated in the length of record " + std::to_string(records.size()));
    uint32_t length = header[0] | (header[1] << 8) | (header[2] << 16) | (static_cast<uint32_t>(header[3]) << 24);
    std::string record(length, '\0');
    in.read(record.data(), length);
    if (static_cast<uint32_t>(in.gcount()) != length)
      Fail("--requests file '" + path + "' is truncated in record " + std::to_string(records.size()));
    records.push_back(std::move(record));
  }
  if (records.empty()) Fail("--requests file '" + path + "' holds no request");
  return records;
}

}  // namespace loadgen
