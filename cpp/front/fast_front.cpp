#include "fast_front.hpp"

#include <grpcpp/grpcpp.h>
#include <grpcpp/support/client_callback.h>
#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <stdexcept>
#include <system_error>
#include <thread>

#include "call_proxy.hpp"
#include "call_workers.hpp"
#include "fault_log.hpp"
#include "polarmem/v1/memory_service.grpc.pb.h"

namespace polarmem::front {

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

std::string_view strip(std::string_view s) {
  const auto space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

}  // namespace

// The methods the front serves, registered with raw bytes (below) so that it parses each
// request itself.
std::string method_name(FrontMethod method) {
  return "/" + v1::RecallRequest::descriptor()->file()->FindServiceByName("MemoryService")->full_name() + "/" +
         name_of(method);
}

// Threads for text Recalls when the front admits any number of calls (max_in_flight 0).
constexpr std::size_t kUnboundedWorkers = 64;

constexpr const char* kMalformedRecall =
    "the request is not a valid polarmem.v1.RecallRequest (it does not parse: garbage, a cut message or "
    "invalid UTF-8); send a message encoded from polarmem/v1/memory_service.proto (string fields must be UTF-8)";

// Recall is registered as a callback method over raw bytes, the way generated code registers
// typed ones: gRPC's own typed handler answers a request that does not parse with INTERNAL and
// an empty message, where the main port (and this front, now) answer INVALID_ARGUMENT. A
// callback method runs on the thread that read the call off the socket: a sync method's call
// was read by one thread and answered by another, and that hand-over (a futex wake-up and a
// context switch a call) cost more server CPU than a small Recall's own work
// (docs/fast-front.md "Threads").
class FastFront::Service final : public grpc::Service {
 public:
  Service(const FrontOptions& options, std::shared_ptr<NamespaceViews> views, std::shared_ptr<grpc::Channel> upstream)
      : views_(std::move(views)),
        upstream_channel_(std::move(upstream)),
        max_in_flight_(options.max_in_flight),
        namespace_labels_(options.namespace_labels),
        replica_(options.replica),
        applied_position_(options.applied_position),
        workers_(options.max_in_flight != 0 ? options.max_in_flight : kUnboundedWorkers) {
    recall_name_ = method_name(FrontMethod::kRecall);
    remember_name_ = method_name(FrontMethod::kRemember);
    const std::shared_ptr<grpc::ChannelInterface> channel(upstream_channel_);
    upstream_recall_ = std::make_unique<const grpc::internal::RpcMethod>(
        recall_name_.c_str(), grpc::internal::RpcMethod::NORMAL_RPC, channel);
    upstream_remember_ = std::make_unique<const grpc::internal::RpcMethod>(
        remember_name_.c_str(), grpc::internal::RpcMethod::NORMAL_RPC, channel);
    AddMethod(
        new grpc::internal::RpcServiceMethod(recall_name_.c_str(), grpc::internal::RpcMethod::NORMAL_RPC, nullptr));
    MarkMethodRawCallback(0,
                          new grpc::internal::CallbackUnaryHandler<grpc::ByteBuffer, grpc::ByteBuffer>(
                              [this](grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
                                     grpc::ByteBuffer* response) { return RecallBytes(context, request, response); }));
    AddMethod(
        new grpc::internal::RpcServiceMethod(remember_name_.c_str(), grpc::internal::RpcMethod::NORMAL_RPC, nullptr));
    MarkMethodRawCallback(
        1, new grpc::internal::CallbackUnaryHandler<grpc::ByteBuffer, grpc::ByteBuffer>(
               [this](grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
                      grpc::ByteBuffer* response) { return RememberBytes(context, request, response); }));
  }

