// polarmem-loadgen: drives one MemoryService RPC from a file of prepared requests, closed loop
// (N calls in flight) or open loop (a fixed start rate), bounded in calls and time, and prints
// latency percentiles, throughput, status codes and CPU time (its own and the server's) as JSON.
// Compiled so the load costs little CPU next to the server it measures on the same cores.
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <thread>

#include "options.h"
#include "polarmem/v1/memory_service.grpc.pb.h"
#include "stats.h"

namespace loadgen {
namespace {

using Clock = std::chrono::steady_clock;
using Stub = polarmem::v1::MemoryService::Stub;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// One RPC shape: its request and response types and the stub method that prepares a call.
template <class Request, class Response>
struct Rpc {
  using Prepare = std::unique_ptr<grpc::ClientAsyncResponseReader<Response>> (Stub::*)(grpc::ClientContext*,
                                                                                       const Request&,
                                                                                       grpc::CompletionQueue*);
  Prepare prepare;
};

template <class Response>
struct Call {
  grpc::ClientContext context;
  Response response;
  grpc::Status status;
  std::unique_ptr<grpc::ClientAsyncResponseReader<Response>> reader;
  Clock::time_point start;  // open loop: the scheduled start, so queueing in the client counts
  bool record = true;
};

template <class Request, class Response>
class Driver {
 public:
  Driver(const Options& options, Rpc<Request, Response> rpc, const std::vector<std::string>& raw)
      : o_(options), rpc_(rpc) {
    for (size_t i = 0; i < raw.size(); ++i) {
      Request request;
      if (!request.ParseFromString(raw[i])) {
        std::cerr << "polarmem-loadgen: record " << i << " of '" << o_.requests_path << "' is not a "
                  << Request::descriptor()->full_name() << " (does --rpc match the file?)\n";
        std::exit(2);
      }
      requests_.push_back(std::move(request));
    }
    for (int i = 0; i < o_.channels; ++i) {
      grpc::ChannelArguments args;
      args.SetInt("polarmem.loadgen.channel", i);  // a distinct argument: a connection of its own
      args.SetMaxReceiveMessageSize(64 << 20);
      channels_.push_back(grpc::CreateCustomChannel(o_.target, grpc::InsecureChannelCredentials(), args));
      stubs_.push_back(polarmem::v1::MemoryService::NewStub(channels_.back()));
    }
  }

  // Waits up to 10 s for every connection, so connecting is not part of the first latencies.
  bool Connect() {
    auto deadline = std::chrono::system_clock::now() + std::chrono::seconds(10);
    for (auto& channel : channels_) {
      if (!channel->WaitForConnected(deadline)) return false;
    }
    return true;
  }

  RunResult Run() {
    if (o_.warmup_s > 0) {
      RunResult warm;
      if (o_.mode == Mode::kClosed) Closed(o_.warmup_s, INT64_MAX, false, warm);
      else Open(o_.warmup_s, INT64_MAX, false, warm);
    }
    RunResult result;
    std::vector<double> server_before;
    for (int pid : o_.server_pids) server_before.push_back(ProcessCpuSeconds(pid));
    double cpu_before = SelfCpuSeconds();
    auto started = Clock::now();
    if (o_.mode == Mode::kClosed) Closed(o_.duration_s, o_.max_calls, true, result);
    else Open(o_.duration_s, o_.max_calls, true, result);
    result.wall_s = Seconds(Clock::now() - started);
    result.client_cpu_s = SelfCpuSeconds() - cpu_before;
    for (size_t i = 0; i < o_.server_pids.size(); ++i)
      result.server_cpu_s.push_back(ProcessCpuSeconds(o_.server_pids[i]) - server_before[i]);
    return result;
  }

 private:
  int64_t Limit(int64_t max_calls) const {
    if (!o_.once) return max_calls;
    return std::min<int64_t>(max_calls, static_cast<int64_t>(requests_.size()) - next_);
  }

  void Start(grpc::CompletionQueue* queue, Clock::time_point start, bool record) {
    auto* call = new Call<Response>();
    call->start = start;
    call->record = record;
    call->context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(o_.deadline_ms));
    const Request& request = requests_[next_ % requests_.size()];
    Stub* stub = stubs_[next_ % stubs_.size()].get();
    ++next_;
    call->reader = (stub->*rpc_.prepare)(&call->context, request, queue);
    call->reader->StartCall();
    call->reader->Finish(&call->response, &call->status, call);
  }

  static void Finish(Call<Response>* call, RunResult& result) {
    if (call->record) {
      int code = static_cast<int>(call->status.error_code());
      result.codes[StatusCodeName(code)] += 1;
      if (code == 0) result.latencies_us.push_back(Seconds(Clock::now() - call->start) * 1e6);
    }
    delete call;
  }

