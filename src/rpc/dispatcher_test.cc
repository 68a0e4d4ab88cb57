#include "rpc/dispatcher.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>

#include <thread>
#include <vector>

#include "rpc/test_util.h"

namespace nfsx::rpc {
namespace {

using testing::CallBytes;

constexpr uint32_t kProg = 400100;

// A program with version 2 and 3; proc 1 adds two numbers, proc 2 is non-idempotent.
class DispatcherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (uint32_t v : {2u, 3u}) {
      Program p{"toy", kProg, v, {}, {}};
      p.procs.emplace_back("NULL", [](CallContext&, auto&, auto&) { return accept_stat::SUCCESS; });
      p.procs.emplace_back("ADD", [](CallContext&, xdr::XdrDecoder& a, xdr::XdrEncoder& r) {
        uint32_t x = 0, y = 0;
        a(x);
        a(y);
        if (!a.ok()) return accept_stat::GARBAGE_ARGS;
        r(x + y);
        return accept_stat::SUCCESS;
      });
      p.procs.emplace_back(
          "BUMP",
          [this](CallContext&, xdr::XdrDecoder&, xdr::XdrEncoder& r) {
            r(++bumps_);
            return accept_stat::SUCCESS;
          },
          kProcNonIdempotent);
      dispatcher_.Register(std::move(p));
    }
    peer_.host = "127.0.0.1";
  }

  // Runs one call through Accept+Run and decodes the reply header.
  ReplyHeader Roundtrip(const std::vector<std::byte>& call, std::vector<std::byte>* results,
                        Dispatcher::Route* route = nullptr) {
    Dispatcher::Call c;
    OutBuffer reply;
    auto r = dispatcher_.Accept(call, peer_, &c, &reply);
    if (route) *route = r;
    if (r == Dispatcher::Route::kRun) dispatcher_.Run(c, peer_, &reply);
    ReplyHeader h;
    if (r == Dispatcher::Route::kDrop) return h;
    auto flat = reply.Flatten();
    uint32_t mark = xdr::LoadBe32(flat.data());
    EXPECT_EQ(mark, kLastFragment | (flat.size() - 4));
    xdr::XdrDecoder d(std::span<const std::byte>(flat).subspan(4));
    EXPECT_TRUE(DecodeReplyHeader(d, &h));
    if (results)
      results->assign(d.position(), static_cast<const std::byte*>(flat.data() + flat.size()));
    return h;
  }

  Dispatcher dispatcher_;
  Peer peer_;
  uint32_t bumps_ = 0;
};

TEST_F(DispatcherTest, RunsAProcedure) {
  std::vector<std::byte> results;
  auto h = Roundtrip(CallBytes(1, kProg, 3, 1, {},
                               [](auto& e) {
                                 e(uint32_t{40});
                                 e(uint32_t{2});
                               }),
                     &results);
  EXPECT_TRUE(h.ok());
  ASSERT_EQ(results.size(), 4u);
  EXPECT_EQ(xdr::LoadBe32(results.data()), 42u);
}

TEST_F(DispatcherTest, UnknownProgramVersionProcedure) {
  EXPECT_EQ(Roundtrip(CallBytes(1, 12345, 3, 0), nullptr).accepted, accept_stat::PROG_UNAVAIL);
  auto h = Roundtrip(CallBytes(2, kProg, 4, 0), nullptr);
  EXPECT_EQ(h.accepted, accept_stat::PROG_MISMATCH);
  EXPECT_EQ(h.mismatch_low, 2u);
  EXPECT_EQ(h.mismatch_high, 3u);
  EXPECT_EQ(Roundtrip(CallBytes(3, kProg, 3, 9), nullptr).accepted, accept_stat::PROC_UNAVAIL);
}

TEST_F(DispatcherTest, GarbageArgumentsDiscardPartialResults) {
  std::vector<std::byte> results;
  auto h = Roundtrip(CallBytes(4, kProg, 3, 1, {}, [](auto& e) { e(uint32_t{1}); }), &results);
  EXPECT_EQ(h.accepted, accept_stat::GARBAGE_ARGS);
  EXPECT_TRUE(results.empty());
  EXPECT_EQ(dispatcher_.garbage_calls(), 1u);
}