  // A request that does not parse is refused here, as is one the core refuses; one it leaves to
  // the library is handed to the library as the bytes that came in (not re-encoded: two parsers
  // may read odd bytes differently, and the library must judge what the client sent).
  grpc::ServerUnaryReactor* RecallBytes(grpc::CallbackServerContext* context, const grpc::ByteBuffer* bytes,
                                        grpc::ByteBuffer* out) {
    const auto started = std::chrono::steady_clock::now();
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    if (refused_without_message(*context, reactor, FrontMethod::kRecall, *bytes, started)) return reactor;
    v1::RecallRequest request;
    grpc::ByteBuffer consumed(*bytes);  // parsing drains the buffer; the copy shares its slices
    if (!grpc::SerializationTraits<v1::RecallRequest>::Deserialize(&consumed, &request).ok()) {
      finish(reactor, FrontMethod::kRecall, {grpc::StatusCode::INVALID_ARGUMENT, kMalformedRecall}, started);
      return reactor;
    }
    if (position_token_applied(request.consistency_token())) request.clear_consistency_token();
    const bool waits = may_wait(request);
    const auto held = std::make_shared<const v1::RecallRequest>(std::move(request));
    admit(reactor, waits, FrontMethod::kRecall, started, [this, context, reactor, held, bytes, out, started] {
      answer(context, reactor, *held, bytes, out, started);
    });
    return reactor;
  }

  // A Remember of a new note the core stores itself (NamespaceViews::remember); any other is the
  // library's, handed over as the bytes that came in, as is one that does not parse (the library
  // words that refusal).
  grpc::ServerUnaryReactor* RememberBytes(grpc::CallbackServerContext* context, const grpc::ByteBuffer* bytes,
                                          grpc::ByteBuffer* out) {
    const auto started = std::chrono::steady_clock::now();
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    if (refused_without_message(*context, reactor, FrontMethod::kRemember, *bytes, started)) return reactor;
    auto request = std::make_shared<v1::RememberRequest>();
    grpc::ByteBuffer consumed(*bytes);
    const bool parsed = grpc::SerializationTraits<v1::RememberRequest>::Deserialize(&consumed, request.get()).ok();
    // A write may wait — for an encoder pass, for a library write holding the namespace, for the
    // synced write itself —, so it runs on the front's own threads unless it is alone: a reading
    // thread that waits leaves every other call unread.
    admit(reactor, true, FrontMethod::kRemember, started,
          [this, context, reactor, request, parsed, bytes, out, started] {
            remember(context, reactor, parsed ? request.get() : nullptr, bytes, out, started);
          });
    return reactor;
  }

  // A call that ended (its deadline passed, the caller cancelled) or half-closed before its
  // request message arrived reaches a raw-bytes method with an empty buffer: gRPC's ByteBuffer
  // "parses" without one. Answered here: handed on, the empty buffer made the library's call
  // fail gRPC's own check (GRPC_CALL_ERROR_INVALID_MESSAGE), which aborts the process.
  bool refused_without_message(const grpc::CallbackServerContext& context, grpc::ServerUnaryReactor* reactor,
                               FrontMethod method, const grpc::ByteBuffer& bytes,
                               std::chrono::steady_clock::time_point started) {
    if (bytes.Valid()) return false;
    if (context.IsCancelled()) {
      finish(reactor, method, {grpc::StatusCode::CANCELLED, "the call ended before its request message arrived"},
             started);
    } else {
      finish(reactor, method,
             {grpc::StatusCode::INVALID_ARGUMENT, std::string("the call carried no request message; ") +
                                                      name_of(method) + " takes exactly one " + name_of(method) +
                                                      "Request (a unary call, not a stream)"},
             started);
    }
    return true;
  }

