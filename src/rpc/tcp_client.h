// RpcClient: ONC RPC calls over one TCP connection, many in flight.
//
// Calls are matched to replies by xid, so replies may come in any order. A call
// that gets no reply within `timeout` is retransmitted with the same xid (the
// server's duplicate request cache recognises it). When the connection drops,
// the client reconnects and retransmits every outstanding call.
//
// Thread-safe: any thread may call; callbacks of Call() run on the client's
// reader thread and must not block on another call of the same client.
//
// Who reads the socket: one receiver at a time, the reader thread or a caller.
// A CallSync() made while nothing else is in flight receives its own reply on
// its own thread (no wake-up of the reader thread, no handoff back to the
// caller: one thread switch less per round trip, as a single-threaded libnfs
// client has). Replies to other calls that arrive meanwhile are run by the
// reader thread, as always; the reader thread takes the socket back when the
// caller has its reply. Writes to the socket are made by any thread under `mu_`.
#pragma once

#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "base/buffer_pool.h"
#include "base/out_buffer.h"
#include "base/result.h"
#include "rpc/message.h"
#include "rpc/record_marking.h"

namespace nfsx::rpc {

// The connections to one server (a client's nconnect connections): "not responding"
// is said when the first of them stops getting answers and "OK" when the last gets
// them again, once each per episode, as Linux says it per server.
struct ServerSilence {
  std::atomic<int> silent{0};  // connections in a major timeout
  std::atomic<uint64_t> said_not_responding{0};
  std::atomic<uint64_t> said_ok{0};
};

struct RpcClientOptions {
  // Before the first retransmission. Each later one waits one `timeout` longer
  // (linear, as Linux over TCP), up to `max_timeout`.
  std::chrono::milliseconds timeout{30000};
  std::chrono::milliseconds max_timeout{600000};
  // Retransmissions without an answer that make a "major timeout", as Linux's
  // retrans: then a soft call fails with `timeout_error`, and a hard call logs
  // "server not responding, still trying" (once, until the server answers again,
  // when it logs "OK") and starts the next round at `timeout`.
  int max_retransmits = 10;
  bool hard = false;
  int timeout_error = ETIMEDOUT;
  bool reconnect = true;
  size_t max_record = 8u << 20;
  bool privileged_port = false;  // bind a source port < 1024 (needs root)
  // Shared by the connections to one server; null: this connection's own.
  std::shared_ptr<ServerSilence> silence;
};

// Where the bulk data of a call's reply (a READ's bytes) is to land: the
// receiver reads it from the socket straight into `dest`, with no copy through
// the reply record, when the reply is still arriving as its header is seen (a
// reply read whole in one go is handed over as usual). `dest` and the landing
// stay valid until the call's callback has run (CallSync: until it returns).
struct ReplyLanding {
  // Where the bulk opaque's length word lies in an accepted reply's results:
  // its offset, kNoBulk (an error status: no data), or kNeedMore when
  // `results`, a prefix, is too short to tell. Reads untrusted bytes.
  static constexpr std::ptrdiff_t kNoBulk = -1;
  static constexpr std::ptrdiff_t kNeedMore = -2;
  using Locator = std::ptrdiff_t (*)(std::span<const std::byte> results);
  std::span<std::byte> dest;
  Locator locate = nullptr;
};

// A reply whose results start at `results` inside `record` (kept alive with it).
struct RpcReply {
  ReplyHeader header;
  std::shared_ptr<const PooledBytes> record;
  std::span<const std::byte> results;
  // Set when the bulk data went to the call's ReplyLanding: that many bytes
  // (at most dest.size(); the server may have sent more) are at the front of
  // `dest`, and the opaque in `results` is empty.
  std::optional<size_t> landed;
};

struct RpcClientCounters {
  std::atomic<uint64_t> calls{0};
  std::atomic<uint64_t> retransmits{0};
  std::atomic<uint64_t> reconnects{0};
  std::atomic<uint64_t> bad_replies{0};  // malformed or for an unknown xid
  // Replies of CallSync() received by a calling thread rather than the reader thread.
  std::atomic<uint64_t> replies_to_callers{0};
  // Replies whose bulk data began to be read straight into its call's
  // ReplyLanding, and the bytes that landed so in replies handed over.
  std::atomic<uint64_t> landed_replies{0};
  std::atomic<uint64_t> landed_bytes{0};
  // Episodes of "not responding" (major timeouts of hard calls), and how many of
  // them ended with an answer.
  std::atomic<uint64_t> not_responding{0};
  std::atomic<uint64_t> responding_again{0};
};

class RpcClient {
 public:
  using Callback = std::move_only_function<void(Result<RpcReply>)>;
  using ArgsEncoder = std::function<void(xdr::XdrEncoder&)>;

