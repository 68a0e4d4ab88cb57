#include "client/reads_in_flight.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace nfsx::client {
namespace {

using Range = ReadsInFlight::Range;

std::vector<std::pair<uint64_t, uint64_t>> Pairs(const std::vector<Range>& v) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  for (const Range& r : v) out.emplace_back(r.begin, r.end);
  return out;
}

TEST(ReadsInFlightTest, ClaimCutsFreeBytesIntoPieces) {
  ReadsInFlight f;
  bool others = false;
  auto mine = f.Claim(0, 10, 4, &others);
  EXPECT_FALSE(others);
  EXPECT_EQ(Pairs(mine), (std::vector<std::pair<uint64_t, uint64_t>>{{0, 4}, {4, 8}, {8, 10}}));
}

TEST(ReadsInFlightTest, NarrowGivesUpTheBytesNotKept) {
  ReadsInFlight f;
  bool others = false;
  auto mine = f.Claim(0, 20, 100, &others);
  ASSERT_EQ(mine.size(), 1u);
  f.Narrow(mine[0], {{0, 4}, {12, 16}});
  // The bytes given up are free again; those kept are still being fetched.
  others = false;
  EXPECT_EQ(Pairs(f.Claim(0, 20, 100, &others)),
            (std::vector<std::pair<uint64_t, uint64_t>>{{4, 12}, {16, 20}}));
  EXPECT_TRUE(others);
}

TEST(ReadsInFlightTest, ClaimSkipsWhatOthersFetch) {
  ReadsInFlight f;
  bool others = false;
  f.Claim(4, 8, 100, &others);
  f.Claim(12, 14, 100, &others);
  others = false;
  auto mine = f.Claim(0, 20, 100, &others);
  EXPECT_TRUE(others);
  EXPECT_EQ(Pairs(mine), (std::vector<std::pair<uint64_t, uint64_t>>{{0, 4}, {8, 12}, {14, 20}}));
  // Everything from 0 to 20 is now being fetched: a third reader claims nothing.
  others = false;
  EXPECT_TRUE(f.Claim(2, 18, 100, &others).empty());
  EXPECT_TRUE(others);
}

TEST(ReadsInFlightTest, ClaimStartingInsideAPieceSkipsItsRest) {
  ReadsInFlight f;
  bool others = false;
  f.Claim(0, 8, 100, &others);
  others = false;
  auto mine = f.Claim(5, 12, 100, &others);
  EXPECT_TRUE(others);
  EXPECT_EQ(Pairs(mine), (std::vector<std::pair<uint64_t, uint64_t>>{{8, 12}}));
}

TEST(ReadsInFlightTest, FinishedBytesCanBeClaimedAgain) {
  ReadsInFlight f;
  bool others = false;
  auto mine = f.Claim(0, 8, 4, &others);
  f.Finish(mine[0]);
  others = false;
  auto again = f.Claim(0, 8, 4, &others);
  EXPECT_TRUE(others);  // 4..8 is still out
  EXPECT_EQ(Pairs(again), (std::vector<std::pair<uint64_t, uint64_t>>{{0, 4}}));
}

TEST(ReadsInFlightTest, WaitReturnsOnlyWhenOverlappingPiecesFinish) {
  ReadsInFlight f;
  bool others = false;
  auto mine = f.Claim(0, 16, 8, &others);  // {0,8} {8,16}
  f.Wait(16, 32);                          // nothing there: returns at once
  std::atomic<bool> returned{false};
  std::thread waiter([&] {
    f.Wait(6, 10);
    returned = true;
  });
  f.Finish(mine[0]);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(returned.load()) << "Wait returned while 8..16 was still being fetched";
  f.Finish(mine[1]);
  waiter.join();
  EXPECT_TRUE(returned.load());
}

// Many threads claim overlapping ranges at once: no byte is ever claimed by two.
TEST(ReadsInFlightTest, ConcurrentClaimsNeverOverlap) {
  ReadsInFlight f;
  constexpr uint64_t kBytes = 1 << 16;
  std::vector<std::atomic<int>> owners(kBytes);
  std::atomic<int> doubled{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 2000; ++i) {
        uint64_t b = (static_cast<uint64_t>(i) * 7919 + static_cast<uint64_t>(t) * 104729) % kBytes;
        uint64_t e = std::min(kBytes, b + 64 + static_cast<uint64_t>(i % 5) * 100);
        bool others = false;
        auto mine = f.Claim(b, e, 32, &others);
        for (const Range& r : mine) {
          for (uint64_t x = r.begin; x < r.end; ++x) {
            if (owners[x].fetch_add(1) != 0) ++doubled;
          }
        }
        for (const Range& r : mine) {
          for (uint64_t x = r.begin; x < r.end; ++x) owners[x].fetch_sub(1);
          f.Finish(r);
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(doubled.load(), 0);
}

}  // namespace
}  // namespace nfsx::client
