#include "call_proxy.hpp"

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <mutex>
#include <string>

namespace polarmem::front {

namespace {

std::string text(const grpc::string_ref& s) { return std::string(s.data(), s.size()); }

bool forwardable(const grpc::string_ref& ref) {
  const std::string_view key(ref.data(), ref.size());
  return !key.empty() && key[0] != ':' && key.rfind("grpc-", 0) != 0 && key != "user-agent" && key != "te" &&
         key != "content-type" && key != kPeerHeader;
}

// One proxied call: the caller's side (this reactor) and the library's side (`upstream_`) pass
// messages both ways, one in flight per direction, so each side's reads pace the other's
// writes. The call ends when the library's side does: its status and trailing metadata finish
// the caller's side; a caller that cancels cancels the library's side.
//
// The library's side may end (OnDone) only once nothing can start an operation on it any more:
// a hold keeps it until its last message is read (or the caller is gone), and a message from
// the caller that arrives after that is dropped (the library has answered) rather than written.
class ProxiedCall final : public grpc::ServerGenericBidiReactor {
 public:
  ProxiedCall(grpc::GenericStub* stub, grpc::GenericCallbackServerContext* server) : server_(server), upstream_(this) {
    carry_over(*server, &client_);
    stub->PrepareBidiStreamingCall(&client_, server->method(), grpc::StubOptions(), &upstream_);
    upstream_.AddHold();  // released by library_read_all()
    upstream_.StartRead(&from_library_);
    upstream_.StartCall();
    StartRead(&from_caller_);
  }

  // The caller sent a message (ok) or closed its side (not ok).
  void OnReadDone(bool ok) override {
    std::lock_guard guard(mutex_);
    if (library_read_all_) return;  // the library has answered: nothing more goes to it
    if (ok) {
      upstream_.StartWrite(&from_caller_);
    } else {
      upstream_.StartWritesDone();
    }
  }

  // A message of the library's reached the caller (ok), or the caller is gone.
  void OnWriteDone(bool ok) override {
    if (ok) {
      upstream_.StartRead(&from_library_);
    } else {
      client_.TryCancel();
      library_read_all();
    }
  }

  void OnCancel() override { client_.TryCancel(); }
  void OnDone() override { release(); }

 private:
  class Upstream final : public grpc::ClientBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
   public:
    explicit Upstream(ProxiedCall* call) : call_(call) {}
    void OnReadInitialMetadataDone(bool ok) override {
      if (ok) call_->send_initial_metadata();
    }
    void OnReadDone(bool ok) override {
      if (!ok) {
        call_->library_read_all();
        return;
      }
      call_->send_initial_metadata();
      call_->StartWrite(&call_->from_library_);
    }
    void OnWriteDone(bool ok) override {
      if (ok) call_->StartRead(&call_->from_caller_);  // else the library's side has ended
    }
    void OnDone(const grpc::Status& status) override { call_->finish(status); }

   private:
    ProxiedCall* call_;
  };

  void library_read_all() {
    {
      std::lock_guard guard(mutex_);
      library_read_all_ = true;
    }
    upstream_.RemoveHold();
  }

  // The library's initial metadata, once, before the caller's side sends anything; after a
  // call that ended without any (a status alone) it goes with the status.
  void send_initial_metadata(bool with_status = false) {
    std::lock_guard guard(mutex_);
    if (initial_sent_) return;
    initial_sent_ = true;
    for (const auto& [key, value] : client_.GetServerInitialMetadata()) {
      if (forwardable(key)) server_->AddInitialMetadata(text(key), text(value));
    }
    if (!with_status) StartSendInitialMetadata();
  }

  void finish(const grpc::Status& status) {
    send_initial_metadata(/*with_status=*/true);
    carry_back(client_, server_, /*initial=*/false);
    Finish(status);
    release();
  }

  // Both sides hold the call; the last to finish frees it.
  void release() {
    if (holders_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }

  grpc::GenericCallbackServerContext* server_;
  grpc::ClientContext client_;
  Upstream upstream_;
  grpc::ByteBuffer from_caller_, from_library_;
  std::mutex mutex_;
  bool initial_sent_ = false;
  bool library_read_all_ = false;  // the library's side ended: no operation may start on it
  std::atomic<int> holders_{2};
};

}  // namespace

void carry_over(const grpc::ServerContextBase& caller, grpc::ClientContext* library) {
  for (const auto& [key, value] : caller.client_metadata()) {
    if (forwardable(key)) library->AddMetadata(text(key), text(value));
  }
  library->AddMetadata(kPeerHeader, caller.peer());
  if (caller.deadline() != std::chrono::system_clock::time_point::max()) library->set_deadline(caller.deadline());
}

void carry_back(const grpc::ClientContext& library, grpc::ServerContextBase* caller, bool initial) {
  if (initial) {
    for (const auto& [key, value] : library.GetServerInitialMetadata()) {
      if (forwardable(key)) caller->AddInitialMetadata(text(key), text(value));
    }
  }
  for (const auto& [key, value] : library.GetServerTrailingMetadata()) {
    if (forwardable(key)) caller->AddTrailingMetadata(text(key), text(value));
  }
}

grpc::ServerGenericBidiReactor* CallProxy::CreateReactor(grpc::GenericCallbackServerContext* context) {
  return new ProxiedCall(&stub_, context);
}

}  // namespace polarmem::front
