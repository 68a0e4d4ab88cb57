// Channel: the client's NFSv3 calls over one or more TCP connections
// (nconnect), with per-procedure counters for nfsstat-style reports.
//
// Thread-safe. Completion callbacks run on a connection's reader thread: they
// must be short and must never wait for another call.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <vector>

#include "base/interruption.h"
#include "client/acting_as.h"
#include "client/delayed_tasks.h"
#include "client/typed_call.h"
#include "nfsx/client.h"
#include "proto/nfs3_types.h"

namespace nfsx::client {

class Channel {
 public:
  static Result<std::unique_ptr<Channel>> Open(const std::string& host, uint16_t port, int nconnect,
                                               rpc::RpcClientOptions options, rpc::Credential cred);

  // Both kinds of call retry NFS3ERR_JUKEBOX (the server's "try again later": a
  // file being recalled from tape, a lock being broken) after 100 ms, doubling up
  // to 5 s, for as long as the server says it; the caller never sees it.
  template <class Res, class Args>
  void Call(nfs3::nfsproc3 proc, const Args& args, std::function<void(Result<Res>)> done) {
    Count(proc);
    // The arguments and identity are kept for a JUKEBOX resend.
    Send<Res>(proc, std::make_shared<const Args>(args), ActingAs::Or(cred_), std::move(done),
              kFirstJukeboxDelay);
  }

  template <class Res, class Args>
  Result<Res> CallSync(nfs3::nfsproc3 proc, const Args& args) {
    return RetryJukebox<Res>(proc, [&] {
      return client::CallSync<Res>(Next(), nfs3::NFS_PROGRAM, nfs3::NFS_V3,
                                   static_cast<uint32_t>(proc), ActingAs::Or(cred_), args);
    });
  }

  // READ whose data lands in `dest` (at most dest.size() bytes are asked for
  // and kept): on NFS3_OK, resok.data is the front of `dest`. The data goes
  // from the socket into `dest` with no copy when the reply is large enough to
  // arrive in pieces.
  Result<nfs3::READ3res> ReadSync(const nfs3::nfs_fh3& fh, uint64_t offset,
                                  std::span<std::byte> dest);

  // A READ sent by ReadAsync: where to cancel it.
  struct SentRead {
    rpc::RpcClient* conn = nullptr;
    uint32_t xid = 0;
  };
  // ReadSync without waiting, on the next connection: `done` runs once, on a
  // reader thread (or this one, before the return), and `dest` is its caller's
  // again once it has. NFS3ERR_JUKEBOX goes to `done`: a resend is its caller's.
  SentRead ReadAsync(const nfs3::nfs_fh3& fh, uint64_t offset, std::span<std::byte> dest,
                     std::move_only_function<void(Result<nfs3::READ3res>)> done);
  // ReadAsync whose NFS3ERR_JUKEBOX answers are sent again as Call's are (`done` never
  // sees one). It cannot be cancelled.
  void ReadAsyncRetrying(const nfs3::nfs_fh3& fh, uint64_t offset, std::span<std::byte> dest,
                         std::move_only_function<void(Result<nfs3::READ3res>)> done,
                         std::chrono::milliseconds delay = kFirstJukeboxDelay);
  // Fails a READ of ReadAsync still waiting for its reply with `err` (see
  // RpcClient::Cancel): its `done` has run or is running when this returns.
  static void Cancel(const SentRead& read, int err) {
    if (read.conn) read.conn->Cancel(read.xid, err);
  }

  void AddWriteBytes(uint64_t n) { write_bytes_.fetch_add(n, std::memory_order_relaxed); }
  void AddReadBytes(uint64_t n) { read_bytes_.fetch_add(n, std::memory_order_relaxed); }
  void AddResentBytes(uint64_t n) { resent_bytes_.fetch_add(n, std::memory_order_relaxed); }
  void AddCommitAhead() { commits_ahead_.fetch_add(1, std::memory_order_relaxed); }
  void AddInvalidation() { invalidations_.fetch_add(1, std::memory_order_relaxed); }

  WireStats stats() const;
  // RpcClient::SetRecovery on every connection.
  void SetRecovery(bool hard, int timeout_error) {
    for (auto& c : conns_) c->SetRecovery(hard, timeout_error);
  }
  // Shuts every connection down (RpcClient::Shutdown): calls in flight fail with
  // ESHUTDOWN and their callbacks run on this thread before it returns; later
  // calls fail at once. Idempotent.
  void Shutdown();
  // Calls answered NFS3ERR_JUKEBOX and sent again.
  uint64_t jukebox_retries() const { return jukebox_retries_.load(std::memory_order_relaxed); }
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
  template <class Res>
  Result<Res> RetryJukebox(nfs3::nfsproc3 proc, const std::function<Result<Res>()>& call) {
    Count(proc);
    auto delay = kFirstJukeboxDelay;
    for (;;) {
      auto res = call();
      if (!res || res->status != nfs3::NFS3ERR_JUKEBOX) return res;
      jukebox_retries_.fetch_add(1, std::memory_order_relaxed);
      if (!SleepUnlessInterrupted(delay)) return Fail(EINTR);
      delay = std::min(delay * 2, kMaxJukeboxDelay);
    }
  }
  void Count(nfs3::nfsproc3 proc) {
    calls_[static_cast<size_t>(proc)].fetch_add(1, std::memory_order_relaxed);
  }

  static constexpr std::chrono::milliseconds kFirstJukeboxDelay{100};
  static constexpr std::chrono::milliseconds kMaxJukeboxDelay{5000};

  // Sends `args`; a JUKEBOX answer sends them again after `delay` (then twice as
  // long, up to kMaxJukeboxDelay), from the retry thread: reply callbacks run on a
  // connection's reader thread and must not wait.
  template <class Res, class Args>
  void Send(nfs3::nfsproc3 proc, std::shared_ptr<const Args> args, rpc::Credential cred,
            std::function<void(Result<Res>)> done, std::chrono::milliseconds delay) {
    Next().Call(
        nfs3::NFS_PROGRAM, nfs3::NFS_V3, static_cast<uint32_t>(proc), cred,
        [&](xdr::XdrEncoder& e) { e(*args); },
        [this, proc, args, cred, done = std::move(done),
         delay](Result<rpc::RpcReply> reply) mutable {
          auto res = DecodeReply<Res>(reply);
          if (!res || res->status != nfs3::NFS3ERR_JUKEBOX) return done(std::move(res));
          jukebox_retries_.fetch_add(1, std::memory_order_relaxed);
          retries_.After(delay, [this, proc, args = std::move(args), cred = std::move(cred),
                                 done = std::move(done), delay]() mutable {
            Send<Res>(proc, std::move(args), std::move(cred), std::move(done),
                      std::min(delay * 2, kMaxJukeboxDelay));
          });
        });
  }

  std::vector<std::unique_ptr<rpc::RpcClient>> conns_;
  rpc::Credential cred_;
  std::atomic<uint32_t> next_{0};
  std::array<std::atomic<uint64_t>, nfs3::kNumProcs> calls_{};
  std::atomic<uint64_t> write_bytes_{0}, read_bytes_{0}, resent_bytes_{0}, invalidations_{0};
  std::atomic<uint64_t> commits_ahead_{0};
  std::atomic<uint64_t> jukebox_retries_{0};
  DelayedTasks retries_;  // last: stopped (its tasks run) after the connections shut down
};

}  // namespace nfsx::client
