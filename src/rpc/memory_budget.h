// MemoryBudget: bytes the server holds for all its connections together (replies
// queued for clients, calls copied for worker threads), against one limit. Each
// connection has its own cap too, but a few hundred connections each under it still
// add up to the machine's memory; a connection that finds the budget spent stops
// running calls and waits here until enough of everyone's replies have drained.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <mutex>
#include <vector>

namespace nfsx::rpc {

class MemoryBudget {
 public:
  explicit MemoryBudget(size_t limit) : limit_(limit) {}  // 0: no limit

  void Add(size_t n);
  // Wakes every waiter once the use is under the limit.
  void Release(size_t n);
  // Sequentially consistent with Release's decrement and WaitForRoom's registration, so
  // that one of the two always sees the other.
  bool Over() const { return limit_ != 0 && used_.load() >= limit_; }

  // `wake` runs once (on the thread that releases, or on this one) when the use is
  // under the limit again; it must not call back into the budget.
  void WaitForRoom(std::function<void()> wake);

  size_t used() const { return used_.load(std::memory_order_relaxed); }
  size_t peak() const { return peak_.load(std::memory_order_relaxed); }
  size_t limit() const { return limit_; }

 private:
  void WakeAll();

  const size_t limit_;
  std::atomic<size_t> used_{0};
  std::atomic<size_t> peak_{0};
  std::atomic<size_t> waiting_{0};
  std::mutex mu_;
  std::vector<std::function<void()>> waiters_;  // GUARDED_BY(mu_)
};

}  // namespace nfsx::rpc