  // Admits a call (RESOURCE_EXHAUSTED past max_in_flight) and runs `work`, which must finish the
  // call and leave its slot: on the thread that read it, or on the front's own threads for a call
  // that may wait (an encoder pass, a write) beside other calls, or where no reading thread would
  // stay free.
  template <typename Work>
  void admit(grpc::ServerUnaryReactor* reactor, bool may_wait, FrontMethod method,
             std::chrono::steady_clock::time_point started, Work work) {
    // Counted until the answer is ready, a handed-over call included (it holds a slot too).
    const auto in_flight = in_flight_.fetch_add(1, std::memory_order_relaxed) + 1;
    if (max_in_flight_ != 0 && in_flight > max_in_flight_) {
      overloaded_.fetch_add(1, std::memory_order_relaxed);
      leave();
      finish(reactor, method,
             {grpc::StatusCode::RESOURCE_EXHAUSTED, "the compiled front is handling " + std::to_string(max_in_flight_) +
                                                        " calls (max_concurrent_rpcs); retry with backoff"},
             started);
      return;
    }
    // A text call alone in the front waits for no other call's encoder pass and leaves the
    // other reading threads free: answered here, it saves the hand-over's wake-ups (5-8 % of its
    // server CPU, docs/fast-front.md "A text Recall alone").
    if (!may_wait || in_flight == 1) {
      // (other work on the reading threads — handed-over calls, their answers — is not counted:
      // it is short, and the rule only needs to see the calls that hold a thread)
      struct Answering {
        std::atomic<std::size_t>& busy;
        const std::size_t before = busy.fetch_add(1, std::memory_order_relaxed);
        ~Answering() { busy.fetch_sub(1, std::memory_order_relaxed); }
      } answering{answering_where_read_};
      if (answer_where_read(answering.before, readers_, cores_)) {
        work();
        return;
      }
    }
    try {
      workers_.run(work);
    } catch (const std::system_error&) {
      work();  // answered here after all where no thread can start
    }
  }

  // The core's answer to a Remember, the store's refusal, or the call handed to the library.
  // Never throws (as answer()).
  void remember(grpc::CallbackServerContext* context, grpc::ServerUnaryReactor* reactor,
                const v1::RememberRequest* request, const grpc::ByteBuffer* bytes, grpc::ByteBuffer* out,
                std::chrono::steady_clock::time_point started) {
    grpc::Status status;
    std::string_view label;  // the namespace the call is counted under ("" unless answered from its view)
    try {
      v1::RememberResponse response;
      Refusal failed;
      RememberOutcome outcome = RememberOutcome::kLibrary;
      if (request != nullptr && authorized(*context, request->namespace_(), true))
        outcome = views_->remember(*request, &response, &failed);
      if (outcome == RememberOutcome::kLibrary) {
        remember_forwarded_.fetch_add(1, std::memory_order_relaxed);
        forward(context, reactor, *upstream_remember_, bytes, out);
        return;
      }
      label = request->namespace_();  // stored or refused through the namespace's view
      if (outcome == RememberOutcome::kFailed) {
        remember_failed_.fetch_add(1, std::memory_order_relaxed);
        status = grpc::Status(static_cast<grpc::StatusCode>(failed.code), failed.message);
      } else {
        bool own_buffer = false;
        status = grpc::SerializationTraits<v1::RememberResponse>::Serialize(response, out, &own_buffer);
        remember_latency_.observe(started);
      }
    } catch (const std::exception& error) {
      status = fault(FrontMethod::kRemember, error.what());
    } catch (...) {
      status = fault(FrontMethod::kRemember, nullptr);
    }
    leave();
    finish(reactor, FrontMethod::kRemember, std::move(status), started, label);
  }

  // A text Recall without a vector of its own is encoded by the core, and its encoding may wait
  // for the shared encoder pass: beside other calls it runs on the front's own threads
  // (call_workers.hpp).
  static bool may_wait(const v1::RecallRequest& request) {
    return !request.text().empty() && request.vectors().empty();
  }

