// Channel: the client's NFSv3 calls over one or more TCP connections
// (nconnect), with per-procedure counters for nfsstat-style reports.
//
// Thread-safe. Completion callbacks run on a connection's reader thread: they
// must be short and must never wait for another call.
#pragma once

#include <array>
#include <atomic>
#include <functional>
#include <memory>
#include <vector>

#include "client/acting_as.h"
#include "client/typed_call.h"
#include "nfsx/client.h"
#include "proto/nfs3_types.h"

namespace nfsx::client {

class Channel {
 public:
  static Result<std::unique_ptr<Channel>> Open(const std::string& host, uint16_t port, int nconnect,
                                               rpc::RpcClientOptions options, rpc::Credential cred);

  template <class Res, class Args>
  void Call(nfs3::nfsproc3 proc, const Args& args, std::function<void(Result<Res>)> done) {
    Count(proc);
    Next().Call(
        nfs3::NFS_PROGRAM, nfs3::NFS_V3, static_cast<uint32_t>(proc), ActingAs::Or(cred_),
        [&](xdr::XdrEncoder& e) { e(args); },
        [done = std::move(done)](Result<rpc::RpcReply> reply) { done(DecodeReply<Res>(reply)); });
  }

  template <class Res, class Args>
  Result<Res> CallSync(nfs3::nfsproc3 proc, const Args& args) {
    Count(proc);
    return client::CallSync<Res>(Next(), nfs3::NFS_PROGRAM, nfs3::NFS_V3,
                                 static_cast<uint32_t>(proc), ActingAs::Or(cred_), args);
  }

  void AddWriteBytes(uint64_t n) { write_bytes_.fetch_add(n, std::memory_order_relaxed); }
  void AddReadBytes(uint64_t n) { read_bytes_.fetch_add(n, std::memory_order_relaxed); }
  void AddResentBytes(uint64_t n) { resent_bytes_.fetch_add(n, std::memory_order_relaxed); }
  void AddInvalidation() { invalidations_.fetch_add(1, std::memory_order_relaxed); }

  WireStats stats() const;
  // Shuts every connection down (RpcClient::Shutdown): calls in flight fail with
  // ESHUTDOWN and their callbacks run on this thread before it returns; later
  // calls fail at once. Idempotent.
  void Shutdown();
  // Calls sent whose callbacks have not been taken yet, over all connections.
  size_t in_flight() const;
  // The client's own identity; calls carry ActingAs::Or(cred()).
  const rpc::Credential& cred() const { return cred_; }

 private:
  Channel(std::vector<std::unique_ptr<rpc::RpcClient>> conns, rpc::Credential cred)
      : conns_(std::move(conns)), cred_(std::move(cred)) {}
  rpc::RpcClient& Next() {
    return *conns_[next_.fetch_add(1, std::memory_order_relaxed) % conns_.size()];
  }
  void Count(nfs3::nfsproc3 proc) {
    calls_[static_cast<size_t>(proc)].fetch_add(1, std::memory_order_relaxed);
  }

  std::vector<std::unique_ptr<rpc::RpcClient>> conns_;
  rpc::Credential cred_;
  std::atomic<uint32_t> next_{0};
  std::array<std::atomic<uint64_t>, nfs3::kNumProcs> calls_{};
  std::atomic<uint64_t> write_bytes_{0}, read_bytes_{0}, resent_bytes_{0}, invalidations_{0};
};

}  // namespace nfsx::client
