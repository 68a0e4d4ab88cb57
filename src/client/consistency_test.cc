// Scripted reply orders, including the sequences logged in seed 000.
#include "client/consistency.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

namespace nfsx::client {
namespace {

using nfs3::fattr3;
using nfs3::wcc_attr;
using Kind = ConsistencyTracker::Kind;
using Verdict = ConsistencyTracker::Verdict;

// A file state: size and a ctime/mtime in nanoseconds.
fattr3 State(uint64_t size, uint32_t t) {
  fattr3 f;
  f.size = size;
  f.mtime = f.ctime = {1000, t};
  return f;
}
wcc_attr Wcc(const fattr3& f) { return {f.size, f.mtime, f.ctime}; }

class TrackerTest : public ::testing::Test {
 protected:
  void SetUp() override { t_.Reset(State(0, 0)); }
  Verdict Modify(const ConsistencyTracker::Token& tok, const fattr3& pre, const fattr3& post) {
    return t_.End(tok, Wcc(pre), post);
  }
  ConsistencyTracker t_;
};

TEST_F(TrackerTest, OutOfOrderWriteRepliesAreOurOwn) {
  // Seed 000: write 7635 and 7636 in flight; 7636's reply arrives first.
  auto w1 = t_.Begin(Kind::kModify), w2 = t_.Begin(Kind::kModify);
  EXPECT_EQ(Modify(w2, State(32768, 1), State(65536, 2)), Verdict::kConsistent);
  EXPECT_EQ(Modify(w1, State(0, 0), State(32768, 1)), Verdict::kConsistent);
  EXPECT_EQ(t_.attr().size, 65536u);
  EXPECT_EQ(t_.attr().ctime.nseconds, 2u);
  EXPECT_EQ(t_.foreign_changes(), 0u);
}

TEST_F(TrackerTest, LaterReplyNeverMovesAttributesBackwards) {
  auto w1 = t_.Begin(Kind::kModify), w2 = t_.Begin(Kind::kModify);
  Modify(w2, State(10, 1), State(20, 2));
  Modify(w1, State(0, 0), State(10, 1));  // older post-op attributes arrive last
  EXPECT_EQ(t_.attr().ctime.nseconds, 2u);
  EXPECT_EQ(t_.attr().size, 20u);
}

TEST_F(TrackerTest, GetattrOverlappingOurWriteIsNotAForeignChange) {
  // Seed 000: a GETATTR overlapping a WRITE sees a later mtime than the last reply.
  auto w1 = t_.Begin(Kind::kModify);
  auto g = t_.Begin(Kind::kObserve);
  EXPECT_EQ(t_.End(g, std::nullopt, State(4096, 1)), Verdict::kConsistent);
  EXPECT_EQ(Modify(w1, State(0, 0), State(4096, 1)), Verdict::kConsistent);
}

TEST_F(TrackerTest, GetattrSentQuietButAnsweredDuringAWindow) {
  auto g = t_.Begin(Kind::kObserve);  // nothing in flight yet
  auto w = t_.Begin(Kind::kModify);
  EXPECT_EQ(t_.End(g, std::nullopt, State(1, 1)), Verdict::kConsistent);  // saw our write
  EXPECT_EQ(Modify(w, State(0, 0), State(1, 1)), Verdict::kConsistent);
}

TEST_F(TrackerTest, GetattrAnsweredAfterAWindowSettledIsNotJudged) {
  auto g = t_.Begin(Kind::kObserve);
  auto w = t_.Begin(Kind::kModify);
  Modify(w, State(0, 0), State(1, 1));
  // The GETATTR saw the state before the write: old, but ours to ignore.
  EXPECT_EQ(t_.End(g, std::nullopt, State(0, 0)), Verdict::kConsistent);
  EXPECT_EQ(t_.attr().ctime.nseconds, 1u);
}

TEST_F(TrackerTest, CommitChangesNothing) {
  auto w = t_.Begin(Kind::kModify);
  Modify(w, State(0, 0), State(8, 1));
  auto c = t_.Begin(Kind::kModify);
  EXPECT_EQ(Modify(c, State(8, 1), State(8, 1)), Verdict::kConsistent);
}

TEST_F(TrackerTest, ThirdPartyWriteBetweenOursIsDetected) {
  // W1: S0 -> S1; somebody else: S1 -> X; W2: X -> S2.
  auto w1 = t_.Begin(Kind::kModify), w2 = t_.Begin(Kind::kModify);
  EXPECT_EQ(Modify(w2, State(50, 5), State(60, 6)), Verdict::kConsistent);  // not settled yet
  EXPECT_EQ(Modify(w1, State(0, 0), State(10, 1)), Verdict::kForeignChange);
  EXPECT_EQ(t_.foreign_changes(), 1u);
}

TEST_F(TrackerTest, ThirdPartyWriteBeforeOurWindowIsDetected) {
  auto w = t_.Begin(Kind::kModify);
  EXPECT_EQ(Modify(w, State(100, 7), State(110, 8)), Verdict::kForeignChange);
}

TEST_F(TrackerTest, ThirdPartyStateSeenByAnOverlappingGetattrIsDetected) {
  auto w = t_.Begin(Kind::kModify);
  auto g = t_.Begin(Kind::kObserve);
  t_.End(g, std::nullopt, State(999, 9));
  EXPECT_EQ(Modify(w, State(0, 0), State(10, 1)), Verdict::kForeignChange);
}

TEST_F(TrackerTest, QuietGetattrMustMatchExactly) {
  auto g1 = t_.Begin(Kind::kObserve);
  EXPECT_EQ(t_.End(g1, std::nullopt, State(0, 0)), Verdict::kConsistent);
  auto g2 = t_.Begin(Kind::kObserve);
  EXPECT_EQ(t_.End(g2, std::nullopt, State(5, 3)), Verdict::kForeignChange);
  auto g3 = t_.Begin(Kind::kObserve);  // the new state is now the known one
  EXPECT_EQ(t_.End(g3, std::nullopt, State(5, 3)), Verdict::kConsistent);
}

TEST_F(TrackerTest, ServerWithoutPreOpAttrsNeverSelfInvalidates) {
  // NFS-Ganesha: WRITE replies carry post-op attributes only, sampled by a separate
  // getattr that may already include later writes.
  std::vector<ConsistencyTracker::Token> tokens;
  for (int i = 0; i < 8; ++i) tokens.push_back(t_.Begin(Kind::kModify));
  std::vector<int> order{3, 0, 7, 1, 6, 2, 5, 4};
  for (int i : order) {
    uint32_t seen = static_cast<uint32_t>(std::min(i + 2, 8));  // sampled late
    EXPECT_EQ(t_.End(tokens[i], std::nullopt, State(seen * 10, seen)), Verdict::kConsistent);
  }
  auto g = t_.Begin(Kind::kObserve);  // close-to-open revalidation afterwards
  EXPECT_EQ(t_.End(g, std::nullopt, State(80, 8)), Verdict::kConsistent);
  auto g2 = t_.Begin(Kind::kObserve);  // another client wrote: caught at open
  EXPECT_EQ(t_.End(g2, std::nullopt, State(90, 20)), Verdict::kForeignChange);
}

TEST_F(TrackerTest, MissingPostOpAttrsMakeTheNextQuietReplyTheBaseline) {
  auto w = t_.Begin(Kind::kModify);
  EXPECT_EQ(t_.End(w, Wcc(State(0, 0)), std::nullopt), Verdict::kConsistent);
  auto g = t_.Begin(Kind::kObserve);
  EXPECT_EQ(t_.End(g, std::nullopt, State(10, 1)), Verdict::kConsistent);
  auto g2 = t_.Begin(Kind::kObserve);
  EXPECT_EQ(t_.End(g2, std::nullopt, State(11, 2)), Verdict::kForeignChange);
}

TEST_F(TrackerTest, RandomReplyOrdersOfAChainAreAlwaysConsistent) {
  std::mt19937 rng(7);
  for (int round = 0; round < 200; ++round) {
    ConsistencyTracker t;
    t.Reset(State(0, 0));
    int n = 2 + static_cast<int>(rng() % 30);
    std::vector<ConsistencyTracker::Token> tokens;
    for (int i = 0; i < n; ++i) tokens.push_back(t.Begin(Kind::kModify));
    // Interleave some GETATTRs that see arbitrary states of the chain.
    std::vector<std::pair<ConsistencyTracker::Token, uint32_t>> gets;
    for (int i = 0; i < 5; ++i) gets.emplace_back(t.Begin(Kind::kObserve), rng() % (n + 1));
    std::vector<int> order(n);
    for (int i = 0; i < n; ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), rng);
    Verdict last = Verdict::kConsistent;
    for (auto& [g, s] : gets) ASSERT_EQ(t.End(g, std::nullopt, State(s, s)), Verdict::kConsistent);
    for (int i : order) {
      last = t.End(tokens[i], Wcc(State(i, static_cast<uint32_t>(i))),
                   State(i + 1, static_cast<uint32_t>(i + 1)));
      ASSERT_EQ(last, Verdict::kConsistent) << "round " << round;
    }
    ASSERT_EQ(t.attr().ctime.nseconds, static_cast<uint32_t>(n));
  }
}

TEST_F(TrackerTest, RandomOrdersWithAForeignChangeAreAlwaysCaught) {
  std::mt19937 rng(11);
  for (int round = 0; round < 200; ++round) {
    ConsistencyTracker t;
    t.Reset(State(0, 0));
    int n = 2 + static_cast<int>(rng() % 30);
    int foreign_at = 1 + static_cast<int>(rng() % (n - 1));  // before our op number foreign_at
    std::vector<ConsistencyTracker::Token> tokens;
    for (int i = 0; i < n; ++i) tokens.push_back(t.Begin(Kind::kModify));
    std::vector<int> order(n);
    for (int i = 0; i < n; ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), rng);
    bool caught = false;
    for (int i : order) {
      // States: op i goes from 2i to 2i+1 (ours); the foreign change takes
      // 2*foreign_at - 1 to 2*foreign_at... encode: ours produce odd ctimes.
      uint32_t pre = i == 0 ? 0 : static_cast<uint32_t>(2 * i - 1);
      if (i == foreign_at) pre = static_cast<uint32_t>(2 * i);  // somebody else's state
      auto v = t.End(tokens[i], Wcc(State(pre, pre)), State(2 * i + 1, 2 * i + 1));
      caught |= v == Verdict::kForeignChange;
    }
    ASSERT_TRUE(caught) << "round " << round;
  }
}

}  // namespace
}  // namespace nfsx::client
