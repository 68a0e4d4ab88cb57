// The RPC transport end to end over loopback sockets: server and client.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <functional>
#include <latch>
#include <semaphore>
#include <set>
#include <thread>

#include "rpc/tcp_client.h"
#include "rpc/tcp_server.h"
#include "rpc/test_util.h"

namespace nfsx::rpc {
namespace {

constexpr uint32_t kProg = 400200, kVers = 1;
enum : uint32_t { kNull = 0, kEcho = 1, kSleep = 2 };

// The toy program's NULL and ECHO (procedures 0 and 1).
Program NullAndEcho() {
  Program p{"toy", kProg, kVers, {}, {}};
  p.procs.emplace_back("NULL", [](CallContext&, auto&, auto&) { return accept_stat::SUCCESS; });
  p.procs.emplace_back("ECHO", [](CallContext&, xdr::XdrDecoder& a, xdr::XdrEncoder& r) {
    auto bytes = a.OpaqueView(1u << 24);
    if (!a.ok()) return accept_stat::GARBAGE_ARGS;
    r.Bytes(bytes);
    return accept_stat::SUCCESS;
  });
  return p;
}

// An ECHO of `payload` that came back whole.
bool EchoedBack(const Result<RpcReply>& r, std::span<const std::byte> payload) {
  if (!r || !r->header.ok()) return false;
  xdr::XdrDecoder d(r->results);
  auto back = d.OpaqueView(1 << 24);
  return d.ok() && std::ranges::equal(back, payload);
}

// A raw socket connected to the loopback `port` (with a receive buffer of
// `rcvbuf` bytes if given), for what no well-behaved client would do.
int RawSocketTo(uint16_t port, int rcvbuf = 0) {
  return testing::RawLoopbackSocket(port, nullptr, rcvbuf);
}

class TcpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Program p = NullAndEcho();
    p.procs.emplace_back(
        "SLEEP",
        [this](CallContext&, xdr::XdrDecoder& a, xdr::XdrEncoder& r) {
          uint32_t ms = 0;
          a(ms);
          sleeps_started_.fetch_add(1);
          std::this_thread::sleep_for(std::chrono::milliseconds(ms));
          sleeps_done_.fetch_add(1);
          r(ms);
          return accept_stat::SUCCESS;
        },
        kProcMayBlock);
    dispatcher_.Register(std::move(p));
    TcpServerOptions o;
    o.max_record = 1 << 20;
    o.stall_timeout = std::chrono::seconds(1);
    server_ = std::make_unique<TcpServer>(dispatcher_, o);
    auto port = server_->Listen("127.0.0.1", 0);
    ASSERT_TRUE(port.has_value());
    port_ = *port;
    server_->Start();
  }

  // Waits (bounded) until a SLEEP call runs on the server.
  bool WaitForASleeper() {
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (sleeps_started_.load() == 0 && std::chrono::steady_clock::now() < until) {
      std::this_thread::yield();
    }
    return sleeps_started_.load() > 0;
  }
  std::atomic<int> sleeps_started_{0};
  std::atomic<int> sleeps_done_{0};

  std::unique_ptr<RpcClient> Client() {
    auto c = RpcClient::Connect("127.0.0.1", port_);
    EXPECT_TRUE(c.has_value());
    return c ? std::move(*c) : nullptr;
  }

  // A raw socket, for sending bytes no well-behaved client would send.
  int RawSocket() { return RawSocketTo(port_); }

  void ExpectServes() {
    auto c = Client();
    auto r = c->CallSync(kProg, kVers, kNull, {}, nullptr);
    ASSERT_TRUE(r.has_value());
    EXPECT_TRUE(r->header.ok());
  }

  Dispatcher dispatcher_;
  std::unique_ptr<TcpServer> server_;
  uint16_t port_ = 0;
};