  // N calls in flight; each answer starts the next call until the bound in calls or time.
  void Closed(double duration_s, int64_t max_calls, bool record, RunResult& result) {
    grpc::CompletionQueue queue;
    auto deadline =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(duration_s));
    int64_t limit = Limit(max_calls), started = 0, outstanding = 0;
    for (; started < limit && started < o_.concurrency; ++started, ++outstanding) Start(&queue, Clock::now(), record);
    void* tag;
    bool ok;
    while (outstanding > 0 && queue.Next(&tag, &ok)) {
      Finish(static_cast<Call<Response>*>(tag), result);
      --outstanding;
      if (started < limit && Clock::now() < deadline) {
        Start(&queue, Clock::now(), record);
        ++started;
        ++outstanding;
      }
    }
    if (record) result.started += started;
    queue.Shutdown();
    while (queue.Next(&tag, &ok)) {
    }
  }

  // Calls start on a fixed schedule whatever the answers do; a sender thread keeps the schedule
  // and this thread collects answers. Latency runs from the scheduled start.
  void Open(double duration_s, int64_t max_calls, bool record, RunResult& result) {
    grpc::CompletionQueue queue;
    std::atomic<int64_t> outstanding{0};
    std::atomic<bool> sending{true};
    int64_t limit = Limit(max_calls);
    auto t0 = Clock::now();
    auto end = t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(duration_s));
    int64_t started = 0, skipped = 0;
    double behind = 0;
    std::thread sender([&] {
      for (int64_t i = 0; i < limit; ++i) {
        auto at = t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(i / o_.rate));
        if (at >= end) break;
        std::this_thread::sleep_until(at);
        behind = Seconds(Clock::now() - at);
        if (outstanding.load() >= o_.max_outstanding) {
          ++skipped;
          continue;
        }
        outstanding.fetch_add(1);
        Start(&queue, at, record);
        ++started;
      }
      sending.store(false);
    });
    void* tag;
    bool ok;
    while (sending.load() || outstanding.load() > 0) {
      auto status = queue.AsyncNext(&tag, &ok, std::chrono::system_clock::now() + std::chrono::milliseconds(20));
      if (status == grpc::CompletionQueue::GOT_EVENT) {
        Finish(static_cast<Call<Response>*>(tag), result);
        outstanding.fetch_sub(1);
      }
    }
    sender.join();
    if (record) {
      result.started += started;
      result.not_started += skipped;
      result.behind_s = behind;
    }
    queue.Shutdown();
    while (queue.Next(&tag, &ok)) {
    }
  }

  const Options& o_;
  Rpc<Request, Response> rpc_;
  std::vector<Request> requests_;
  std::vector<std::shared_ptr<grpc::Channel>> channels_;
  std::vector<std::unique_ptr<Stub>> stubs_;
  size_t next_ = 0;
};

std::string SettingsJson(const Options& o, size_t requests) {
  std::ostringstream out;
  out << "\"rpc\": \"" << o.rpc << "\", \"mode\": \"" << (o.mode == Mode::kClosed ? "closed" : "open")
      << "\", \"concurrency\": " << (o.mode == Mode::kClosed ? o.concurrency : 0) << ", \"rate\": " << o.rate
      << ", \"max_calls\": " << o.max_calls << ", \"duration_s\": " << o.duration_s << ", \"warmup_s\": " << o.warmup_s
      << ", \"channels\": " << o.channels << ", \"request_records\": " << requests;
  return out.str();
}

template <class Request, class Response>
int Drive(const Options& options, Rpc<Request, Response> rpc, const std::vector<std::string>& raw) {
  Driver<Request, Response> driver(options, rpc, raw);
  if (!driver.Connect()) {
    std::cerr << "polarmem-loadgen: could not connect to " << options.target << " within 10 s (is the server up?)\n";
    return 1;
  }
  RunResult result = driver.Run();
  if (!options.latencies_out.empty()) {
    std::ofstream out(options.latencies_out);
    for (double us : result.latencies_us) out << us << "\n";
    if (!out) {
      std::cerr << "polarmem-loadgen: cannot write --latencies-out file '" << options.latencies_out << "'\n";
      return 2;
    }
  }
  std::cout << ResultJson(SettingsJson(options, raw.size()), result, options.server_pids) << std::endl;
  return 0;
}

}  // namespace
}  // namespace loadgen

int main(int argc, char** argv) {
  using namespace loadgen;
  using namespace polarmem::v1;
  Options options = ParseOptions(argc, argv);
  std::vector<std::string> raw = ReadRequestFile(options.requests_path);
  if (options.rpc == "recall")
    return Drive(options, Rpc<RecallRequest, RecallResponse>{&Stub::PrepareAsyncRecall}, raw);
  if (options.rpc == "remember")
    return Drive(options, Rpc<RememberRequest, RememberResponse>{&Stub::PrepareAsyncRemember}, raw);
  if (options.rpc == "get_item")
    return Drive(options, Rpc<GetItemRequest, GetItemResponse>{&Stub::PrepareAsyncGetItem}, raw);
  return Drive(options, Rpc<GetNamespaceRequest, GetNamespaceResponse>{&Stub::PrepareAsyncGetNamespace}, raw);
}