  static Result<std::unique_ptr<RpcClient>> Connect(const std::string& host, uint16_t port,
                                                    RpcClientOptions options = {});
  ~RpcClient();
  RpcClient(const RpcClient&) = delete;
  RpcClient& operator=(const RpcClient&) = delete;

  // Sends a call and returns its xid. `cb` runs exactly once: with the reply (any
  // accept status), or with an error (ETIMEDOUT, ECONNRESET when reconnecting is
  // off, ESHUTDOWN), perhaps before Call returns.
  uint32_t Call(uint32_t prog, uint32_t vers, uint32_t proc, const Credential& cred,
                const ArgsEncoder& args, Callback cb, const ReplyLanding* landing = nullptr);
  // Fails the call `xid` with `err` if it is still waiting for its reply: its
  // callback runs here, once its landing is written no more. A reply being
  // handed over meanwhile runs the callback on the receiving thread instead.
  void Cancel(uint32_t xid, int err);
  // Same, waiting for the reply. When this thread's work is interrupted (see
  // InterruptScope) the wait ends, the call is cancelled and the result is EINTR.
  Result<RpcReply> CallSync(uint32_t prog, uint32_t vers, uint32_t proc, const Credential& cred,
                            const ArgsEncoder& args, const ReplyLanding* landing = nullptr);

  // Stops the reader thread, then fails every call in flight with ESHUTDOWN,
  // running their callbacks on this thread; later calls fail at once, on the
  // caller's thread. On return no callback of this client is running or will
  // run on another thread. Idempotent; the destructor calls it. An owner whose
  // callbacks use its own state calls it while that state is still whole.
  // REQUIRES: not called from one of this client's callbacks.
  void Shutdown();

  const RpcClientCounters& counters() const { return counters_; }
  size_t in_flight() const;
  // Changes `hard` and `timeout_error` for calls from now on (a mount is soft
  // while it mounts, then as asked).
  void SetRecovery(bool hard, int timeout_error) {
    std::lock_guard lock(mu_);
    hard_ = hard;
    timeout_error_ = timeout_error;
  }
  const std::string& host() const { return host_; }
  uint16_t port() const { return port_; }

 private:
  RpcClient(std::string host, uint16_t port, RpcClientOptions options);
  Result<int> Dial();
  // Queues and sends a call. With `receive` (a CallSync), the caller becomes the
  // receiver if nobody is (*receive is then true) and must call ReceiveAsCaller.
  uint32_t Send(uint32_t prog, uint32_t vers, uint32_t proc, const Credential& cred,
                const ArgsEncoder& args, Callback cb, const ReplyLanding* landing,
                bool* receive = nullptr);
  // Landing a reply's data (see ReplyLanding). The receiver looks at each reply
  // still arriving once, and diverts its bulk bytes when its call has a landing.
  void MaybeLand();
  // Before bytes are written into the diverted reply's landing: false when its
  // call is gone (answered by a retransmission, cancelled, timed out), and the
  // landing's memory may be its owner's again.
  bool HoldLanding();
  void ReleaseLanding();
  // A call that ended other than by its reply: its landing is written no more.
  void WaitLandingReleasedLocked(std::unique_lock<std::mutex>& lock, const ReplyLanding* landing);
  void ResetRecords();
  void ReaderLoop();
  // The receiving caller's loop: reads replies until `done()`, the connection
  // breaks, the client shuts down or the caller is interrupted; then gives the
  // socket back to the reader thread.
  void ReceiveAsCaller(const std::function<bool()>& done);
  enum class Received {
    kAll,      // everything the socket had
    kStopped,  // this thread stopped being the receiver (see HandleRecord)
    kBroken,   // the connection is unusable: closed, broken, a record too large
  };
  // Reads what the socket has and hands out every complete reply.
  // REQUIRES: the calling thread is the receiver.
  Received ReceiveAvailable(int fd, bool reader_thread);
  // Closes the broken socket. The reader thread then reconnects, or without
  // reconnecting fails every call. REQUIRES: the receiver, or Shutdown().
  void CloseBrokenLocked();
  void RunDeferred();
  // Empties an eventfd, so that the next poll waits again.
  Result<void> ConnectWithin(int fd, const sockaddr* addr, socklen_t len) const;
  static void Drain(int fd);
  static void Wake(int fd);
  // The send queue could not be written out: wakes whoever polls for POLLOUT.
  void WakeWriterLocked();
  bool FlushLocked();
  void FailAllLocked(int err, std::vector<Callback>* out);
  // Hands one reply to its call. Returns false when this thread stopped being
  // the receiver: the reader thread after the last awaited reply, a CallSync's;
  // a caller when a Call()'s reply came (left for the reader thread to run).
  bool HandleRecord(std::span<std::byte> record, std::optional<size_t> landed, bool reader_thread);
  void CheckTimeouts();
  bool ReconnectLocked();