TEST_F(TcpTest, ManyClientsManyCallsInFlight) {
  constexpr int kClients = 4, kCalls = 500;
  std::atomic<int> good{0};
  std::vector<std::thread> threads;
  for (int c = 0; c < kClients; ++c) {
    threads.emplace_back([&, c] {
      auto client = Client();
      std::latch done(kCalls);
      for (int i = 0; i < kCalls; ++i) {
        std::vector<std::byte> payload(1 + (i * 37) % 3000, std::byte(c * 16 + i % 16));
        client->Call(
            kProg, kVers, kEcho, {}, [&](xdr::XdrEncoder& e) { e.Bytes(payload); },
            [&, payload](Result<RpcReply> r) {
              if (EchoedBack(r, payload)) good.fetch_add(1);
              done.count_down();
            });
      }
      done.wait();
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(good.load(), kClients * kCalls);
}

TEST_F(TcpTest, RepliesComeBackInCompletionOrder) {
  auto client = Client();
  std::mutex mu;
  std::vector<uint32_t> order;
  std::latch done(2);
  auto record = [&](uint32_t tag) {
    return [&, tag](Result<RpcReply> r) {
      EXPECT_TRUE(r.has_value());
      std::lock_guard lock(mu);
      order.push_back(tag);
      done.count_down();
    };
  };
  client->Call(
      kProg, kVers, kSleep, {}, [](auto& e) { e(uint32_t{300}); }, record(1));
  client->Call(kProg, kVers, kNull, {}, nullptr, record(2));
  done.wait();
  EXPECT_EQ(order, (std::vector<uint32_t>{2, 1}));
}

TEST_F(TcpTest, OversizedRecordClosesOnlyThatConnection) {
  int fd = RawSocket();
  uint32_t mark = htonl(kLastFragment | (2u << 20));
  ASSERT_EQ(write(fd, &mark, 4), 4);
  char buf[16];
  EXPECT_EQ(read(fd, buf, sizeof(buf)), 0);  // server closed it
  close(fd);
  ExpectServes();
  EXPECT_EQ(server_->counters().closed_bad_record.load(), 1u);
}

// accept() out of descriptors (EMFILE) leaves the listening socket readable: a
// loop that just returns is woken again at once and spins, one core at 100 %, for
// as long as the table stays full. The listener pauses instead (counted), one
// tick at a time, and the connection that waited in the backlog is served once
// descriptors are free again.
TEST_F(TcpTest, OutOfDescriptorsAcceptPausesInsteadOfSpinning) {
#if defined(__SANITIZE_ADDRESS__)
  // The ASan build has UBSan, whose vptr check opens a pipe to see whether memory
  // is readable: with the descriptor table full (the point of this test) it cannot,
  // and it reports a valid object as having an invalid vptr. The plain and TSan
  // builds run this test.
  GTEST_SKIP() << "UBSan's vptr check needs free descriptors";
#endif
  rlimit old{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &old), 0);
  size_t open_now = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
    ++open_now;
  }
  rlimit low = old;
  low.rlim_cur = std::min<rlim_t>(old.rlim_cur, open_now + 64);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
  std::vector<int> filler;
  for (int fd; (fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0;) filler.push_back(fd);
  ASSERT_EQ(errno, EMFILE);
  ASSERT_FALSE(filler.empty());
  close(filler.back());  // one free descriptor: ours, for the client socket
  filler.pop_back();
  int waiting = RawSocket();  // sits in the backlog: the server has none left
  auto start = std::chrono::steady_clock::now();
  while (server_->counters().accept_pauses.load() == 0 &&
         std::chrono::steady_clock::now() < start + std::chrono::seconds(60)) {
    std::this_thread::yield();
  }
  ASSERT_GT(server_->counters().accept_pauses.load(), 0u) << "accept never failed";
  // Measuring a rate over time: a spinning loop fails accept() millions of times here.
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // Every loop accepts, so every loop pauses: at most once a second each.
  EXPECT_LE(server_->counters().accept_pauses.load(),
            (static_cast<uint64_t>(seconds) + 2) * static_cast<uint64_t>(server_->io_threads()))
      << "an accept loop spun on EMFILE";
  for (int fd : filler) close(fd);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &old), 0);
  // The next tick re-arms the listener: the waiting connection gets its reply.
  auto call = testing::CallBytes(7, kProg, kVers, kNull);
  std::byte mark[4];
  xdr::StoreBe32(mark, kLastFragment | static_cast<uint32_t>(call.size()));
  ASSERT_EQ(write(waiting, mark, 4), 4);
  ASSERT_EQ(write(waiting, call.data(), call.size()), static_cast<ssize_t>(call.size()));
  std::byte reply[64];
  ASSERT_GT(read(waiting, reply, sizeof(reply)), 8);
  EXPECT_EQ(xdr::LoadBe32(reply + 4), 7u);
  close(waiting);
  ExpectServes();
}

// By default there is one event loop per CPU the server may run on: its affinity,
// not the machine's count (a server under `taskset -c 0` gets one loop).
TEST(TcpServerThreads, OneEventLoopPerUsableCpuByDefault) {
  Dispatcher dispatcher;
  dispatcher.Register(NullAndEcho());
  cpu_set_t all, one;
  ASSERT_EQ(sched_getaffinity(0, sizeof(all), &all), 0);
  EXPECT_EQ(TcpServer(dispatcher, {}).io_threads(), CPU_COUNT(&all));
  CPU_ZERO(&one);
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &all)) {
      CPU_SET(cpu, &one);
      break;
    }
  }
  ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
  int loops = TcpServer(dispatcher, {}).io_threads();
  ASSERT_EQ(sched_setaffinity(0, sizeof(all), &all), 0);
  EXPECT_EQ(loops, 1);
  TcpServerOptions three;
  three.io_threads = 3;
  EXPECT_EQ(TcpServer(dispatcher, three).io_threads(), 3);
}

