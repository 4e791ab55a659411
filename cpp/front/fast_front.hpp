// The compiled front: a gRPC server (C++, Debian's libgrpc++) that plans each Recall from what
// it holds of the namespace (namespace_view.hpp) and answers it straight from the core
// (recall_plan.hpp), stores a new note itself (NamespaceViews::remember), and hands every
// other call — another Recall or Remember, any other method (call_proxy.hpp) — to the library's own server
// unchanged (its metadata, deadline, status and messages come back as the library gave them).
// It exists because the Python gRPC layer costs more server CPU per call than the search it
// wraps (docs/performance.md, "A compiled front"); it listens on the public address.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "call_proxy.hpp"
#include "namespace_view.hpp"
#include "polarmem/rpc_latency.hpp"

namespace grpc {
class Server;
}

namespace polarmem::front {

struct FrontOptions {
  std::string address;   // where agents connect, e.g. "0.0.0.0:50052" (port 0: any free port)
  std::string upstream;  // the library's server, for every call the front does not answer
  std::string tls_cert_pem, tls_key_pem;  // both empty: plaintext
  std::size_t max_in_flight = 0;          // calls beyond it get RESOURCE_EXHAUSTED; 0: no limit
  std::size_t max_receive_bytes = 4 << 20;
  // Share the port with the other processes of a multi-process server (SO_REUSEPORT); otherwise
  // a second server on the port fails instead of taking some of its calls.
  bool reuse_port = false;
  // The server publishes per-namespace RPC series (metrics_namespace_labels): the calls the front
  // answers from a namespace's view are then counted under that namespace's name.
  bool namespace_labels = false;
  // A replica of a multi-process server: its views trail the primary by up to a poll, so a Recall
  // at READ_CONSISTENCY_STRONG, or with a consistency token naming a store position past
  // `applied_position` (FastFront::set_applied_position), goes to the library, which catches up
  // with the primary first. Elsewhere every acknowledged write is here: a position token (version
  // 2, a primary's) needs nothing.
  bool replica = false;
  std::uint64_t applied_position = 0;
};

// One bearer token the front accepts: the SHA-256 of the token, its namespaces ("*" = all) and
// whether its role may write items (Remember: "write" or "admin"); every role may Recall.
struct Grant {
  std::string digest;  // 32 bytes
  std::vector<std::string> namespaces;
  bool writes = false;
};

// Latency bucket upper bounds in seconds (and +Inf after the last): the RPC histograms' own.
inline constexpr const auto& kLatencyBounds = kRpcLatencyBounds;

// The methods the front answers itself, as FrontStats::finished indexes them.
enum class FrontMethod : std::size_t { kRecall = 0, kRemember = 1 };
inline constexpr std::size_t kFrontMethods = 2;
inline constexpr const char* kFrontMethodNames[kFrontMethods] = {"Recall", "Remember"};  // the RPCs' own names
inline const char* name_of(FrontMethod method) { return kFrontMethodNames[static_cast<std::size_t>(method)]; }
inline constexpr std::size_t kStatusCodes = 17;  // grpc::StatusCode OK (0) .. UNAUTHENTICATED (16)

// The calls of one method the front finished itself, whatever their status — never one it handed
// to the library, which counts those —: what the metrics add to polarmem_rpc_requests_total and
// polarmem_rpc_latency_seconds, so those series count every call on the address.
struct FinishedCalls {
  std::array<std::uint64_t, kStatusCodes> codes{};                 // calls per status code
  std::array<std::uint64_t, kLatencyBounds.size() + 1> latency{};  // calls per bucket
  double latency_sum = 0.0;
};

struct FrontStats {
  std::array<FinishedCalls, kFrontMethods> finished;  // (a method's native answers: its OK count)
  // With namespace_labels on: the calls answered from a namespace's view, by its name (never a
  // name the front held no view of, so the names are bounded by the namespaces that existed);
  // `finished` then holds the rest (refused before parsing, overloaded, faults).
  std::vector<std::pair<std::string, std::array<FinishedCalls, kFrontMethods>>> finished_by_namespace;
  std::uint64_t native = 0;      // answered by the front from a plan
  std::uint64_t forwarded = 0;   // handed to the library (no view, not authorised here, full items, ...)
  std::uint64_t refused = 0;     // refused by the core (a field out of its bounds), answered here
  std::uint64_t overloaded = 0;  // RESOURCE_EXHAUSTED at max_in_flight
  std::uint64_t in_flight = 0;
  std::array<std::uint64_t, 3> hits{0, 0, 0};  // native hits by tier: conflict, neutral, entailed
  std::uint64_t suppressed = 0;                 // native answers' suppressed items (kept out by the logic)
  std::array<std::uint64_t, kLatencyBounds.size() + 1> latency{};  // native calls per bucket
  double latency_sum = 0.0;
  // Remember: stored by the core, handed to the library, refused by the store (disk full, ...)
  std::uint64_t remember_native = 0;
  std::uint64_t remember_forwarded = 0;
  std::uint64_t remember_failed = 0;
  std::array<std::uint64_t, kLatencyBounds.size() + 1> remember_latency{};  // stored notes per bucket
  double remember_latency_sum = 0.0;
};

class FastFront {
 public:
  // Binds and starts serving; throws std::runtime_error when the address cannot be bound.
  FastFront(FrontOptions options, std::shared_ptr<NamespaceViews> views);
  ~FastFront();
  FastFront(const FastFront&) = delete;
  FastFront& operator=(const FastFront&) = delete;

  int port() const { return port_; }
  // Tokens the front checks itself; empty: auth is off. A caller whose token is not among
  // them is handed to the library, which refuses it (api/auth.py).
  void set_grants(std::vector<Grant> grants);
  // A replica's store position once it has applied every write up to it (FrontOptions::replica).
  void set_applied_position(std::uint64_t position);
  // Stops accepting calls and lets those in flight finish for up to `grace_seconds`.
  void shutdown(double grace_seconds);
  FrontStats stats() const;

  class Service;

 private:
  std::unique_ptr<Service> service_;
  std::unique_ptr<CallProxy> proxy_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

}  // namespace polarmem::front