  // The core's answer, a refusal, or the call handed to the library; the slot is left once the
  // answer is ready. Never throws: on the front's own threads an escaping exception would end the
  // process, and on a reading thread it would leave the call's slot taken.
  void answer(grpc::CallbackServerContext* context, grpc::ServerUnaryReactor* reactor, const v1::RecallRequest& request,
              const grpc::ByteBuffer* bytes, grpc::ByteBuffer* out, std::chrono::steady_clock::time_point started) {
    grpc::Status status;
    std::string_view label;  // the namespace the call is counted under ("" unless answered from its view)
    try {
      v1::RecallResponse response;
      const auto native = answer_from_plan(*context, request, started, &response);
      if (!native) {
        forwarded_.fetch_add(1, std::memory_order_relaxed);
        forward(context, reactor, *upstream_recall_, bytes, out);  // finishes the call when the library answers
        return;
      }
      label = request.namespace_();  // answered or refused from the namespace's view
      bool own_buffer = false;
      status =
          native->ok() ? grpc::SerializationTraits<v1::RecallResponse>::Serialize(response, out, &own_buffer) : *native;
    } catch (const std::exception& error) {
      status = fault(FrontMethod::kRecall, error.what());
    } catch (...) {
      status = fault(FrontMethod::kRecall, nullptr);
    }
    leave();
    finish(reactor, FrontMethod::kRecall, std::move(status), started, label);
  }

  // The front's own answer when the caller is admitted here and a plan fits; nullopt: forward.
  std::optional<grpc::Status> answer_from_plan(const grpc::ServerContextBase& context, const v1::RecallRequest& request,
                                               std::chrono::steady_clock::time_point started,
                                               v1::RecallResponse* response) {
    if (!authorized(context, request.namespace_(), false)) return std::nullopt;
    if (replica_ && request.consistency() == v1::READ_CONSISTENCY_STRONG) return std::nullopt;
    Refusal refused;
    const auto outcome = views_->recall(request, response, &refused);
    if (outcome == RecallOutcome::kRefused) {
      refused_.fetch_add(1, std::memory_order_relaxed);
      return grpc::Status(static_cast<grpc::StatusCode>(refused.code), refused.message);
    }
    if (outcome != RecallOutcome::kAnswered) return std::nullopt;
    if (context.deadline() < std::chrono::system_clock::now()) {
      return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "the call's deadline passed while it was served");
    }
    record(started, *response);
    return grpc::Status::OK;
  }

  // Only forward: a poll's report that raced a later one's never moves the position back.
  void set_applied_position(std::uint64_t position) {
    std::uint64_t current = applied_position_.load(std::memory_order_relaxed);
    while (current < position &&
           !applied_position_.compare_exchange_weak(current, position, std::memory_order_release)) {
    }
  }

  // A consistency token of a multi-process primary (version 2: a byte 2, then the store position
  // the write left, 8 bytes big-endian; storage/consistency.py) whose write is here already. Any
  // other token (a Milvus server's, a malformed one) is the library's to read or refuse.
  bool position_token_applied(const std::string& token) const {
    constexpr std::size_t kTokenBytes = 9;
    if (token.size() != kTokenBytes || token[0] != 2) return false;
    std::uint64_t position = 0;
    for (std::size_t i = 1; i < kTokenBytes; ++i) position = position << 8 | static_cast<unsigned char>(token[i]);
    return !replica_ || position <= applied_position_.load(std::memory_order_acquire);
  }

  void set_grants(std::vector<Grant> grants) {
    std::lock_guard guard(grants_mutex_);
    grants_ = std::make_shared<const std::vector<Grant>>(std::move(grants));
  }