// Every loop accepts: while a call holds one loop (inline, as a cold READ could), a new
// client is still accepted, by another loop, and served there, whichever loop is held.
// (With accept on loop 0 alone, holding loop 0 held every new client in the backlog; with
// connections dealt round robin, every other new client went to the held loop.)
TEST(TcpServerThreads, EveryLoopAccepts) {
  constexpr uint32_t kHold = 2;
  std::atomic<int> holding{0};
  std::atomic<bool> release{false};
  Program p = NullAndEcho();
  p.procs.emplace_back("HOLD", [&](CallContext&, auto&, auto&) {  // inline: holds its loop
    holding.fetch_add(1);
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!release.load() && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return accept_stat::SUCCESS;
  });
  Dispatcher dispatcher;
  dispatcher.Register(std::move(p));
  TcpServerOptions o;
  o.io_threads = 2;
  TcpServer server(dispatcher, o);
  auto port = server.Listen("127.0.0.1", 0);
  ASSERT_TRUE(port.has_value());
  server.Start();
  // Connections are dealt round robin: the first two are on the two loops.
  std::vector<std::unique_ptr<RpcClient>> on_loop;
  for (int i = 0; i < 2; ++i) {
    auto c = RpcClient::Connect("127.0.0.1", *port);
    ASSERT_TRUE(c.has_value());
    on_loop.push_back(std::move(*c));
  }
  ASSERT_TRUE(testing::WaitFor([&] { return server.counters().accepted.load() == 2; }));
  for (size_t i = 0; i < on_loop.size(); ++i) {
    release = false;
    int before = holding.load();
    std::thread holder([&, i] { (void)on_loop[i]->CallSync(kProg, kVers, kHold, {}, nullptr); });
    EXPECT_TRUE(testing::WaitFor([&] { return holding.load() > before; }))
        << "the HOLD call never ran";  // not ASSERT: the holder must be released and joined
    // A new client's NULL call is answered while the loop stays held: accepted by the
    // other loop, and kept there rather than dealt to the held one.
    int fd = RawSocketTo(*port);
    auto call = testing::CallBytes(100 + static_cast<uint32_t>(i), kProg, kVers, kNull);
    std::byte mark[4];
    xdr::StoreBe32(mark, kLastFragment | static_cast<uint32_t>(call.size()));
    ASSERT_EQ(write(fd, mark, 4), 4);
    ASSERT_EQ(write(fd, call.data(), call.size()), static_cast<ssize_t>(call.size()));
    pollfd pfd{fd, POLLIN, 0};
    EXPECT_EQ(poll(&pfd, 1, 30000), 1)
        << "a new client was not served while the loop of connection " << i << " was held";
    EXPECT_EQ(holding.load(), before + 1);
    release = true;
    holder.join();
    close(fd);
  }
}

// Beyond max_connections a connection is closed at accept and counted; the ones
// open keep being served, and once one closes a new one is accepted again.
TEST(TcpLimitTest, ConnectionsBeyondTheLimitAreRefusedAndOthersServed) {
  Dispatcher dispatcher;
  dispatcher.Register(NullAndEcho());
  TcpServerOptions o;
  o.max_connections = 2;
  TcpServer server(dispatcher, o);
  auto port = server.Listen("127.0.0.1", 0);
  ASSERT_TRUE(port.has_value());
  server.Start();
  auto null_call = [&](RpcClient& c) {
    auto r = c.CallSync(kProg, kVers, kNull, {}, nullptr);
    return r.has_value() && r->header.ok();
  };
  auto a = RpcClient::Connect("127.0.0.1", *port);
  auto b = RpcClient::Connect("127.0.0.1", *port);
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(null_call(**a) && null_call(**b));  // both accepted and open
  int third = RawSocketTo(*port);
  char byte;
  EXPECT_EQ(read(third, &byte, 1), 0) << "the server closes the connection over the limit";
  close(third);
  EXPECT_EQ(server.counters().refused.load(), 1u);
  EXPECT_TRUE(null_call(**a)) << "the open ones keep being served";
  a->reset();
  testing::WaitFor([&] { return server.counters().open.load() <= 1; });
  ASSERT_EQ(server.counters().open.load(), 1u);
  auto c = RpcClient::Connect("127.0.0.1", *port);
  ASSERT_TRUE(c.has_value());
  EXPECT_TRUE(null_call(**c)) << "below the limit again, connections are accepted";
  server.Stop();
}

