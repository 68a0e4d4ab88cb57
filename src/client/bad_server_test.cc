// The client facing a server that misbehaves: replies for unknown xids,
// garbage, truncated results, oversized records, RPC-level refusals. Each must
// become a clear error (or be ignored), never a crash or a wrong result.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <future>
#include <thread>

#include "base/interruption.h"
#include "client/typed_call.h"
#include "proto/nfs3_types.h"
#include "rpc/record_marking.h"
#include "rpc/test_util.h"

namespace nfsx::client {
namespace {

using namespace nfs3;

// Accepts one connection and answers each call with what `respond` returns
// (raw reply messages, without record marks; several per call allowed).
class FakeServer {
 public:
  using Respond = std::function<std::vector<std::vector<std::byte>>(uint32_t xid)>;
  explicit FakeServer(Respond respond) : respond_(std::move(respond)) {
    listen_ = rpc::testing::LoopbackListener(&port_, 4);
    thread_ = std::thread([this] { Serve(); });
  }
  ~FakeServer() {
    shutdown(listen_, SHUT_RDWR);
    close(listen_);
    if (conn_ >= 0) shutdown(conn_, SHUT_RDWR);
    thread_.join();
  }
  uint16_t port() const { return port_; }
  // Call records received so far.
  int records() const { return records_.load(); }
  // Ends the connection as a crashing server would.
  void Drop() {
    int c = conn_.load();
    if (c >= 0) shutdown(c, SHUT_RDWR);
  }

 private:
  void Serve() {
    conn_ = accept(listen_, nullptr, nullptr);
    if (conn_ < 0) return;
    rpc::RecordReader reader(1 << 20);
    for (;;) {
      auto space = reader.PrepareWrite();
      ssize_t n = read(conn_, space.data(), space.size());
      if (n <= 0) break;
      reader.CommitWrite(static_cast<size_t>(n));
      std::span<std::byte> rec;
      while (reader.Next(&rec) == rpc::RecordReader::Status::kRecord) {
        uint32_t xid = xdr::LoadBe32(rec.data());
        records_.fetch_add(1);
        for (auto& msg : respond_(xid)) {
          std::byte mark[4];
          xdr::StoreBe32(mark, rpc::kLastFragment | static_cast<uint32_t>(msg.size()));
          // MSG_NOSIGNAL: a client that drops the connection mid-reply (the
          // oversized-record test) must not kill the test with SIGPIPE.
          if (send(conn_, mark, 4, MSG_NOSIGNAL) != 4) return;
          if (!msg.empty() && send(conn_, msg.data(), msg.size(), MSG_NOSIGNAL) < 0) return;
        }
      }
    }
    close(conn_);
  }
  Respond respond_;
  int listen_ = -1;
  std::atomic<int> conn_{-1};  // set by the serving thread, read by the destructor
  std::atomic<int> records_{0};
  uint16_t port_ = 0;
  std::thread thread_;
};

std::vector<std::byte> Accepted(uint32_t xid, rpc::accept_stat stat,
                                std::function<void(xdr::XdrEncoder&)> body = nullptr) {
  OutBuffer out;
  xdr::XdrEncoder e(&out);
  rpc::EncodeAcceptedReply(e, xid, stat);
  if (body) body(e);
  return out.Flatten();
}

// A client of the fake server, which takes one connection: no reconnecting.
std::unique_ptr<rpc::RpcClient> Connect(uint16_t port, rpc::RpcClientOptions o) {
  o.reconnect = false;
  auto c = rpc::RpcClient::Connect("127.0.0.1", port, o);
  EXPECT_TRUE(c.has_value());
  return std::move(*c);
}

std::unique_ptr<rpc::RpcClient> Connect(uint16_t port, int timeout_ms = 5000, int retrans = 0) {
  rpc::RpcClientOptions o;
  o.timeout = std::chrono::milliseconds(timeout_ms);
  o.max_retransmits = retrans;
  return Connect(port, o);
}

Result<GETATTR3res> Getattr(rpc::RpcClient& c) {
  return CallSync<GETATTR3res>(c, NFS_PROGRAM, NFS_V3, 1, {}, GETATTR3args{});
}

TEST(BadServerTest, ReplyForAnUnknownXidIsIgnored) {
  FakeServer s([](uint32_t xid) {
    GETATTR3res ok;
    ok.resok.obj_attributes.size = 42;
    return std::vector<std::vector<std::byte>>{
        Accepted(xid + 1000, rpc::accept_stat::SUCCESS),  // nobody asked for this one
        Accepted(xid, rpc::accept_stat::SUCCESS, [&](auto& e) { e(ok); })};
  });
  auto c = Connect(s.port());
  auto r = Getattr(*c);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->resok.obj_attributes.size, 42u);
  EXPECT_EQ(c->counters().bad_replies.load(), 1u);
}

TEST(BadServerTest, TruncatedResultsAreEBADMSG) {
  FakeServer s([](uint32_t xid) {
    return std::vector<std::vector<std::byte>>{
        Accepted(xid, rpc::accept_stat::SUCCESS, [](auto& e) {
          e(NFS3_OK);
          e(uint32_t{1});  // an fattr3 that stops after its type
        })};
  });
  auto c = Connect(s.port());
  auto r = Getattr(*c);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, EBADMSG);
}

