// The shared memory budget: what fits is taken at once, a waiter is woken only once
// its need fits (not at every release), and one registering as the last bytes come
// back is not forgotten.
#include "rpc/memory_budget.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace nfsx::rpc {
namespace {

TEST(MemoryBudgetTest, TryAddTakesOnlyWhatFits) {
  MemoryBudget budget(100);
  EXPECT_TRUE(budget.TryAdd(60));
  EXPECT_FALSE(budget.TryAdd(41));
  EXPECT_EQ(budget.used(), 60u);
  EXPECT_TRUE(budget.TryAdd(40));
  EXPECT_TRUE(budget.Over());
  budget.Release(100);
  EXPECT_EQ(budget.used(), 0u);
  EXPECT_EQ(budget.peak(), 100u);
  MemoryBudget unlimited(0);
  EXPECT_TRUE(unlimited.TryAdd(size_t{1} << 40));
}

// A waiter for 50 bytes sleeps through a release that leaves room for 30, and is woken
// by the one that leaves room for 50; one for 10 is woken by the first.
TEST(MemoryBudgetTest, AWaiterIsWokenWhenItsNeedFits) {
  MemoryBudget budget(100);
  ASSERT_TRUE(budget.TryAdd(100));
  int big = 0, small = 0;
  budget.WaitForRoom([&] { ++big; }, 50);
  budget.WaitForRoom([&] { ++small; }, 10);
  EXPECT_TRUE(budget.HasWaiters());
  budget.Release(30);
  EXPECT_EQ(small, 1);
  EXPECT_EQ(big, 0) << "woken with 30 bytes free for a need of 50";
  budget.Release(20);
  EXPECT_EQ(big, 1);
  EXPECT_FALSE(budget.HasWaiters());
  budget.Release(50);
  EXPECT_EQ(big + small, 2) << "a waiter is woken once";
}

// Registration racing the release that makes room: whichever comes second sees the
// other, so the waiter is always woken.
TEST(MemoryBudgetTest, AWaiterRegisteringAsRoomComesBackIsWoken) {
  for (int round = 0; round < 2000; ++round) {
    MemoryBudget budget(10);
    ASSERT_TRUE(budget.TryAdd(10));
    std::atomic<int> woken{0};
    bool registered = false;
    std::thread releaser([&] { budget.Release(10); });
    if (!budget.Fits(5)) {
      registered = true;
      budget.WaitForRoom([&] { woken.fetch_add(1); }, 5);
    }
    releaser.join();
    if (budget.HasWaiters()) FAIL() << "round " << round << ": a waiter was left behind";
    ASSERT_EQ(woken.load(), registered ? 1 : 0) << "round " << round;
  }
}

}  // namespace
}  // namespace nfsx::rpc
