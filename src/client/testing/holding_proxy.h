// HoldingProxy: a TCP proxy in front of an NFS server that can keep chosen READ
// replies from ever reaching the client, so that a test knows those calls are
// still in flight (the client's own in_flight() counts them) without timing,
// and can hold GETATTR replies back until the test lets them go (a slow reply
// whose attributes are old by the time they arrive), or a READ reply until the
// replies of later calls on other connections have come, or one READ or WRITE reply
// while the replies behind it pass. It can also make WRITE replies claim FILE_SYNC,
// as a server that syncs every write may answer an UNSTABLE one.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

#include "proto/nfs3_types.h"
#include "rpc/record_marking.h"
#include "rpc/test_util.h"
#include "xdr/xdr.h"

namespace nfsx::client::testing {

class HoldingProxy {
 public:
  explicit HoldingProxy(uint16_t server_port) : server_port_(server_port) {
    listen_ = rpc::testing::LoopbackListener(&port_);
    accept_thread_ = std::thread([this] { AcceptLoop(); });
  }
  ~HoldingProxy() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
      for (auto& c : conns_) {
        shutdown(c->client, SHUT_RDWR);
        shutdown(c->server, SHUT_RDWR);
      }
    }
    Release();
    shutdown(listen_, SHUT_RDWR);
    accept_thread_.join();
    for (auto& c : conns_) {
      c->to_server.join();
      c->to_client.join();
      close(c->client);
      close(c->server);
    }
    close(listen_);
  }
  HoldingProxy(const HoldingProxy&) = delete;
  HoldingProxy& operator=(const HoldingProxy&) = delete;

  uint16_t port() const { return port_; }
  // From now on, replies to READs of offsets >= `offset` are dropped (UINT64_MAX: none).
  void HoldReadsFrom(uint64_t offset) { hold_from_.store(offset); }
  // Replies dropped so far.
  uint64_t held() const { return held_.load(); }

  // While on, a GETATTR reply stops its connection's replies until Release().
  void HoldGetattrReplies() {
    std::lock_guard lock(gate_mu_);
    gate_closed_ = true;
  }
  // While set, the reply to a READ of `offset` waits, with the replies behind it
  // on its connection, until Release(): a reply that comes after later calls' replies.
  void DelayReadReplyAt(uint64_t offset) {
    std::lock_guard lock(gate_mu_);
    delay_read_at_ = offset;
  }
  // Replies that have waited at DelayReadReplyAt so far, the one waiting now included.
  uint64_t read_replies_delayed() {
    std::lock_guard lock(gate_mu_);
    return read_replies_delayed_;
  }
  // While set, the reply to the `proc` (READ or WRITE) at `offset` is kept back,
  // later replies on its connection passing it, until ReleaseHeldReply().
  void HoldReplyAt(nfs3::nfsproc3 proc, uint64_t offset) {
    std::lock_guard lock(gate_mu_);
    hold_proc_ = proc;
    hold_at_ = offset;
  }
  // False if no such reply came within a minute.
  bool WaitReplyHeld() {
    std::unique_lock lock(gate_mu_);
    return gate_cv_.wait_for(lock, std::chrono::seconds(60),
                             [&] { return held_reply_.has_value(); });
  }
  void ReleaseHeldReply() {
    std::optional<std::pair<Conn*, std::vector<std::byte>>> r;
    {
      std::lock_guard lock(gate_mu_);
      r = std::move(held_reply_);
      held_reply_.reset();
      hold_at_ = UINT64_MAX;
    }
    if (r) {
      std::lock_guard send(r->first->send_mu);
      Forward(r->first->client, r->second);
    }
  }
  void Release() {
    {
      std::lock_guard lock(gate_mu_);
      gate_closed_ = false;
      delay_read_at_ = UINT64_MAX;
    }
    gate_cv_.notify_all();
  }
  // From now on, every successful WRITE reply says FILE_SYNC.
  void WriteRepliesSayFileSync() { say_file_sync_.store(true); }

  // Blocks until `n` GETATTR replies have reached the proxy while held.
  void WaitGetattrRepliesHeld(uint64_t n) {
    std::unique_lock lock(gate_mu_);
    gate_cv_.wait(lock, [&] { return getattrs_held_ >= n; });
  }

 private:
  struct Call {
    nfs3::nfsproc3 proc;
    uint64_t read_offset = 0;
  };
  struct Conn {
    int client = -1, server = -1;
    std::mutex mu;
    std::unordered_map<uint32_t, Call> calls;  // GUARDED_BY(mu): READs and GETATTRs by xid
    std::mutex send_mu;
    std::thread to_server, to_client;
  };

  static sockaddr_in Loopback(uint16_t port) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    return a;
  }

  void AcceptLoop() {
    for (;;) {
      int fd = accept4(listen_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) return;
      int up = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_in a = Loopback(server_port_);
      if (connect(up, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
        close(up);
        close(fd);
        continue;
      }
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      setsockopt(up, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      std::lock_guard lock(mu_);
      if (stop_) {
        close(up);
        close(fd);
        return;
      }
      auto c = std::make_unique<Conn>();
      c->client = fd;
      c->server = up;
      Conn* raw = c.get();
      c->to_server = std::thread([this, raw] { Pump(raw, raw->client, raw->server, true); });
      c->to_client = std::thread([this, raw] { Pump(raw, raw->server, raw->client, false); });
      conns_.push_back(std::move(c));
    }
  }

  // Copies records from `from` to `to`; calls are noted, replies perhaps dropped.
  void Pump(Conn* c, int from, int to, bool calls) {
    rpc::RecordReader reader(32 << 20);
    for (;;) {
      auto space = reader.PrepareWrite();
      ssize_t n = read(from, space.data(), space.size());
      if (n <= 0) break;
      reader.CommitWrite(static_cast<size_t>(n));
      std::span<std::byte> rec;
      while (reader.Next(&rec) == rpc::RecordReader::Status::kRecord) {
        if (rec.size() < 4) continue;
        uint32_t xid = xdr::LoadBe32(rec.data());
        if (calls) {
          NoteCall(c, xid, rec);
        } else if (Hold(c, xid, rec)) {
          continue;
        }
        std::unique_lock send(c->send_mu, std::defer_lock);
        if (!calls) send.lock();
        if (!Forward(to, rec)) return Close(to);
      }
    }
    Close(to);
  }
  static void Close(int to) { shutdown(to, SHUT_WR); }

  // Mark and record in one send: split, Nagle and delayed ACKs cost 40 ms a call.
  static bool Forward(int to, std::span<std::byte> rec) {
    std::byte mark[4];
    xdr::StoreBe32(mark, rpc::kLastFragment | static_cast<uint32_t>(rec.size()));
    iovec iov[2] = {{mark, 4}, {rec.data(), rec.size()}};
    size_t left = 4 + rec.size();
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = 2;
    while (left > 0) {
      ssize_t n = sendmsg(to, &msg, MSG_NOSIGNAL);
      if (n <= 0) return false;
      left -= static_cast<size_t>(n);
      for (auto* v = msg.msg_iov; n > 0; ++v) {  // skip what was sent
        size_t take = std::min(static_cast<size_t>(n), v->iov_len);
        v->iov_base = static_cast<std::byte*>(v->iov_base) + take;
        v->iov_len -= take;
        n -= static_cast<ssize_t>(take);
      }
    }
    return true;
  }

  // RFC 5531 call header, then READ3args (RFC 1813 §3.3.6): file handle, offset.
  static void NoteCall(Conn* c, uint32_t xid, std::span<const std::byte> rec) {
    size_t at = 24;
    auto u32 = [&](size_t pos) { return pos + 4 <= rec.size() ? xdr::LoadBe32(&rec[pos]) : 0; };
    if (rec.size() < at || u32(12) != nfs3::NFS_PROGRAM) return;
    auto proc = static_cast<nfs3::nfsproc3>(u32(20));
    if (proc == nfs3::nfsproc3::GETATTR) {
      std::lock_guard lock(c->mu);
      c->calls[xid] = {proc};
      return;
    }
    if (proc != nfs3::nfsproc3::READ && proc != nfs3::nfsproc3::WRITE) return;
    for (int auth = 0; auth < 2; ++auth) {  // credential, verifier
      uint32_t len = u32(at + 4);
      at += 8 + len + xdr::Pad4(len);
    }
    uint32_t fh_len = u32(at);
    at += 4 + fh_len + xdr::Pad4(fh_len);
    if (at + 8 > rec.size()) return;
    uint64_t offset = (uint64_t{u32(at)} << 32) | u32(at + 4);
    std::lock_guard lock(c->mu);
    c->calls[xid] = {proc, offset};
  }

  // Whether to drop the reply `xid`; waits first if it is a GETATTR's and the gate is closed.
  bool Hold(Conn* c, uint32_t xid, std::span<std::byte> rec) {
    Call call;
    {
      std::lock_guard lock(c->mu);
      auto it = c->calls.find(xid);
      if (it == c->calls.end()) return false;
      call = it->second;
      c->calls.erase(it);
    }
    if (call.proc == nfs3::nfsproc3::GETATTR) {
      std::unique_lock lock(gate_mu_);
      if (gate_closed_) {
        ++getattrs_held_;
        gate_cv_.notify_all();
        gate_cv_.wait(lock, [&] { return !gate_closed_; });
      }
      return false;
    }
    if (call.proc == nfs3::nfsproc3::WRITE) MaybeSayFileSync(rec);
    {
      std::lock_guard lock(gate_mu_);
      if (call.proc == hold_proc_ && call.read_offset == hold_at_ && !held_reply_) {
        held_reply_.emplace(c, std::vector<std::byte>(rec.begin(), rec.end()));
        gate_cv_.notify_all();
        return true;
      }
    }
    if (call.proc == nfs3::nfsproc3::WRITE) return false;
    {
      std::unique_lock lock(gate_mu_);
      if (call.read_offset == delay_read_at_) {
        ++read_replies_delayed_;
        gate_cv_.wait(lock, [&] { return delay_read_at_ != call.read_offset; });
      }
    }
    bool hold = call.read_offset >= hold_from_.load();
    if (hold) held_.fetch_add(1);
    return hold;
  }

  // RFC 5531 accepted reply, then WRITE3resok (RFC 1813 §3.3.7): status, wcc_data
  // (pre_op_attr of 24 bytes, post_op_attr of 84), count, committed.
  void MaybeSayFileSync(std::span<std::byte> rec) {
    if (!say_file_sync_.load()) return;
    size_t at = 12;
    auto u32 = [&](size_t pos) { return pos + 4 <= rec.size() ? xdr::LoadBe32(&rec[pos]) : 1; };
    if (u32(8) != 0) return;  // MSG_DENIED
    uint32_t verf_len = u32(at + 4);
    at += 8 + verf_len + xdr::Pad4(verf_len);
    if (u32(at) != 0 || u32(at + 4) != 0) return;  // not SUCCESS, or not NFS3_OK
    at += 8;
    if (u32(at) == 1) at += 24;
    at += 4;
    if (u32(at) == 1) at += 84;
    at += 4 + 4;  // the follows word, count
    if (at + 4 <= rec.size())
      xdr::StoreBe32(&rec[at], static_cast<uint32_t>(nfs3::stable_how::FILE_SYNC));
  }

  const uint16_t server_port_;
  int listen_ = -1;
  uint16_t port_ = 0;
  std::atomic<uint64_t> hold_from_{UINT64_MAX};
  std::atomic<uint64_t> held_{0};
  std::mutex gate_mu_;
  std::condition_variable gate_cv_;
  bool gate_closed_ = false;                                            // GUARDED_BY(gate_mu_)
  uint64_t getattrs_held_ = 0;                                          // GUARDED_BY(gate_mu_)
  uint64_t delay_read_at_ = UINT64_MAX;                                 // GUARDED_BY(gate_mu_)
  uint64_t read_replies_delayed_ = 0;                                   // GUARDED_BY(gate_mu_)
  nfs3::nfsproc3 hold_proc_ = nfs3::nfsproc3::WRITE;                    // GUARDED_BY(gate_mu_)
  uint64_t hold_at_ = UINT64_MAX;                                       // GUARDED_BY(gate_mu_)
  std::optional<std::pair<Conn*, std::vector<std::byte>>> held_reply_;  // GUARDED_BY(gate_mu_)
  std::atomic<bool> say_file_sync_{false};
  std::mutex mu_;
  bool stop_ = false;                         // GUARDED_BY(mu_)
  std::vector<std::unique_ptr<Conn>> conns_;  // GUARDED_BY(mu_) until the accept thread ends
  std::thread accept_thread_;
};

}  // namespace nfsx::client::testing