TEST(BadServerTest, RpcRefusalsBecomeErrnos) {
  FakeServer s([](uint32_t xid) {
    return std::vector<std::vector<std::byte>>{Accepted(xid, rpc::accept_stat::PROG_UNAVAIL)};
  });
  auto c = Connect(s.port());
  auto r = Getattr(*c);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, EPROTONOSUPPORT);
}

TEST(BadServerTest, GarbageRepliesAreCountedAndTheCallTimesOut) {
  FakeServer s([](uint32_t) {
    return std::vector<std::vector<std::byte>>{std::vector<std::byte>(3, std::byte{0xff})};
  });
  auto c = Connect(s.port(), 300, 1);
  auto r = Getattr(*c);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ETIMEDOUT);
  EXPECT_GE(c->counters().bad_replies.load(), 1u);
  EXPECT_EQ(c->counters().retransmits.load(), 1u);
}

TEST(BadServerTest, OversizedReplyRecordDropsTheConnection) {
  FakeServer s([](uint32_t xid) {
    return std::vector<std::vector<std::byte>>{
        Accepted(xid, rpc::accept_stat::SUCCESS, [](auto& e) {
          e.Bytes(std::vector<std::byte>(9 << 20));  // over the client's 8 MiB default
        })};
  });
  auto c = Connect(s.port());
  auto r = Getattr(*c);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ECONNRESET);
}

using rpc::testing::WaitFor;

// A server that answers nothing until `answering`, then answers every call
// (the retransmissions of a hard call included).
FakeServer::Respond StalledUntil(const std::atomic<bool>& answering) {
  return [&answering](uint32_t xid) {
    if (!answering.load()) return std::vector<std::vector<std::byte>>{};
    GETATTR3res ok;
    ok.resok.obj_attributes.size = 7;
    return std::vector<std::vector<std::byte>>{
        Accepted(xid, rpc::accept_stat::SUCCESS, [&](auto& e) { e(ok); })};
  };
}

// Reads every call of its first connection and answers none (a half-open connection, a
// server restarted behind a NAT, a stalled peer); answers GETATTR on later connections.
class SilentFirstConnection {
 public:
  SilentFirstConnection() {
    listen_ = rpc::testing::LoopbackListener(&port_, 4);
    thread_ = std::thread([this] { Accept(); });
  }
  ~SilentFirstConnection() {
    shutdown(listen_, SHUT_RDWR);
    close(listen_);
    {
      std::lock_guard lock(mu_);
      for (int c : conns_) shutdown(c, SHUT_RDWR);
    }
    thread_.join();
    for (auto& t : serving_) t.join();
  }
  uint16_t port() const { return port_; }
  int connections() const { return connections_.load(); }

 private:
  void Accept() {
    for (int index = 0;; ++index) {
      int c = accept(listen_, nullptr, nullptr);
      if (c < 0) return;
      connections_.fetch_add(1);
      std::lock_guard lock(mu_);
      conns_.push_back(c);
      serving_.emplace_back([this, c, index] { Serve(c, index > 0); });
    }
  }
  static void Serve(int conn, bool answer) {
    rpc::RecordReader reader(1 << 20);
    for (;;) {
      auto space = reader.PrepareWrite();
      ssize_t n = read(conn, space.data(), space.size());
      if (n <= 0) break;
      reader.CommitWrite(static_cast<size_t>(n));
      std::span<std::byte> rec;
      while (reader.Next(&rec) == rpc::RecordReader::Status::kRecord) {
        if (!answer) continue;
        GETATTR3res ok;
        ok.resok.obj_attributes.size = 7;
        auto msg =
            Accepted(xdr::LoadBe32(rec.data()), rpc::accept_stat::SUCCESS, [&](auto& e) { e(ok); });
        std::byte mark[4];
        xdr::StoreBe32(mark, rpc::kLastFragment | static_cast<uint32_t>(msg.size()));
        if (send(conn, mark, 4, MSG_NOSIGNAL) != 4) return;
        if (send(conn, msg.data(), msg.size(), MSG_NOSIGNAL) < 0) return;
      }
    }
  }
  int listen_ = -1;
  uint16_t port_ = 0;
  std::atomic<int> connections_{0};
  std::mutex mu_;
  std::vector<int> conns_;  // GUARDED_BY(mu_); closed by the process's end (a test)
  std::vector<std::thread> serving_;
  std::thread thread_;
};