  FrontStats stats() const {
    FrontStats out;
    read_finished(finished_, &out.finished);
    {
      std::shared_lock lock(finished_by_namespace_mutex_);
      for (const auto& [ns, calls] : finished_by_namespace_) {
        out.finished_by_namespace.emplace_back(ns, std::array<FinishedCalls, kFrontMethods>{});
        read_finished(calls, &out.finished_by_namespace.back().second);
      }
    }
    // a method's OK calls: Recalls answered natively, notes stored
    const auto add_ok = [&out](const std::array<FinishedCalls, kFrontMethods>& calls) {
      out.native += calls[static_cast<std::size_t>(FrontMethod::kRecall)].codes[0];
      out.remember_native += calls[static_cast<std::size_t>(FrontMethod::kRemember)].codes[0];
    };
    add_ok(out.finished);
    for (const auto& entry : out.finished_by_namespace) add_ok(entry.second);
    out.forwarded = forwarded_.load();
    out.refused = refused_.load();
    out.overloaded = overloaded_.load();
    out.in_flight = in_flight_.load();
    for (std::size_t i = 0; i < out.hits.size(); ++i) out.hits[i] = hits_[i].load();
    out.suppressed = suppressed_.load();
    recall_latency_.read(&out.latency, &out.latency_sum);
    out.remember_forwarded = remember_forwarded_.load();
    out.remember_failed = remember_failed_.load();
    remember_latency_.read(&out.remember_latency, &out.remember_latency_sum);
    return out;
  }

 private:
  // The library's rule (api/auth.py): "authorization: Bearer <token>", compared by SHA-256
  // with every known token, all of them, in constant time; a write needs a grant that writes.
  bool authorized(const grpc::ServerContextBase& context, const std::string& ns, bool write) const {
    std::shared_ptr<const std::vector<Grant>> grants;
    {
      std::lock_guard guard(grants_mutex_);
      grants = grants_;
    }
    if (!grants || grants->empty()) return true;
    std::string_view header;
    const auto& metadata = context.client_metadata();
    if (const auto found = metadata.find("authorization"); found != metadata.end()) {
      header = std::string_view(found->second.data(), found->second.size());
    }
    const auto space = header.find(' ');
    const std::string_view scheme = header.substr(0, space);
    if (space == std::string_view::npos || lower(scheme) != "bearer") return false;
    const std::string_view token = strip(header.substr(space + 1));
    unsigned char digest[SHA256_DIGEST_LENGTH];
    SHA256(reinterpret_cast<const unsigned char*>(token.data()), token.size(), digest);
    const Grant* match = nullptr;
    for (const auto& grant : *grants) {
      if (grant.digest.size() == SHA256_DIGEST_LENGTH &&
          CRYPTO_memcmp(grant.digest.data(), digest, SHA256_DIGEST_LENGTH) == 0) {
        match = &grant;
      }
    }
    if (match == nullptr || (write && !match->writes)) return false;
    return std::any_of(match->namespaces.begin(), match->namespaces.end(),
                       [&](const std::string& allowed) { return allowed == "*" || allowed == ns; });
  }

  void leave() { in_flight_.fetch_sub(1, std::memory_order_relaxed); }

  // What a call gets when the front itself failed on it: the core states what it refuses
  // (request_checks.hpp), so anything thrown is a fault (`what`: its words, or null).
  static grpc::Status fault(FrontMethod method, const char* what) {
    return {grpc::StatusCode::INTERNAL, fault_message(name_of(method), what)};
  }

  // Ends a call the front answered itself (any status), counted by method and code and timed
  // for the RPC metrics.
  void finish(grpc::ServerUnaryReactor* reactor, FrontMethod method, grpc::Status status,
              std::chrono::steady_clock::time_point started, std::string_view ns = {}) {
    Finished& calls = finished_for(ns)[static_cast<std::size_t>(method)];
    const auto code = static_cast<std::size_t>(status.error_code());
    // (a code past UNAUTHENTICATED, which gRPC does not define, as UNKNOWN)
    calls.codes[code < kStatusCodes ? code : static_cast<std::size_t>(grpc::StatusCode::UNKNOWN)].fetch_add(
        1, std::memory_order_relaxed);
    calls.latency.observe(started);
    if (status.error_code() == grpc::StatusCode::INTERNAL) log_internal(name_of(method), status.error_message());
    reactor->Finish(std::move(status));
  }

