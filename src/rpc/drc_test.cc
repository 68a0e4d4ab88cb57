#include "rpc/drc.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <thread>

namespace nfsx::rpc {
namespace {

using Lookup = DuplicateRequestCache::Lookup;

DuplicateRequestCache::Key K(uint32_t xid, uint32_t proc = 0) {
  DuplicateRequestCache::Key k;
  k.client[0] = std::byte{1};
  k.xid = xid;
  k.proc = proc;
  return k;
}

// A cache with one shard and a clock the test moves.
struct TestCache {
  int64_t now = 0;
  DuplicateRequestCache drc;
  TestCache(size_t namespace_bytes, size_t write_bytes, std::chrono::seconds window)
      : drc(DrcOptions{window, namespace_bytes, write_bytes, 1, [this] { return now; }}) {}

  void Add(uint32_t xid, DrcClass cls, size_t reply_bytes = 100) {
    std::vector<std::byte> reply;
    ASSERT_EQ(drc.Begin(K(xid), cls, &reply), Lookup::kNew) << xid;
    drc.Finish(K(xid), std::vector<std::byte>(reply_bytes, std::byte(xid)));
  }
  bool Has(uint32_t xid, DrcClass cls) {
    std::vector<std::byte> reply;
    Lookup l = drc.Begin(K(xid), cls, &reply);
    if (l == Lookup::kNew) drc.Abandon(K(xid));
    return l == Lookup::kDone;
  }
};

constexpr size_t kCost = DuplicateRequestCache::kEntryOverhead + 100;

TEST(DrcTest, OriginalReplyComesBack) {
  TestCache c(1 << 20, 1 << 20, std::chrono::seconds(300));
  c.Add(7, DrcClass::kNamespace);
  std::vector<std::byte> reply;
  EXPECT_EQ(c.drc.Begin(K(7), DrcClass::kNamespace, &reply), Lookup::kDone);
  EXPECT_EQ(reply, std::vector<std::byte>(100, std::byte(7)));
  EXPECT_EQ(c.drc.hits(), 1u);
}

TEST(DrcTest, BoundedInBytesPerClass) {
  TestCache c(10 * kCost, 4 * kCost, std::chrono::seconds(300));
  for (uint32_t x = 0; x < 1000; ++x) c.Add(x, DrcClass::kWrite);
  auto s = c.drc.stats();
  EXPECT_LE(s.bytes[1], 4 * kCost);
  EXPECT_EQ(s.entries, 4u);
  EXPECT_TRUE(c.Has(999, DrcClass::kWrite));
  EXPECT_FALSE(c.Has(0, DrcClass::kWrite));  // oldest out first
}

TEST(DrcTest, WriteRepliesNeverEvictNamespaceReplies) {
  TestCache c(10 * kCost, 4 * kCost, std::chrono::seconds(300));
  c.Add(1, DrcClass::kNamespace);
  for (uint32_t x = 100; x < 100100; ++x) c.Add(x, DrcClass::kWrite);
  EXPECT_TRUE(c.Has(1, DrcClass::kNamespace));
  EXPECT_EQ(c.drc.stats().early_evictions, 0u);
}

TEST(DrcTest, NamespaceRepliesExpireAfterTheWindowOnly) {
  TestCache c(10 * kCost, 4 * kCost, std::chrono::seconds(300));
  c.Add(1, DrcClass::kNamespace);
  c.now += 299'000'000'000;
  c.Add(2, DrcClass::kNamespace);
  EXPECT_TRUE(c.Has(1, DrcClass::kNamespace));
  c.now += 2'000'000'000;
  c.Add(3, DrcClass::kNamespace);  // past 1's window: it goes, 2 stays
  EXPECT_FALSE(c.Has(1, DrcClass::kNamespace));
  EXPECT_TRUE(c.Has(2, DrcClass::kNamespace));
  EXPECT_EQ(c.drc.stats().early_evictions, 0u);
}

TEST(DrcTest, AnExhaustedNamespaceBudgetEvictsTheOldestAndCountsIt) {
  TestCache c(3 * kCost, 4 * kCost, std::chrono::seconds(300));
  for (uint32_t x = 0; x < 5; ++x) c.Add(x, DrcClass::kNamespace);
  auto s = c.drc.stats();
  EXPECT_LE(s.bytes[0], 3 * kCost);
  EXPECT_EQ(s.early_evictions, 2u);
  EXPECT_TRUE(c.Has(2, DrcClass::kNamespace));
  EXPECT_FALSE(c.Has(1, DrcClass::kNamespace));  // (probing adds an entry: last)
}

// From the review: the oldest entry used to be evicted even while its call was
// still running, and a retransmission then ran the call a second time.
TEST(DrcTest, EntriesInProgressAreNeverEvicted) {
  TestCache c(3 * kCost, 4 * kCost, std::chrono::seconds(300));
  std::vector<std::byte> reply;
  ASSERT_EQ(c.drc.Begin(K(1000), DrcClass::kNamespace, &reply), Lookup::kNew);  // still running
  for (uint32_t x = 0; x < 20; ++x) c.Add(x, DrcClass::kNamespace);
  EXPECT_EQ(c.drc.Begin(K(1000), DrcClass::kNamespace, &reply), Lookup::kInProgress);
  c.now += 400'000'000'000;  // past the window too
  c.Add(50, DrcClass::kNamespace);
  EXPECT_EQ(c.drc.Begin(K(1000), DrcClass::kNamespace, &reply), Lookup::kInProgress);
  c.drc.Finish(K(1000), std::vector<std::byte>(100, std::byte{9}));
  EXPECT_EQ(c.drc.Begin(K(1000), DrcClass::kNamespace, &reply), Lookup::kDone);
  EXPECT_LE(c.drc.stats().bytes[0], 3 * kCost);
}

// From the review: the xid barely reached the shard index, so calls that
// differ only in their xid (a repeated `touch`) shared 4 of the 32 shards.
TEST(DrcTest, CallsThatDifferOnlyInTheirXidSpreadOverEveryShard) {
  constexpr uint32_t kCalls = 1600;
  DuplicateRequestCache drc(
      DrcOptions{std::chrono::seconds(300), 2 * kCalls * kCost, 1 << 20, 32, {}});
  for (uint32_t x = 0; x < kCalls; ++x) {
    std::vector<std::byte> reply;
    ASSERT_EQ(drc.Begin(K(0x1000 + x), DrcClass::kNamespace, &reply), Lookup::kNew);
    drc.Finish(K(0x1000 + x), std::vector<std::byte>(100, std::byte{1}));
  }
  EXPECT_EQ(drc.stats().early_evictions, 0u);
  EXPECT_EQ(drc.stats().entries, kCalls);
}

TEST(DrcTest, RetransmissionWhileInProgressIsDropped) {
  TestCache c(1 << 20, 1 << 20, std::chrono::seconds(300));
  std::vector<std::byte> reply;
  ASSERT_EQ(c.drc.Begin(K(1), DrcClass::kNamespace, &reply), Lookup::kNew);
  EXPECT_EQ(c.drc.Begin(K(1), DrcClass::kNamespace, &reply), Lookup::kInProgress);
}

TEST(DrcTest, ChecksumDistinguishesReusedXid) {
  CallHeader h;
  h.xid = 5;
  Peer p;
  p.host = "x";
  std::vector<std::byte> a(10, std::byte{1}), b(10, std::byte{2});
  EXPECT_FALSE(DuplicateRequestCache::MakeKey(h, p, a) == DuplicateRequestCache::MakeKey(h, p, b));
  EXPECT_TRUE(DuplicateRequestCache::MakeKey(h, p, a) == DuplicateRequestCache::MakeKey(h, p, a));
}

TEST(DrcTest, KeyIgnoresThePortButNotTheAddress) {
  CallHeader h;
  h.xid = 5;
  Peer a, b, other;
  auto set = [](Peer& p, const char* addr, uint16_t port) {
    auto* in = reinterpret_cast<sockaddr_in*>(&p.addr);
    in->sin_family = AF_INET;
    in->sin_port = htons(port);
    inet_pton(AF_INET, addr, &in->sin_addr);
  };
  set(a, "192.0.2.1", 700);
  set(b, "192.0.2.1", 801);
  set(other, "192.0.2.2", 700);
  std::vector<std::byte> args(10, std::byte{1});
  EXPECT_TRUE(DuplicateRequestCache::MakeKey(h, a, args) ==
              DuplicateRequestCache::MakeKey(h, b, args));
  EXPECT_FALSE(DuplicateRequestCache::MakeKey(h, a, args) ==
               DuplicateRequestCache::MakeKey(h, other, args));
}

TEST(DrcTest, AbandonForgetsInProgress) {
  TestCache c(1 << 20, 1 << 20, std::chrono::seconds(300));
  std::vector<std::byte> reply;
  c.drc.Begin(K(1), DrcClass::kNamespace, &reply);
  c.drc.Abandon(K(1));
  EXPECT_EQ(c.drc.Begin(K(1), DrcClass::kNamespace, &reply), Lookup::kNew);
  EXPECT_EQ(c.drc.stats().bytes[0], DuplicateRequestCache::kEntryOverhead);
}

// Many threads on a sharded cache: every thread finds its own replies, and the
// byte accounting comes back to zero-plus-what-is-left (TSan checks the locking).
TEST(DrcTest, ConcurrentCallersShareTheShards) {
  DuplicateRequestCache drc(DrcOptions{std::chrono::seconds(300), 8 << 20, 1 << 20, 8, {}});
  std::vector<std::thread> threads;
  std::atomic<int> misses{0};
  for (uint32_t t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (uint32_t i = 0; i < 5000; ++i) {
        auto key = K(t << 20 | i, t);
        std::vector<std::byte> reply;
        DrcClass cls = i % 4 == 0 ? DrcClass::kNamespace : DrcClass::kWrite;
        if (drc.Begin(key, cls, &reply) != Lookup::kNew) misses.fetch_add(1);
        drc.Finish(key, std::vector<std::byte>(64, std::byte(t)));
        if (i % 4 == 0 && drc.Begin(key, cls, &reply) != Lookup::kDone) misses.fetch_add(1);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(misses.load(), 0);
  auto s = drc.stats();
  EXPECT_LE(s.bytes[1], size_t{1} << 20);
  EXPECT_EQ(s.early_evictions, 0u);
}

}  // namespace
}  // namespace nfsx::rpc
