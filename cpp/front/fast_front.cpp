#include "fast_front.hpp"

#include <grpcpp/grpcpp.h>
#include <openssl/crypto.h>
#include <openssl/sha.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <stdexcept>

#include "polarmem/v1/memory_service.grpc.pb.h"

namespace polarmem::front {

namespace {

// Tells the library that this Recall came through the front, so it publishes a plan for the
// request's shape when it can (api/fast_front.py).
constexpr const char* kPlanHeader = "x-polarmem-fast-front";

// Metadata a proxy must not copy: HTTP/2 pseudo headers and gRPC's own.
bool forwardable(const grpc::string_ref& key) {
  const std::string_view k(key.data(), key.size());
  return !k.empty() && k[0] != ':' && k.rfind("grpc-", 0) != 0 && k != "user-agent" && k != "te" &&
         k != "content-type" && k != kPlanHeader;
}

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

class FastFront::Service final : public v1::MemoryService::Service {
 public:
  Service(const FrontOptions& options, std::shared_ptr<PlanCache> plans)
      : plans_(std::move(plans)), max_in_flight_(options.max_in_flight) {
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(-1);
    args.SetMaxSendMessageSize(-1);
    upstream_ = v1::MemoryService::NewStub(
        grpc::CreateCustomChannel(options.upstream, grpc::InsecureChannelCredentials(), args));
  }

  grpc::Status Recall(grpc::ServerContext* context, const v1::RecallRequest* request,
                      v1::RecallResponse* response) override {
    const auto started = std::chrono::steady_clock::now();
    const auto in_flight = in_flight_.fetch_add(1, std::memory_order_relaxed) + 1;
    struct Leave {
      std::atomic<std::uint64_t>& counter;
      ~Leave() { counter.fetch_sub(1, std::memory_order_relaxed); }
    } leave{in_flight_};
    if (max_in_flight_ != 0 && in_flight > max_in_flight_) {
      overloaded_.fetch_add(1, std::memory_order_relaxed);
      return {grpc::StatusCode::RESOURCE_EXHAUSTED,
              "the Recall front is handling " + std::to_string(max_in_flight_) +
                  " calls (max_concurrent_rpcs); retry with backoff"};
    }
    if (authorized(*context, request->namespace_())) {
      if (const auto plan = find_plan(*request)) {
        if (answer(*plan, *request, response)) {
          if (context->deadline() < std::chrono::system_clock::now()) {
            return {grpc::StatusCode::DEADLINE_EXCEEDED, "the call's deadline passed while it was served"};
          }
          record(started, *response);
          return grpc::Status::OK;
        }
        response->Clear();
      }
    }
    forwarded_.fetch_add(1, std::memory_order_relaxed);
    return forward(*context, *request, response);
  }

  // The plan of the request's own shape, else its generic shape's bound to its concepts.
  std::shared_ptr<const RecallPlan> find_plan(const v1::RecallRequest& request) const {
    const auto& ns = request.namespace_();
    if (auto plan = plans_->find(ns, plan_key(request))) return plan;
    const auto generic = plans_->find(ns, generic_key(request));
    const auto vocabulary = generic ? plans_->vocabulary(ns) : nullptr;
    if (!vocabulary) return nullptr;
    auto bound = bind(*generic, request, *vocabulary);
    return bound ? std::make_shared<const RecallPlan>(std::move(*bound)) : nullptr;
  }

  void set_grants(std::vector<Grant> grants) {
    std::lock_guard guard(grants_mutex_);
    grants_ = std::make_shared<const std::vector<Grant>>(std::move(grants));
  }

  FrontStats stats() const {
    FrontStats out;
    out.native = native_.load();
    out.forwarded = forwarded_.load();
    out.overloaded = overloaded_.load();
    out.in_flight = in_flight_.load();
    for (std::size_t i = 0; i < out.hits.size(); ++i) out.hits[i] = hits_[i].load();
    for (std::size_t i = 0; i < out.latency.size(); ++i) out.latency[i] = latency_[i].load();
    out.latency_sum = static_cast<double>(latency_ns_.load()) * 1e-9;
    return out;
  }