// A client that pipelines calls and never reads the replies: the server stops
// reading its calls once a little is queued, and after send_timeout without the
// client taking a byte it drops the connection, and with it the queued replies.
// Before, Idle() was false while replies were queued, so such a client held its
// queue (up to max_queued_reply_bytes, plus every record read before the check)
// for ever.
TEST(TcpLimitTest, AClientThatStopsReadingIsDropped) {
  Dispatcher dispatcher;
  dispatcher.Register(NullAndEcho());
  TcpServerOptions o;
  o.max_queued_reply_bytes = 1 << 20;
  o.send_timeout = std::chrono::seconds(1);
  TcpServer server(dispatcher, o);
  auto port = server.Listen("127.0.0.1", 0);
  ASSERT_TRUE(port.has_value());
  server.Start();
  int fd = RawSocketTo(*port, 64 << 10);  // a small receive buffer fills fast
  // ECHO calls of 64 KiB each, sent until the socket takes no more.
  std::vector<std::byte> payload(64 << 10, std::byte{0x5a});
  size_t sent_calls = 0;
  for (uint32_t xid = 1; xid < 4000; ++xid) {
    auto call = testing::CallBytes(xid, kProg, kVers, kEcho, {},
                                   [&](xdr::XdrEncoder& e) { e.Bytes(payload); });
    std::vector<std::byte> rec(4 + call.size());
    xdr::StoreBe32(rec.data(), kLastFragment | static_cast<uint32_t>(call.size()));
    std::memcpy(rec.data() + 4, call.data(), call.size());
    size_t off = 0;
    while (off < rec.size()) {
      ssize_t n = send(fd, rec.data() + off, rec.size() - off, MSG_DONTWAIT | MSG_NOSIGNAL);
      if (n > 0) {
        off += static_cast<size_t>(n);
        continue;
      }
      // Full for now: the server may still be reading. Two seconds without room
      // means it stopped (kernel buffers hold a few MiB of replies first).
      pollfd pfd{fd, POLLOUT, 0};
      if (n < 0 && errno == EAGAIN && poll(&pfd, 1, 2000) == 1) continue;
      break;
    }
    if (off < rec.size()) break;  // the server stopped reading us
    ++sent_calls;
  }
  EXPECT_GT(sent_calls, 16u) << "the server stopped reading before anything was queued";
  testing::WaitFor([&] { return server.counters().closed_not_reading.load() > 0; });
  EXPECT_EQ(server.counters().closed_not_reading.load(), 1u)
      << "the connection was kept; calls sent " << sent_calls << ", records "
      << server.counters().records.Load() << ", bytes out " << server.counters().bytes_out.Load();
  auto other = RpcClient::Connect("127.0.0.1", *port);
  ASSERT_TRUE(other.has_value());
  auto r = (*other)->CallSync(kProg, kVers, kNull, {}, nullptr);
  EXPECT_TRUE(r.has_value() && r->header.ok()) << "others are served meanwhile";
  close(fd);
  server.Stop();
}

constexpr size_t kBigReply = 256 << 10;
constexpr uint32_t kBigProc = 3;

// NULL, ECHO, SLEEP (does nothing) and BIG (a reply of kBigReply bytes).
Program NullEchoAndBig() {
  Program p = NullAndEcho();
  p.procs.emplace_back("SLEEP", [](CallContext&, auto&, auto&) { return accept_stat::SUCCESS; });
  p.procs.emplace_back("BIG", [](CallContext&, xdr::XdrDecoder&, xdr::XdrEncoder& r) {
    static const std::vector<std::byte> zeros(kBigReply);
    r.Bytes(zeros);
    return accept_stat::SUCCESS;
  });
  return p;
}

