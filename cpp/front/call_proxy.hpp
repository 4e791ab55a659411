// Every call the compiled front does not answer itself — every method but Recall: writes,
// reads, health, reflection, unary or streaming — goes to the library's own server as it came
// (its messages as bytes, its metadata, deadline and cancellation), and the library's answer
// comes back the same way (its initial and trailing metadata, messages and status). With it the
// front can listen on the one public address and the library behind it on a private socket
// (api/server.py).
#pragma once

#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/generic/generic_stub.h>

#include <memory>

namespace polarmem::front {

// Metadata the library reads as the caller's address when a call reaches it through the front
// (its own peer is then the private socket's).
inline constexpr const char* kPeerHeader = "x-polarmem-peer";

// Metadata a proxy must not copy either way: HTTP/2 pseudo headers, gRPC's own, and the
// front's private headers (a caller must not be able to set them).
bool forwardable(std::string_view key);

class CallProxy final : public grpc::CallbackGenericService {
 public:
  explicit CallProxy(const std::shared_ptr<grpc::ChannelInterface>& upstream) : stub_(upstream) {}
  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext* context) override;

 private:
  grpc::GenericStub stub_;
};

}  // namespace polarmem::front
