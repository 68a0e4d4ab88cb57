// MemoryBudget: bytes the server holds for all its connections together, against one
// limit. The server keeps two: one for replies queued and calls copied for workers,
// one for receive buffers beyond a connection's small base. Each connection has its own
// cap too, but a few hundred connections each under it still add up to the machine's
// memory; a connection that finds the budget spent stops and waits here until enough
// of everyone's bytes have been given back.
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

  // Counts `n` more whether or not they fit (the caller checked Over() before).
  void Add(size_t n);
  // Counts `n` more only if the total stays within the limit.
  bool TryAdd(size_t n);
  // Wakes the waiters whose need now fits.
  void Release(size_t n);
  // Sequentially consistent with Release's decrement and WaitForRoom's registration, so
  // that one of the two always sees the other.
  bool Over() const { return !Fits(1); }
  bool Fits(size_t n) const { return limit_ == 0 || used_.load() + n <= limit_; }

  // `wake` runs once (on the thread that releases, or on this one) when `need` more
  // bytes fit again; it must not call back into the budget. It is a hint: the woken
  // caller tries again, and may find another took the room first.
  void WaitForRoom(std::function<void()> wake, size_t need = 1);
  bool HasWaiters() const { return waiting_.load() > 0; }

  size_t used() const { return used_.load(std::memory_order_relaxed); }
  size_t peak() const { return peak_.load(std::memory_order_relaxed); }
  size_t limit() const { return limit_; }

 private:
  struct Waiter {
    size_t need;
    std::function<void()> wake;
  };
  void WakeFitting();

  const size_t limit_;
  std::atomic<size_t> used_{0};
  std::atomic<size_t> peak_{0};
  std::atomic<size_t> waiting_{0};
  std::mutex mu_;
  std::vector<Waiter> waiters_;  // GUARDED_BY(mu_)
};

}  // namespace nfsx::rpc