// A retransmission goes over a new connection, as Linux's NFS client sends it: one sent
// again on a connection that swallows calls is never answered. Before, a soft call kept
// resending on the dead connection until it failed (here after 4.2 s; now it is answered
// after its first timeout).
TEST(BadServerTest, ARetransmissionGoesOverANewConnection) {
  SilentFirstConnection s;
  rpc::RpcClientOptions o;
  o.timeout = std::chrono::milliseconds(200);
  o.max_retransmits = 5;
  auto c = rpc::RpcClient::Connect("127.0.0.1", s.port(), o);
  ASSERT_TRUE(c.has_value());
  auto r = Getattr(**c);
  ASSERT_TRUE(r.has_value()) << "errno " << r.error().code;
  EXPECT_EQ(r->resok.obj_attributes.size, 7u);
  EXPECT_GE((*c)->counters().reconnects.load(), 1u);
  EXPECT_GE(s.connections(), 2);
}

// Connecting to an address that never answers (a SYN into a black hole) gives up after
// the client's timeout rather than the kernel's two minutes of SYN retries.
TEST(BadServerTest, AConnectThatIsNeverAnsweredEndsAtTheTimeout) {
  uint16_t port = 0;
  int listener = rpc::testing::LoopbackListener(&port, 0);
  // A backlog of 0 that is full: later SYNs are dropped, never answered.
  std::vector<std::unique_ptr<rpc::RpcClient>> fillers;
  rpc::RpcClientOptions o;
  o.timeout = std::chrono::milliseconds(300);
  o.reconnect = false;
  auto start = std::chrono::steady_clock::now();
  Result<std::unique_ptr<rpc::RpcClient>> last = Fail(0);
  for (int i = 0; i < 8; ++i) {
    last = rpc::RpcClient::Connect("127.0.0.1", port, o);
    if (!last) break;
    fillers.push_back(std::move(*last));
  }
  auto took = std::chrono::steady_clock::now() - start;
  close(listener);
  ASSERT_FALSE(last.has_value()) << "every connect was accepted: the backlog never filled";
  EXPECT_EQ(last.error().code, ETIMEDOUT);
  EXPECT_LT(took, std::chrono::seconds(60)) << "waited for the kernel's SYN retries";
}

TEST(BadServerTest, HardCallsOutlastAStalledServerAndSayOnceWhenItIsBack) {
  std::atomic<bool> answering{false};
  FakeServer s(StalledUntil(answering));
  rpc::RpcClientOptions o;
  o.timeout = std::chrono::milliseconds(10);
  o.max_timeout = std::chrono::milliseconds(20);
  o.max_retransmits = 2;
  o.hard = true;
  auto c = Connect(s.port(), o);
  auto call = std::async(std::launch::async, [&] { return Getattr(*c); });
  // Several major timeouts go by: a soft call would have failed at the first.
  ASSERT_TRUE(WaitFor([&] { return c->counters().retransmits.load() >= 8; }));
  EXPECT_EQ(c->counters().not_responding.load(), 1u) << "\"not responding\" is said once";
  answering = true;
  auto r = call.get();
  ASSERT_TRUE(r.has_value()) << r.error().code;
  EXPECT_EQ(r->resok.obj_attributes.size, 7u);
  EXPECT_EQ(c->counters().responding_again.load(), 1u);
}