// Sends `calls` BIG calls on `fd` at once, without reading.
void PipelineBigCalls(int fd, uint32_t calls) {
  std::vector<std::byte> stream;
  for (uint32_t xid = 1; xid <= calls; ++xid) {
    auto call = testing::CallBytes(xid, kProg, kVers, kBigProc);
    std::byte mark[4];
    xdr::StoreBe32(mark, kLastFragment | static_cast<uint32_t>(call.size()));
    stream.insert(stream.end(), mark, mark + 4);
    stream.insert(stream.end(), call.begin(), call.end());
  }
  ASSERT_EQ(send(fd, stream.data(), stream.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(stream.size()));
}

// Waits until the server has run every call it will run without our reading: the
// record count stays the same for half a second. Returns it.
uint64_t RecordsOnceQuiet(const TcpServer& server) {
  uint64_t records = 0;
  for (int quiet = 0; quiet < 50;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    uint64_t now = server.counters().records.Load();
    quiet = now == records ? quiet + 1 : 0;
    records = now;
  }
  return records;
}

// The server gives a reply's bytes back to the budget after its write() returns, so a
// client may hold the reply before the count drops: wait for it (30 s at most).
size_t ReplyMemoryOnceDrained(const TcpServer& server) {
  testing::WaitFor([&] { return server.reply_memory() == 0; }, std::chrono::seconds(30));
  return server.reply_memory();
}

// Reads `calls` replies from `fd`; false (with a test failure) if it cannot.
void ReadReplies(int fd, uint32_t calls) {
  rpc::RecordReader reader(kBigReply + 4096);
  uint32_t replies = 0;
  while (replies < calls) {
    pollfd pfd{fd, POLLIN, 0};
    ASSERT_EQ(poll(&pfd, 1, 60000), 1) << "stuck after " << replies << " replies";
    auto space = reader.PrepareWrite();
    ssize_t n = read(fd, space.data(), space.size());
    ASSERT_GT(n, 0) << "closed after " << replies << " replies";
    reader.CommitWrite(static_cast<size_t>(n));
    std::span<std::byte> rec;
    while (reader.Next(&rec) == rpc::RecordReader::Status::kRecord) ++replies;
  }
  EXPECT_EQ(replies, calls);
}

// Small calls, big replies, a client that reads nothing for a while (the issue's
// pipelined 1 MiB READs): the cap on queued replies holds before each call is
// run, not after a batch of reads. Before, every record of up to 8 socket reads
// ran first: 400 calls of ~60 bytes queued 100 MiB here. The held calls still
// run, all of them, once the client reads.
TEST(TcpLimitTest, PipelinedCallsWithBigRepliesStayUnderTheReplyCap) {
  constexpr size_t kCap = 1 << 20;
  constexpr uint32_t kCalls = 400;
  Dispatcher dispatcher;
  dispatcher.Register(NullEchoAndBig());
  TcpServerOptions o;
  o.max_queued_reply_bytes = kCap;
  TcpServer server(dispatcher, o);
  auto port = server.Listen("127.0.0.1", 0);
  ASSERT_TRUE(port.has_value());
  server.Start();
  int fd = RawSocketTo(*port);
  PipelineBigCalls(fd, kCalls);
  EXPECT_LT(RecordsOnceQuiet(server), kCalls) << "every call ran although nobody read the replies";
  EXPECT_LE(server.counters().queued_reply_bytes_peak.load(), kCap + kBigReply + 4096)
      << "replies queued beyond the cap";
  ReadReplies(fd, kCalls);  // now every call gets its reply
  close(fd);
  server.Stop();
}

// A connection that received a large call keeps its buffer for the next one, but not
// once it has been quiet for a second: idle connections that each sent one 512 KiB
// WRITE once must not keep up to a megabyte each (4096 of them: 4 GiB) for as long as
// they stay connected. The connections stay open and keep being served.
TEST(TcpLimitTest, QuietConnectionsGiveTheirLargeReceiveBuffersBack) {
  constexpr int kClients = 8;
  Dispatcher dispatcher;
  dispatcher.Register(NullEchoAndBig());
  TcpServer server(dispatcher, TcpServerOptions{});
  auto port = server.Listen("127.0.0.1", 0);
  ASSERT_TRUE(port.has_value());
  server.Start();
  std::vector<std::unique_ptr<RpcClient>> clients;
  // Half a MiB: a buffer of up to 1 MiB + 64 KiB is kept after a call (larger ones are
  // freed at once).
  std::vector<std::byte> payload(512 << 10, std::byte{7});
  for (int i = 0; i < kClients; ++i) {
    auto c = RpcClient::Connect("127.0.0.1", *port);
    ASSERT_TRUE(c.has_value());
    auto r = (*c)->CallSync(kProg, kVers, kEcho, {}, [&](xdr::XdrEncoder& e) { e.Bytes(payload); });
    ASSERT_TRUE(r.has_value() && r->header.ok());
    clients.push_back(std::move(*c));
  }
  // Each kept its buffer of about 512 KiB past its call, for a second at least: with the
  // shrink disabled the wait below ends with 8 x ~460 KiB still counted.
  testing::WaitFor(
      [&] { return server.counters().receive_buffer_bytes.load() <= kClients * (64u << 10); });
  EXPECT_LE(server.counters().receive_buffer_bytes.load(), kClients * (64u << 10))
      << "quiet connections kept their large receive buffers";
  EXPECT_EQ(server.counters().open.load(), static_cast<uint64_t>(kClients));
  for (auto& c : clients) {
    auto r = c->CallSync(kProg, kVers, kEcho, {}, [&](xdr::XdrEncoder& e) { e.Bytes(payload); });
    ASSERT_TRUE(r.has_value() && r->header.ok()) << "a connection was not served after shrinking";
  }
  clients.clear();
  testing::WaitFor([&] { return server.counters().receive_buffer_bytes.load() == 0; });
  EXPECT_EQ(server.counters().receive_buffer_bytes.load(), 0u) << "closed connections still count";
  server.Stop();
}

// A client writing 1 MiB at a time (Linux's wsize) keeps its receive buffer from one call
// to the next: it was freed after every call (1 MiB and its headers were over the size
// kept), so every 1 MiB WRITE paid for a fresh buffer, its page faults and a copy.
TEST(TcpLimitTest, AConnectionKeepsItsBufferForTheNextOneMiBCall) {
  Dispatcher dispatcher;
  dispatcher.Register(NullEchoAndBig());
  TcpServer server(dispatcher, TcpServerOptions{});
  auto port = server.Listen("127.0.0.1", 0);
  ASSERT_TRUE(port.has_value());
  server.Start();
  auto c = RpcClient::Connect("127.0.0.1", *port);
  ASSERT_TRUE(c.has_value());
  std::vector<std::byte> payload(1 << 20, std::byte{7});
  for (int i = 0; i < 3; ++i) {
    auto r = (*c)->CallSync(kProg, kVers, kEcho, {}, [&](xdr::XdrEncoder& e) { e.Bytes(payload); });
    ASSERT_TRUE(r.has_value() && r->header.ok());
    // The server is done with the call above (and with keeping or freeing its buffer)
    // before it reads this one, which it answers after.
    auto null = (*c)->CallSync(kProg, kVers, kNull, {}, nullptr);
    ASSERT_TRUE(null.has_value() && null->header.ok());
    EXPECT_GE(server.counters().receive_buffer_bytes.load(), payload.size())
        << "call " << i << ": the buffer of a 1 MiB call was not kept for the next";
  }
  c->reset();
  server.Stop();
}

// Several connections, each under its own cap, together over the shared budget: the
// server holds their calls once the budget is spent (before, each queued up to its cap:
// 3 x 8 MiB here), a client that waits for each answer is still served, and once the
// hogs read, every held call runs and is answered.
TEST(TcpLimitTest, ConnectionsTogetherStayWithinTheReplyMemoryBudget) {
  constexpr size_t kBudget = 2 << 20;
  constexpr uint32_t kCalls = 64, kHogs = 3;
  Dispatcher dispatcher;
  dispatcher.Register(NullEchoAndBig());
  TcpServerOptions o;
  o.max_queued_reply_bytes = 8 << 20;
  o.max_reply_memory = kBudget;
  TcpServer server(dispatcher, o);
  auto port = server.Listen("127.0.0.1", 0);
  ASSERT_TRUE(port.has_value());
  server.Start();
  std::vector<int> hogs;
  for (uint32_t i = 0; i < kHogs; ++i) {
    hogs.push_back(RawSocketTo(*port, 64 << 10));
    PipelineBigCalls(hogs.back(), kCalls);
  }
  uint64_t records = RecordsOnceQuiet(server);
  EXPECT_LT(records, kHogs * kCalls) << "every call ran although nobody read the replies";
  // Each connection may run one call past a spent budget (its first, or one racing the
  // other I/O thread's).
  size_t bound = kBudget + (kHogs + static_cast<size_t>(server.io_threads())) * (kBigReply + 4096);
  EXPECT_LE(server.reply_memory_peak(), bound) << "records run: " << records;
  EXPECT_GT(server.counters().memory_holds.load(), 0u);

  auto polite = RpcClient::Connect("127.0.0.1", *port);
  ASSERT_TRUE(polite.has_value());
  for (int i = 0; i < 3; ++i) {
    auto r = (*polite)->CallSync(kProg, kVers, kBigProc, {}, nullptr);
    ASSERT_TRUE(r.has_value() && r->header.ok()) << "a client waiting for each reply is starved";
  }
  for (int fd : hogs) ReadReplies(fd, kCalls);
  polite->reset();
  EXPECT_EQ(ReplyMemoryOnceDrained(server), 0u)
      << "every reply went out, yet bytes are still counted";
  // Hogs that hang up with their replies unread give the budget back too.
  for (int fd : hogs) PipelineBigCalls(fd, kCalls);
  testing::WaitFor([&] { return server.reply_memory() > 0; }, std::chrono::seconds(30));
  ASSERT_GT(server.reply_memory(), 0u) << "the hogs' calls never ran: the rest tests nothing";
  for (int fd : hogs) close(fd);
  EXPECT_EQ(ReplyMemoryOnceDrained(server), 0u) << "closed connections still count";
  server.Stop();
}

// Connections that each send most of a large call and then only trickle the rest: each
// one the server reads holds a buffer of the whole call. Together they stay within the
// receive budget (before, 6 x 2 MiB here: 3x it), the ones left waiting are not
// blamed for not sending, and a client with a large call of its own gets in because a
// trickler holding the memory is closed once others wait for it (its bytes keep coming,
// so the stall timeout never would).
TEST(TcpLimitTest, ConnectionsReceivingCallsStayWithinTheReceiveMemoryBudget) {
  constexpr size_t kRecord = 2 << 20, kBudget = 2 * kRecord + (256 << 10);  // the least allowed
  constexpr int kHogs = 6;
  Dispatcher dispatcher;
  dispatcher.Register(NullAndEcho());
  TcpServerOptions o;
  o.max_record = kRecord;
  o.max_receive_memory = kBudget;
  o.stall_timeout = std::chrono::seconds(2);
  TcpServer server(dispatcher, o);
  auto port = server.Listen("127.0.0.1", 0);
  ASSERT_TRUE(port.has_value());
  server.Start();

  std::vector<int> hogs;
  std::vector<std::byte> part(kRecord * 3 / 4, std::byte{1});
  for (int i = 0; i < kHogs; ++i) {
    int fd = RawSocketTo(*port);
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    uint32_t mark = htonl(kLastFragment | static_cast<uint32_t>(kRecord - 64));
    ASSERT_EQ(send(fd, &mark, 4, MSG_NOSIGNAL), 4);
    // As much of it as the socket takes: a hog the server does not read stops early.
    for (size_t sent = 0; sent < part.size();) {
      ssize_t n = send(fd, part.data() + sent, part.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) break;
      sent += static_cast<size_t>(n);
    }
    hogs.push_back(fd);
  }
  // One byte of each call every 100 ms: progress, never the end of the call.
  std::atomic<bool> stop{false};
  std::thread trickle([&] {
    std::byte b{2};
    while (!stop.load()) {
      for (int fd : hogs) send(fd, &b, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  EXPECT_TRUE(testing::WaitFor([&] { return server.counters().receive_memory_holds.load() > 0; },
                               std::chrono::seconds(20)))
      << "no hog was ever held";

  RpcClientOptions co;
  co.timeout = std::chrono::seconds(60);
  co.max_retransmits = 0;
  auto polite = RpcClient::Connect("127.0.0.1", *port, co);
  ASSERT_TRUE(polite.has_value());
  std::vector<std::byte> payload(kRecord / 2, std::byte{9});
  auto r =
      (*polite)->CallSync(kProg, kVers, kEcho, {}, [&](xdr::XdrEncoder& e) { e.Bytes(payload); });
  EXPECT_TRUE(EchoedBack(r, payload)) << "a large call never got receive memory";
  EXPECT_GT(server.counters().closed_receive_memory.load(), 0u);
  stop.store(true);
  trickle.join();

  EXPECT_LE(server.receive_memory_peak(), kBudget);
  // Each connection's base of 64 KiB is outside the budget.
  EXPECT_LE(server.counters().receive_buffer_peak.load(), kBudget + (kHogs + 1) * (64u << 10))
      << "receive buffers beyond the budget";
  for (int fd : hogs) close(fd);
  polite->reset();
  testing::WaitFor([&] { return server.receive_memory() == 0; });
  EXPECT_EQ(server.receive_memory(), 0u) << "closed connections still hold receive memory";
  server.Stop();
}

TEST_F(TcpTest, GarbageRecordIsDroppedAndConnectionKeepsWorking) {
  int fd = RawSocket();
  // A record of 8 junk bytes, then a valid NULL call on the same connection.
  std::vector<std::byte> stream(12);
  xdr::StoreBe32(stream.data(), kLastFragment | 8);
  xdr::StoreBe32(stream.data() + 4, 0xabad1dea);
  xdr::StoreBe32(stream.data() + 8, 1);  // msg_type REPLY: not a call
  auto call = testing::CallBytes(42, kProg, kVers, kNull);
  std::byte mark[4];
  xdr::StoreBe32(mark, kLastFragment | static_cast<uint32_t>(call.size()));
  stream.insert(stream.end(), mark, mark + 4);
  stream.insert(stream.end(), call.begin(), call.end());
  ASSERT_EQ(write(fd, stream.data(), stream.size()), static_cast<ssize_t>(stream.size()));
  std::byte reply[64];
  ssize_t n = read(fd, reply, sizeof(reply));
  ASSERT_GT(n, 8);
  EXPECT_EQ(xdr::LoadBe32(reply + 4), 42u);  // the xid of the valid call
  close(fd);
}

TEST_F(TcpTest, StalledHalfRecordIsClosedWhileOthersAreServed) {
  int fd = RawSocket();
  uint32_t mark = htonl(kLastFragment | 100);
  ASSERT_EQ(write(fd, &mark, 4), 4);
  ASSERT_EQ(write(fd, "half", 4), 4);
  ExpectServes();
  timeval tv{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  char buf[16];
  EXPECT_EQ(read(fd, buf, sizeof(buf)), 0);  // closed after the stall timeout
  close(fd);
}

TEST_F(TcpTest, ClientFailsCallsWhenServerGoesAwayWithoutReconnect) {
  RpcClientOptions o;
  o.reconnect = false;
  auto c = RpcClient::Connect("127.0.0.1", port_, o);
  ASSERT_TRUE(c.has_value());
  std::latch done(1);
  int err = 0;
  (*c)->Call(
      kProg, kVers, kSleep, {}, [](auto& e) { e(uint32_t{2000}); },
      [&](Result<RpcReply> r) {
        err = r ? 0 : r.error().code;
        done.count_down();
      });
  // Only once the call runs does Stop() owe it an answer; under load it may not have
  // arrived yet after any fixed delay.
  ASSERT_TRUE(WaitForASleeper());
  server_->Stop();  // waits for the sleeping call and answers it
  done.wait();
  EXPECT_EQ(err, 0);
}

// #11: a synchronous call with nothing else in flight is received by the thread
// that made it, with no handoff from the reader thread, replies that span many
// reads included.
TEST_F(TcpTest, ALoneSynchronousCallIsReceivedByItsCaller) {
  auto client = Client();
  constexpr int kCalls = 300;
  for (int i = 0; i < kCalls; ++i) {
    size_t size = i == 7 ? 900 * 1024 : 1 + i * 97 % 5000;
    std::vector<std::byte> payload(size, std::byte(i));
    auto r = client->CallSync(kProg, kVers, kEcho, {}, [&](auto& e) { e.Bytes(payload); });
    ASSERT_TRUE(EchoedBack(r, payload)) << "call " << i;
    EXPECT_EQ(client->counters().replies_to_callers.load(), uint64_t(i + 1)) << "call " << i;
  }
  EXPECT_EQ(client->counters().replies_to_callers.load(), uint64_t{kCalls});
}

// Synchronous callers take turns receiving while bursts of asynchronous calls
// come and go on the same connection: every call gets its own reply, and the
// asynchronous callbacks still run on the reader thread, never on a caller.
TEST_F(TcpTest, SynchronousCallsRacingAsynchronousOnesOnOneConnection) {
  auto client = Client();
  constexpr int kSyncThreads = 3, kSyncCalls = 400, kAsyncThreads = 2, kBursts = 300;
  std::mutex ids_mu;
  std::set<std::thread::id> sync_ids;
  std::latch ids_known(kSyncThreads);
  std::atomic<int> sync_good{0}, async_good{0}, async_sent{0}, async_on_a_caller{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kSyncThreads; ++t) {
    threads.emplace_back([&, t] {
      {
        std::lock_guard lock(ids_mu);
        sync_ids.insert(std::this_thread::get_id());
      }
      ids_known.count_down();
      ids_known.wait();
      for (int i = 0; i < kSyncCalls; ++i) {
        std::vector<std::byte> payload(1 + (i * 131 + t * 17) % 3000, std::byte(t * 64 + i % 64));
        if (EchoedBack(
                client->CallSync(kProg, kVers, kEcho, {}, [&](auto& e) { e.Bytes(payload); }),
                payload)) {
          sync_good.fetch_add(1);
        }
      }
    });
  }
  for (int t = 0; t < kAsyncThreads; ++t) {
    threads.emplace_back([&, t] {
      ids_known.wait();
      for (int b = 0; b < kBursts; ++b) {
        // Bursts of 1 to 8, each waited for: between them nothing of this thread
        // is in flight, so a synchronous caller may be the receiver when the next starts.
        int n = 1 + (b * 7 + t) % 8;
        std::counting_semaphore<8> answered(0);
        for (int i = 0; i < n; ++i) {
          async_sent.fetch_add(1);
          auto payload =
              std::make_shared<std::vector<std::byte>>(1 + (b * 31 + i) % 2000, std::byte(200 + t));
          client->Call(
              kProg, kVers, kEcho, {}, [&](auto& e) { e.Bytes(*payload); },
              [&, payload](Result<RpcReply> r) {
                bool on_caller;
                {
                  std::lock_guard lock(ids_mu);
                  on_caller = sync_ids.contains(std::this_thread::get_id());
                }
                if (on_caller) async_on_a_caller.fetch_add(1);
                if (EchoedBack(r, *payload)) async_good.fetch_add(1);
                answered.release();
              });
        }
        for (int i = 0; i < n; ++i) answered.acquire();
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(sync_good.load(), kSyncThreads * kSyncCalls);
  EXPECT_EQ(async_good.load(), async_sent.load());
  EXPECT_EQ(async_on_a_caller.load(), 0);
  EXPECT_EQ(client->in_flight(), 0u);
}

TEST_F(TcpTest, ShutdownEndsTheWaitOfACallerReceivingItsOwnReply) {
  auto client = Client();
  Result<RpcReply> r = Fail(EIO);
  std::thread caller(
      [&] { r = client->CallSync(kProg, kVers, kSleep, {}, [](auto& e) { e(uint32_t{3000}); }); });
  ASSERT_TRUE(WaitForASleeper());
  client->Shutdown();
  caller.join();
  // Not woken, the caller would have read the reply itself once the sleep ended.
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ESHUTDOWN);
}

// A soft call that times out while its caller is the receiver ends at its
// timeout (the reader thread fails it and wakes the caller), not when the
// server finally answers.
TEST_F(TcpTest, ACallTimingOutWhileItsCallerReceivesEndsAtItsTimeout) {
  RpcClientOptions o;
  o.timeout = std::chrono::milliseconds(100);
  o.max_retransmits = 0;
  auto c = RpcClient::Connect("127.0.0.1", port_, o);
  ASSERT_TRUE(c.has_value());
  auto r = (*c)->CallSync(kProg, kVers, kSleep, {}, [](auto& e) { e(uint32_t{5000}); });
  EXPECT_EQ(sleeps_done_.load(), 0);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, ETIMEDOUT);
}

}  // namespace
}  // namespace nfsx::rpc
