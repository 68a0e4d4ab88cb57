// WorkerPool: every key takes its turn, whatever another key has queued.
#include "rpc/worker_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <mutex>
#include <vector>

namespace nfsx::rpc {
namespace {

// One worker, busy with a task of key 1 while key 1 queues 50 more and key 2 one: key
// 2's task runs right after the next of key 1's, not after all of them (FIFO did that).
TEST(WorkerPoolTest, AKeyWithOneTaskDoesNotWaitBehindAnotherKeysPile) {
  WorkerPool pool(1);
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::promise<void> started;
  pool.Submit(1, [&] {
    started.set_value();
    released.wait();
  });
  started.get_future().wait();  // the worker is inside the first task now
  std::mutex mu;
  std::vector<int> order;
  for (int i = 0; i < 50; ++i) {
    pool.Submit(1, [&] {
      std::lock_guard lock(mu);
      order.push_back(1);
    });
  }
  pool.Submit(2, [&] {
    std::lock_guard lock(mu);
    order.push_back(2);
  });
  release.set_value();
  pool.Drain();
  ASSERT_EQ(order.size(), 51u);
  size_t at = 0;
  while (order[at] != 2) ++at;
  EXPECT_LE(at, 1u) << "key 2's task ran after " << at << " of key 1's";
}

// Within a key, tasks start in the order they came.
TEST(WorkerPoolTest, TasksOfOneKeyStartInOrder) {
  WorkerPool pool(1);
  std::vector<int> order;  // one worker: no lock needed
  for (int i = 0; i < 100; ++i)
    pool.Submit(static_cast<uintptr_t>(i % 3), [&order, i] { order.push_back(i); });
  pool.Drain();
  ASSERT_EQ(order.size(), 100u);
  std::vector<int> last(3, -1);
  for (int i : order) {
    EXPECT_GT(i, last[static_cast<size_t>(i % 3)]);
    last[static_cast<size_t>(i % 3)] = i;
  }
}

// What is queued when the pool goes still runs.
TEST(WorkerPoolTest, DestructionRunsEveryQueuedTask) {
  std::atomic<int> ran{0};
  {
    WorkerPool pool(2);
    for (int i = 0; i < 200; ++i) pool.Submit(static_cast<uintptr_t>(i % 7), [&] { ++ran; });
  }
  EXPECT_EQ(ran.load(), 200);
}

}  // namespace
}  // namespace nfsx::rpc