  // The call as it came; the library's answer back with its metadata. The library's call runs
  // on gRPC's callback threads, so a handed-over Recall holds no thread while the library works.
  void forward(grpc::CallbackServerContext* context, grpc::ServerUnaryReactor* reactor,
               const grpc::internal::RpcMethod& method, const grpc::ByteBuffer* request, grpc::ByteBuffer* response) {
    // A child of the caller's call: the caller's cancel (or the server's stop past its grace)
    // cancels the library's side, whose deadline is the caller's.
    std::unique_ptr<grpc::ClientContext> owned = grpc::ClientContext::FromCallbackServerContext(*context);
    carry_over(*context, owned.get());
    grpc::ClientContext* call = owned.release();  // deleted by the completion, before Finish
    grpc::internal::CallbackUnaryCall<grpc::ByteBuffer, grpc::ByteBuffer>(
        upstream_channel_.get(), method, call, request, response, [this, call, context, reactor](grpc::Status status) {
          carry_back(*call, context);
          delete call;
          leave();
          reactor->Finish(std::move(status));
        });
  }

  void record(std::chrono::steady_clock::time_point started, const v1::RecallResponse& response) {
    for (const auto& hit : response.hits())
      hits_[static_cast<std::size_t>(hit.s_log() + 1)].fetch_add(1, std::memory_order_relaxed);
    if (response.suppressed_size() > 0) suppressed_.fetch_add(response.suppressed_size(), std::memory_order_relaxed);
    recall_latency_.observe(started);
  }

  // A latency histogram over kLatencyBounds, counted without a lock.
  struct Latency {
    std::array<std::atomic<std::uint64_t>, kLatencyBounds.size() + 1> buckets{};
    std::atomic<std::uint64_t> total_ns{0};
    void observe(std::chrono::steady_clock::time_point started) {
      const auto elapsed = std::chrono::steady_clock::now() - started;
      const double seconds = std::chrono::duration<double>(elapsed).count();
      const auto bucket = static_cast<std::size_t>(
          std::lower_bound(kLatencyBounds.begin(), kLatencyBounds.end(), seconds) - kLatencyBounds.begin());
      buckets[bucket].fetch_add(1, std::memory_order_relaxed);
      total_ns.fetch_add(
          static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count()),
          std::memory_order_relaxed);
    }
    void read(std::array<std::uint64_t, kLatencyBounds.size() + 1>* counts, double* sum) const {
      for (std::size_t i = 0; i < counts->size(); ++i) (*counts)[i] = buckets[i].load();
      *sum = static_cast<double>(total_ns.load()) * 1e-9;
    }
  };

  std::string recall_name_, remember_name_;  // AddMethod keeps the pointers: they must outlive the service
  std::shared_ptr<NamespaceViews> views_;
  std::shared_ptr<grpc::Channel> upstream_channel_;
  std::unique_ptr<const grpc::internal::RpcMethod> upstream_recall_, upstream_remember_;  // on upstream_channel_
  const std::size_t max_in_flight_;
  const std::size_t cores_ = std::max(1u, std::thread::hardware_concurrency());
  // gRPC counts configured processors for its reading threads (gpr_cpu_num_cores).
  const std::size_t readers_ = reading_threads(static_cast<std::size_t>(std::max(1L, sysconf(_SC_NPROCESSORS_CONF))));
  std::atomic<std::size_t> answering_where_read_{0};  // reading threads answering a Recall now
  mutable std::mutex grants_mutex_;
  std::shared_ptr<const std::vector<Grant>> grants_;
  std::atomic<std::uint64_t> in_flight_{0}, forwarded_{0}, refused_{0}, overloaded_{0};
  std::atomic<std::uint64_t> remember_forwarded_{0}, remember_failed_{0};
  std::array<std::atomic<std::uint64_t>, 3> hits_{};
  std::atomic<std::uint64_t> suppressed_{0};
  Latency recall_latency_, remember_latency_;
  struct Finished {
    std::array<std::atomic<std::uint64_t>, kStatusCodes> codes{};
    Latency latency;
  };
  using FinishedByMethod = std::array<Finished, kFrontMethods>;
  static void read_finished(const FinishedByMethod& calls, std::array<FinishedCalls, kFrontMethods>* out) {
    for (std::size_t m = 0; m < kFrontMethods; ++m) {
      for (std::size_t c = 0; c < kStatusCodes; ++c) (*out)[m].codes[c] = calls[m].codes[c].load();
      calls[m].latency.read(&(*out)[m].latency, &(*out)[m].latency_sum);
    }
  }
  // The counts a call answered for namespace `ns` goes to: its own with namespace labels on, else
  // the front's. Entries are never erased (a deleted namespace keeps its series, as the Python
  // listener's do), and a std::map's nodes never move, so a reference outlives the lock.
  FinishedByMethod& finished_for(std::string_view ns) {
    if (!namespace_labels_ || ns.empty()) return finished_;
    {
      std::shared_lock lock(finished_by_namespace_mutex_);
      if (const auto found = finished_by_namespace_.find(ns); found != finished_by_namespace_.end())
        return found->second;
    }
    std::unique_lock lock(finished_by_namespace_mutex_);
    return finished_by_namespace_.try_emplace(std::string(ns)).first->second;
  }
  const bool namespace_labels_;
  const bool replica_;
  std::atomic<std::uint64_t> applied_position_;
  FinishedByMethod finished_{};
  mutable std::shared_mutex finished_by_namespace_mutex_;
  std::map<std::string, FinishedByMethod, std::less<>> finished_by_namespace_;
  // Last: destroyed first, running what is queued while everything it uses still stands.
  CallWorkers workers_;
};

