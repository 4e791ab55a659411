// Every call the compiled front does not answer itself — every method but Recall: writes,
// reads, health, reflection, unary or streaming — goes to the library's own server as it came
// (its messages as bytes, its metadata, deadline and cancellation), and the library's answer
// comes back the same way (its initial and trailing metadata, messages and status). With it the
// front can listen on the one public address and the library behind it on a private socket
// (api/server.py).
#pragma once

#include <grpcpp/client_context.h>
#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/server_context.h>

#include <memory>

namespace polarmem::front {

// Metadata the library reads as the caller's address when a call reaches it through the front
// (its own peer is then the private socket's).
inline constexpr const char* kPeerHeader = "x-polarmem-peer";

// What a handed-over call carries to the library: the caller's metadata (less HTTP/2's and
// gRPC's own, and the front's private headers, which a caller must not be able to set), its
// address and its deadline.
void carry_over(const grpc::ServerContextBase& caller, grpc::ClientContext* library);
// The library's metadata back on the caller's side of a finished call: its initial metadata
// unless `initial` is false (already sent), and its trailing metadata.
void carry_back(const grpc::ClientContext& library, grpc::ServerContextBase* caller, bool initial = true);

class CallProxy final : public grpc::CallbackGenericService {
 public:
  explicit CallProxy(const std::shared_ptr<grpc::ChannelInterface>& upstream) : stub_(upstream) {}
  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext* context) override;

 private:
  grpc::GenericStub stub_;
};

}  // namespace polarmem::front