 private:
  // The library's rule (api/auth.py): "authorization: Bearer <token>", compared by SHA-256
  // with every known token, all of them, in constant time.
  bool authorized(const grpc::ServerContext& context, const std::string& ns) const {
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
    if (match == nullptr) return false;
    return std::any_of(match->namespaces.begin(), match->namespaces.end(),
                       [&](const std::string& allowed) { return allowed == "*" || allowed == ns; });
  }

  grpc::Status forward(const grpc::ServerContext& context, const v1::RecallRequest& request,
                       v1::RecallResponse* response) {
    grpc::ClientContext call;
    for (const auto& [key, value] : context.client_metadata()) {
      if (forwardable(key)) call.AddMetadata(std::string(key.data(), key.size()), std::string(value.data(), value.size()));
    }
    call.AddMetadata(kPlanHeader, "plan");
    if (context.deadline() != std::chrono::system_clock::time_point::max()) call.set_deadline(context.deadline());
    return upstream_->Recall(&call, request, response);
  }

  void record(std::chrono::steady_clock::time_point started, const v1::RecallResponse& response) {
    native_.fetch_add(1, std::memory_order_relaxed);
    for (const auto& hit : response.hits()) hits_[static_cast<std::size_t>(hit.s_log() + 1)].fetch_add(1, std::memory_order_relaxed);
    const auto elapsed = std::chrono::steady_clock::now() - started;
    const double seconds = std::chrono::duration<double>(elapsed).count();
    const auto bucket = static_cast<std::size_t>(
        std::lower_bound(kLatencyBounds.begin(), kLatencyBounds.end(), seconds) - kLatencyBounds.begin());
    latency_[bucket].fetch_add(1, std::memory_order_relaxed);
    latency_ns_.fetch_add(static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count()),
                          std::memory_order_relaxed);
  }

  std::shared_ptr<PlanCache> plans_;
  std::unique_ptr<v1::MemoryService::Stub> upstream_;
  const std::size_t max_in_flight_;
  mutable std::mutex grants_mutex_;
  std::shared_ptr<const std::vector<Grant>> grants_;
  std::atomic<std::uint64_t> in_flight_{0}, native_{0}, forwarded_{0}, overloaded_{0}, latency_ns_{0};
  std::array<std::atomic<std::uint64_t>, 3> hits_{};
  std::array<std::atomic<std::uint64_t>, kLatencyBounds.size() + 1> latency_{};
};

FastFront::FastFront(FrontOptions options, std::shared_ptr<PlanCache> plans)
    : service_(std::make_unique<Service>(options, std::move(plans))) {
  std::shared_ptr<grpc::ServerCredentials> credentials = grpc::InsecureServerCredentials();
  if (!options.tls_cert_pem.empty() || !options.tls_key_pem.empty()) {
    grpc::SslServerCredentialsOptions ssl;
    ssl.pem_key_cert_pairs.push_back({options.tls_key_pem, options.tls_cert_pem});
    credentials = grpc::SslServerCredentials(ssl);
  }
  grpc::ServerBuilder builder;
  builder.AddListeningPort(options.address, credentials, &port_);
  builder.SetMaxReceiveMessageSize(static_cast<int>(options.max_receive_bytes));
  builder.RegisterService(service_.get());
  server_ = builder.BuildAndStart();
  if (!server_ || port_ == 0) {
    throw std::runtime_error("fast_front_address: cannot listen on " + options.address +
                             " (in use, or not an address); pick a free port or unset it");
  }
}

FastFront::~FastFront() { shutdown(0.0); }

void FastFront::set_grants(std::vector<Grant> grants) { service_->set_grants(std::move(grants)); }

void FastFront::shutdown(double grace_seconds) {
  if (!server_) return;
  server_->Shutdown(std::chrono::system_clock::now() +
                    std::chrono::microseconds(static_cast<std::int64_t>(grace_seconds * 1e6)));
  server_->Wait();
  server_.reset();
}

FrontStats FastFront::stats() const { return service_->stats(); }

}  // namespace polarmem::front