TEST_F(DispatcherTest, BadCredentialAndRpcVersionAreDenied) {
  auto bytes = CallBytes(5, kProg, 3, 0);
  xdr::StoreBe32(bytes.data() + 24, 6);
  auto h = Roundtrip(bytes, nullptr);
  EXPECT_EQ(h.stat, reply_stat::MSG_DENIED);
  EXPECT_EQ(h.rejected, reject_stat::AUTH_ERROR);
  EXPECT_EQ(h.auth, auth_stat::AUTH_BADCRED);

  bytes = CallBytes(6, kProg, 3, 0);
  xdr::StoreBe32(bytes.data() + 8, 1);
  h = Roundtrip(bytes, nullptr);
  EXPECT_EQ(h.stat, reply_stat::MSG_DENIED);
  EXPECT_EQ(h.rejected, reject_stat::RPC_MISMATCH);
  EXPECT_EQ(h.mismatch_low, 2u);
}

TEST_F(DispatcherTest, RepliesAreDroppedForNonCalls) {
  OutBuffer out;
  xdr::XdrEncoder e(&out);
  EncodeAcceptedReply(e, 7, accept_stat::SUCCESS);
  Dispatcher::Route route;
  Roundtrip(out.Flatten(), nullptr, &route);
  EXPECT_EQ(route, Dispatcher::Route::kDrop);
}

TEST_F(DispatcherTest, RetransmittedNonIdempotentCallGetsTheOriginalReply) {
  auto call = CallBytes(77, kProg, 3, 2);
  std::vector<std::byte> first, second;
  Roundtrip(call, &first);
  Dispatcher::Route route;
  peer_.port = 999;  // a reconnect comes from a new port
  Roundtrip(call, &second, &route);
  EXPECT_EQ(route, Dispatcher::Route::kReply);
  EXPECT_EQ(first, second);
  EXPECT_EQ(bumps_, 1u);
  // A new xid runs again.
  Roundtrip(CallBytes(78, kProg, 3, 2), &second);
  EXPECT_EQ(bumps_, 2u);
  // The same xid from another address is a different call.
  peer_.host = "127.0.0.2";
  reinterpret_cast<sockaddr_in*>(&peer_.addr)->sin_family = AF_INET;
  reinterpret_cast<sockaddr_in*>(&peer_.addr)->sin_addr.s_addr = htonl(0x7f000002);
  Roundtrip(call, &second);
  EXPECT_EQ(bumps_, 3u);
}

TEST_F(DispatcherTest, InProgressRetransmissionIsDropped) {
  auto call = CallBytes(90, kProg, 3, 2);
  Dispatcher::Call c1, c2;
  OutBuffer r1, r2;
  ASSERT_EQ(dispatcher_.Accept(call, peer_, &c1, &r1), Dispatcher::Route::kRun);
  EXPECT_EQ(dispatcher_.Accept(call, peer_, &c2, &r2), Dispatcher::Route::kDrop);
  dispatcher_.Run(c1, peer_, &r1);
  EXPECT_EQ(dispatcher_.Accept(call, peer_, &c2, &r2), Dispatcher::Route::kReply);
}

TEST_F(DispatcherTest, StatsCountCalls) {
  for (int i = 0; i < 3; ++i) Roundtrip(CallBytes(100 + i, kProg, 3, 0), nullptr);
  EXPECT_EQ(dispatcher_.programs()[1].procs[0].stats.Calls(), 3u);
}

// Threads record into shards of their own; what is read is the whole: the count, the
// total, the largest call of any thread and the percentiles over all calls.
TEST(ProcStatsTest, ShardsSumToTheWhole) {
  ProcStats stats;
  constexpr int kThreads = 20;  // more than kCounterShards: some share a shard
  constexpr int kCalls = 5000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&stats, t] {
      // 9 in 10 calls take 3 us; thread t's one slow call takes (t + 1) ms.
      for (int i = 0; i < kCalls; ++i) {
        stats.Record(i == kCalls / 2 ? uint64_t(t + 1) * 1000000 : (i % 10 ? 3000 : 100000));
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(stats.Calls(), uint64_t{kThreads} * kCalls);
  uint64_t total = 0;
  for (int t = 0; t < kThreads; ++t) {
    for (int i = 0; i < kCalls; ++i) {
      total += i == kCalls / 2 ? uint64_t(t + 1) * 1000000 : (i % 10 ? 3000 : 100000);
    }
  }
  EXPECT_EQ(stats.TotalNs(), total);
  EXPECT_EQ(stats.MaxNs(), uint64_t{kThreads} * 1000000) << "the slowest thread's call";
  EXPECT_EQ(stats.PercentileMicros(0.5), 4u) << "3 us is under 4";
  EXPECT_EQ(stats.PercentileMicros(0.95), 128u) << "100 us is under 128";
}

}  // namespace
}  // namespace nfsx::rpc