namespace {

// The library's server, for every call the front does not answer: no size limits of its own
// (the front's listener enforces the configured ones).
std::shared_ptr<grpc::Channel> upstream_channel(const std::string& address) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  args.SetMaxSendMessageSize(-1);
  return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
}

}  // namespace

FastFront::FastFront(FrontOptions options, std::shared_ptr<NamespaceViews> views) {
  const auto upstream = upstream_channel(options.upstream);
  service_ = std::make_unique<Service>(options, std::move(views), upstream);
  proxy_ = std::make_unique<CallProxy>(upstream);
  std::shared_ptr<grpc::ServerCredentials> credentials = grpc::InsecureServerCredentials();
  if (!options.tls_cert_pem.empty() || !options.tls_key_pem.empty()) {
    grpc::SslServerCredentialsOptions ssl;
    ssl.pem_key_cert_pairs.push_back({options.tls_key_pem, options.tls_cert_pem});
    credentials = grpc::SslServerCredentials(ssl);
  }
  grpc::ServerBuilder builder;
  builder.AddListeningPort(options.address, credentials, &port_);
  builder.SetMaxReceiveMessageSize(static_cast<int>(options.max_receive_bytes));
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, options.reuse_port ? 1 : 0);
  builder.RegisterService(service_.get());
  builder.RegisterCallbackGenericService(proxy_.get());
  server_ = builder.BuildAndStart();
  if (!server_ || port_ == 0) {
    throw std::runtime_error("cannot listen on " + options.address + " (in use, or not an address)");
  }
}

FastFront::~FastFront() { shutdown(0.0); }

void FastFront::set_grants(std::vector<Grant> grants) { service_->set_grants(std::move(grants)); }

void FastFront::set_applied_position(std::uint64_t position) { service_->set_applied_position(position); }

void FastFront::shutdown(double grace_seconds) {
  if (!server_) return;
  server_->Shutdown(std::chrono::system_clock::now() +
                    std::chrono::microseconds(static_cast<std::int64_t>(grace_seconds * 1e6)));
  server_->Wait();
  server_.reset();
}

FrontStats FastFront::stats() const { return service_->stats(); }

}  // namespace polarmem::front
