#include "base/sharded_counter.h"

#include <gtest/gtest.h>

#include <latch>
#include <thread>
#include <vector>

namespace nfsx {
namespace {

// Threads that start counting one after another get different slots, so that (up to
// kCounterShards of them) they never write the same cache line.
TEST(ShardedCounter, ThreadsCountInSlotsOfTheirOwn) {
  size_t a = 0, b = 0;
  std::thread([&] { a = CounterShard(); }).join();
  std::thread([&] { b = CounterShard(); }).join();
  EXPECT_NE(a, b);
  EXPECT_LT(a, kCounterShards);
  EXPECT_LT(b, kCounterShards);
  size_t again = 0;
  std::thread([&] {
    size_t first = CounterShard();
    again = CounterShard() == first ? 1 : 2;
  }).join();
  EXPECT_EQ(again, 1u) << "a thread's slot changed";
}

// More threads than slots, all adding at once: those sharing a slot must not lose each
// other's increments, and the sum is exact once they are done.
TEST(ShardedCounter, TheSumIsExactWithMoreThreadsThanSlots) {
  ShardedCounter c;
  constexpr int kThreads = 2 * static_cast<int>(kCounterShards) + 3;
  constexpr int kAdds = 200000;
  std::latch go(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      go.arrive_and_wait();
      for (int i = 0; i < kAdds; ++i) c.Add(static_cast<uint64_t>(t % 3 + 1));
    });
  }
  for (auto& t : threads) t.join();
  uint64_t want = 0;
  for (int t = 0; t < kThreads; ++t) want += static_cast<uint64_t>(t % 3 + 1) * kAdds;
  EXPECT_EQ(c.Load(), want);
}

}  // namespace
}  // namespace nfsx
