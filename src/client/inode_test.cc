// The attribute cache timer of an Inode: how long attributes from a reply count
// as fresh, and what a reply may not do to them.
#include "client/inode.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace nfsx::client {
namespace {

constexpr int64_t kSecond = 1'000'000'000;

class InodeTimerTest : public ::testing::Test {
 protected:
  static nfs3::fattr3 Attr() {
    nfs3::fattr3 a{};
    a.type = nfs3::NF3REG;
    a.fileid = 7;
    return a;
  }
  CacheBudget budget_{1 << 20};
  Inode ino_{nfs3::nfs_fh3{}, Attr(), &budget_};
};

// The reply shows the file as it was some time after its call was sent, so the
// timeout runs from the sending: a reply that took longer than the timeout to
// arrive is stale on arrival. Before, the timer ran from the arrival, and with
// noac a GETATTR reply landing just after a read began let that read skip its
// revalidation (ReadPathTest.InvalidationsRacing... saw old pages).
TEST_F(InodeTimerTest, AttributesAreFreshForTheTimeoutCountedFromTheSending) {
  int64_t now = SteadyNowNs();
  ino_.RefreshTimer(false, 1, 1, now - 2 * kSecond);
  EXPECT_FALSE(ino_.AttrFresh(now));
  ino_.RefreshTimer(false, 1, 1, now);
  EXPECT_TRUE(ino_.AttrFresh(now + kSecond / 2));
  EXPECT_FALSE(ino_.AttrFresh(now + kSecond));
}

// With noac (timeout 0) attributes are fresh only for reads that began before
// their call was sent.
TEST_F(InodeTimerTest, WithNoTimeoutOnlyEarlierReadsCountAttributesAsFresh) {
  int64_t sent = SteadyNowNs();
  ino_.RefreshTimer(false, 0, 0, sent);
  EXPECT_TRUE(ino_.AttrFresh(sent - 1));
  EXPECT_FALSE(ino_.AttrFresh(sent));
}

TEST_F(InodeTimerTest, AnOlderCallsReplyDoesNotShortenANewerOnesLease) {
  int64_t now = SteadyNowNs();
  ino_.RefreshTimer(false, 10, 10, now);
  ino_.RefreshTimer(false, 10, 10, now - 9 * kSecond);  // arrived late
  EXPECT_TRUE(ino_.AttrFresh(now + 5 * kSecond));
  // Unless it showed a change: then the file is moving, and the shorter lease is right.
  ino_.RefreshTimer(true, 1, 10, now - kSecond / 2);
  EXPECT_FALSE(ino_.AttrFresh(now + kSecond));
}

// ExpireAttr (a rename or remove made the attributes stale): a reply to a call
// sent before it may predate the change and must not make them fresh again.
TEST_F(InodeTimerTest, RepliesToCallsSentBeforeAnExpiryCannotRefreshIt) {
  int64_t sent = SteadyNowNs();
  ino_.RefreshTimer(false, 10, 10, sent);
  ASSERT_TRUE(ino_.AttrFresh(sent + kSecond));
  ino_.ExpireAttr();
  EXPECT_FALSE(ino_.AttrFresh(sent + kSecond));
  ino_.RefreshTimer(false, 10, 10, sent);  // the reply to a call sent before
  EXPECT_FALSE(ino_.AttrFresh(sent + kSecond));
  int64_t later = SteadyNowNs() + 1;  // a call sent after the expiry
  ino_.RefreshTimer(false, 10, 10, later);
  EXPECT_TRUE(ino_.AttrFresh(later + kSecond));
}

// From the review: B (sent later) shows a change; A (sent earlier, its reply
// arriving after B's) shows the older state, which the tracker ignores, so it is
// "unchanged": it must neither extend B's lease nor double the timeout.
TEST_F(InodeTimerTest, AnOlderCallsReplyAfterAChangeDoesNotExtendTheLease) {
  int64_t t = SteadyNowNs();
  ino_.RefreshTimer(false, 3, 60, t - 100 * kSecond);
  ino_.RefreshTimer(true, 3, 60, t + kSecond);  // B: lease until t + 4 s
  ino_.RefreshTimer(false, 3, 60, t);           // A
  EXPECT_FALSE(ino_.AttrFresh(t + 5 * kSecond)) << "a stale reply extended the lease";
}

TEST_F(InodeTimerTest, DiscardedRepliesDoNotGrowTheTimeout) {
  int64_t old_sent = SteadyNowNs();
  ino_.RefreshTimer(true, 1, 64, old_sent);  // timeout 1 s
  ino_.ExpireAttr();
  for (int i = 0; i < 5; ++i) ino_.RefreshTimer(false, 1, 64, old_sent);  // all discarded
  int64_t sent = SteadyNowNs() + 1;
  ino_.RefreshTimer(false, 1, 64, sent);  // the first accepted unchanged reply: 2 s
  EXPECT_TRUE(ino_.AttrFresh(sent + kSecond));
  EXPECT_FALSE(ino_.AttrFresh(sent + 3 * kSecond)) << "discarded replies grew the timeout";
}

// ExpireAttr (a FUSE rename, no inode lock held) racing the reply to a call sent
// before it (under the lock): the reply must never win. Before ExpireAttr took the
// lock, the reply could check the expiry time, lose the CPU, and store its lease
// after the expiry (the review's probe: 196 of 200,000).
TEST_F(InodeTimerTest, ExpireAttrRacingAnOlderReplyAlwaysWins) {
  std::atomic<int> go{0}, done{0};
  std::atomic<int64_t> sent{0};
  constexpr int kRounds = 20000;
  std::thread reply([&] {
    for (int i = 1; i <= kRounds; ++i) {
      while (go.load(std::memory_order_acquire) != i) std::this_thread::yield();
      std::lock_guard lock(ino_.mu);
      ino_.RefreshTimer(false, 10, 10, sent.load());
      done.fetch_add(1);
    }
  });
  int fresh = 0;
  for (int i = 1; i <= kRounds; ++i) {
    sent.store(SteadyNowNs());  // a call sent now...
    go.store(i, std::memory_order_release);
    ino_.ExpireAttr();  // ...then the rename that makes its answer stale
    while (done.load() != i) std::this_thread::yield();
    fresh += ino_.AttrFresh(SteadyNowNs());
  }
  reply.join();
  EXPECT_EQ(fresh, 0) << "replies to calls sent before ExpireAttr refreshed the attributes";
}

// Bytes written UNSTABLE and not yet committed are laid over what a READ returns: a
// server that restarted answers with what it lost them to (the crash loop saw a mount
// read 0xDB where it had written, before its next COMMIT resent the data).
TEST_F(InodeTimerTest, UnstableBytesOverlayWhatAReadReturns) {
  auto buf = [](size_t n, uint8_t v) {
    std::vector<std::byte> bytes(n, std::byte{v});
    return std::make_shared<const PooledBytes>(std::span<const std::byte>(bytes));
  };
  {
    std::lock_guard lock(ino_.wb_mu);
    ino_.AddUnstable(100, {buf(50, 0xAA), 0, 50, {}});
    ino_.AddUnstable(200, {buf(64, 0xBB), 10, 20, {}});  // bytes 10..29 of its buffer
  }
  std::vector<std::byte> server(1000, std::byte{0xDB});  // as a restarted server has them
  auto span = [&](uint64_t offset, size_t n) {
    return std::span<const std::byte>(server).subspan(offset, n);
  };
  EXPECT_FALSE(ino_.WithUnstable(0, span(0, 100)));
  EXPECT_TRUE(ino_.WithUnstable(0, span(0, 101)));
  EXPECT_TRUE(ino_.WithUnstable(149, span(149, 10)));
  EXPECT_FALSE(ino_.WithUnstable(150, span(150, 50)));
  EXPECT_TRUE(ino_.WithUnstable(219, span(219, 1)));
  EXPECT_FALSE(ino_.WithUnstable(220, span(220, 780)));

  auto read = ino_.WithUnstable(90, span(90, 200));  // bytes 90..289
  ASSERT_TRUE(read);
  ASSERT_EQ(read->size(), 200u);
  for (size_t i = 0; i < read->size(); ++i) {
    uint64_t at = 90 + i;
    std::byte want{0xDB};
    if (at >= 100 && at < 150) want = std::byte{0xAA};
    if (at >= 200 && at < 220) want = std::byte{0xBB};
    ASSERT_EQ((*read)[i], want) << "at " << at;
  }
  EXPECT_EQ(server, std::vector<std::byte>(1000, std::byte{0xDB}))
      << "the READ's bytes were changed";
}

}  // namespace
}  // namespace nfsx::client