// nconnect: the connections to one server say "not responding" once between them
// when they stop getting answers, and "OK" once when they are all answered again
// (each used to say both).
TEST(BadServerTest, ConnectionsToOneServerSayNotRespondingAndOkOnce) {
  std::atomic<bool> answering{false};
  // FakeServer serves one connection: one each, standing for one server.
  FakeServer s(StalledUntil(answering)), t(StalledUntil(answering));
  rpc::RpcClientOptions o;
  o.timeout = std::chrono::milliseconds(10);
  o.max_timeout = std::chrono::milliseconds(20);
  o.max_retransmits = 2;
  o.hard = true;
  o.silence = std::make_shared<rpc::ServerSilence>();
  auto a = Connect(s.port(), o);
  auto b = Connect(t.port(), o);
  auto call_a = std::async(std::launch::async, [&] { return Getattr(*a); });
  auto call_b = std::async(std::launch::async, [&] { return Getattr(*b); });
  ASSERT_TRUE(WaitFor([&] {
    return a->counters().not_responding.load() >= 1 && b->counters().not_responding.load() >= 1;
  }));
  EXPECT_EQ(o.silence->said_not_responding.load(), 1u) << "said once per connection";
  answering = true;
  ASSERT_TRUE(call_a.get().has_value());
  ASSERT_TRUE(call_b.get().has_value());
  EXPECT_EQ(o.silence->said_ok.load(), 1u);
  EXPECT_EQ(o.silence->silent.load(), 0);
}

// The connection breaks while a CallSync is receiving its own reply (the first
// call on an idle connection does), with a Call() in flight beside it and no
// reconnecting: both fail, and the Call()'s callback runs on the reader thread,
// as RpcClient promises, not on the caller that happened to be receiving (which
// may hold a lock that callback needs).
TEST(BadServerTest, ABrokenConnectionFailsCallsOnTheReaderThreadNotOnTheReceivingCaller) {
  FakeServer s([](uint32_t) { return std::vector<std::vector<std::byte>>{}; });
  auto c = Connect(s.port(), 60000, 0);
  std::thread::id caller_id;
  Result<GETATTR3res> sync_result = Fail(EIO);
  std::thread caller([&] {
    caller_id = std::this_thread::get_id();
    sync_result = Getattr(*c);
  });
  ASSERT_TRUE(WaitFor([&] { return s.records() == 1; }));
  std::promise<std::pair<std::thread::id, int>> async_done;
  c->Call(NFS_PROGRAM, NFS_V3, 0, {}, nullptr, [&](Result<rpc::RpcReply> r) {
    async_done.set_value({std::this_thread::get_id(), r ? 0 : r.error().code});
  });
  ASSERT_TRUE(WaitFor([&] { return s.records() == 2; }));
  s.Drop();
  auto [callback_id, async_error] = async_done.get_future().get();
  caller.join();
  EXPECT_EQ(async_error, ECONNRESET);
  ASSERT_FALSE(sync_result.has_value());
  EXPECT_EQ(sync_result.error().code, ECONNRESET);
  EXPECT_NE(callback_id, caller_id) << "the Call()'s callback ran on the receiving caller";
}

TEST(BadServerTest, SoftCallsFailWithTheirErrorAfterRetransWithGrowingTimeouts) {
  std::atomic<bool> answering{false};
  FakeServer s(StalledUntil(answering));
  rpc::RpcClientOptions o;
  o.timeout = std::chrono::milliseconds(20);
  o.max_retransmits = 2;
  o.timeout_error = EIO;  // soft; softerr keeps ETIMEDOUT
  auto c = Connect(s.port(), o);
  auto start = std::chrono::steady_clock::now();
  auto r = Getattr(*c);
  auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, EIO);
  EXPECT_EQ(c->counters().retransmits.load(), 2u);
  EXPECT_EQ(c->counters().not_responding.load(), 0u);
  // 20 + 40 + 60 ms: each retransmission waits one timeout longer.
  EXPECT_GE(took, std::chrono::milliseconds(120));
}

// A caller whose work is interrupted (the FUSE request of a process that got a
// signal) stops waiting for a hard call at once, with EINTR, and the call stops
// being retransmitted.
TEST(BadServerTest, AnInterruptedCallerStopsWaitingForAHardCall) {
  std::atomic<bool> answering{false};
  FakeServer s(StalledUntil(answering));
  rpc::RpcClientOptions o;
  o.timeout = std::chrono::milliseconds(10);
  o.max_retransmits = 1;
  o.hard = true;
  auto c = Connect(s.port(), o);
  std::atomic<bool> interrupted{false};
  auto call = std::async(std::launch::async, [&] {
    InterruptScope scope([](void* flag) { return static_cast<std::atomic<bool>*>(flag)->load(); },
                         &interrupted);
    return Getattr(*c);
  });
  ASSERT_TRUE(WaitFor([&] { return c->counters().not_responding.load() == 1; }));
  interrupted = true;
  auto r = call.get();
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, EINTR);
  EXPECT_EQ(c->in_flight(), 0u) << "the cancelled call is no longer retransmitted";
}

}  // namespace
}  // namespace nfsx::client