  struct Pending {
    std::shared_ptr<OutBuffer> request;  // whole record, kept for retransmission
    Callback cb;
    std::chrono::steady_clock::time_point deadline;
    int retransmits = 0;  // in this round, since the last major timeout
    // A CallSync waiter's: short, and safe to run on whichever thread receives.
    bool any_thread = false;
    const ReplyLanding* landing = nullptr;
  };

  enum class Receiver {
    kReaderThread,  // the reader thread polls and reads the socket
    kNobody,        // nothing is expected: the reader thread polls only its eventfd
    kCaller,        // a CallSync caller reads the socket; the reader thread waits
  };

  const std::string host_;
  const uint16_t port_;
  const RpcClientOptions options_;
  RpcClientCounters counters_;

  mutable std::mutex mu_;
  int fd_ = -1;                                        // GUARDED_BY(mu_)
  std::map<uint32_t, Pending> pending_;                // GUARDED_BY(mu_)
  std::deque<std::shared_ptr<OutBuffer>> send_queue_;  // GUARDED_BY(mu_)
  Receiver receiver_ = Receiver::kNobody;              // GUARDED_BY(mu_)
  std::condition_variable receiver_cv_;                // a caller stopped receiving
  // Replies a receiving caller read for calls whose callbacks must run on the
  // reader thread.
  std::vector<std::pair<Callback, RpcReply>> deferred_;  // GUARDED_BY(mu_)
  // The stream's reassembly: used only by the current receiver (handed over under mu_).
  RecordReader records_;
  // A receiver stopped between records: complete ones may wait in records_.
  // Set when the socket changes hands, under mu_.
  bool records_left_ = false;
  // The receiver's view of the reply arriving in records_: looked at for a
  // landing already, and the call whose landing its bulk bytes are diverted to.
  bool landing_checked_ = false;
  uint32_t landing_xid_ = 0;
  const ReplyLanding* landing_ = nullptr;
  // The landing the receiver is writing into, outside mu_.
  const ReplyLanding* landing_in_use_ = nullptr;  // GUARDED_BY(mu_)
  std::condition_variable landing_cv_;            // landing_in_use_ was cleared
  size_t send_offset_ = 0;
  std::atomic<uint32_t> next_xid_;
  bool shutdown_ = false;  // GUARDED_BY(mu_)
  bool hard_;              // GUARDED_BY(mu_)
  int timeout_error_;      // GUARDED_BY(mu_)
  // A hard call reached a major timeout and no reply has come since.
  bool not_responding_ = false;  // GUARDED_BY(mu_)
  // Its connection left or joined the silent ones (under mu_ with not_responding_).
  void SetSilent(bool silent);
  // Between failed reconnection attempts; doubles up to 5 s, reset on success.
  std::chrono::milliseconds reconnect_backoff_{100};
  int wake_fd_ = -1;         // wakes the reader thread
  int caller_wake_fd_ = -1;  // wakes the receiving caller
  std::once_flag shutdown_once_;
  std::thread reader_;
};

}  // namespace nfsx::rpc
