#include "rpc/memory_budget.h"

#include "base/atomic_max.h"

namespace nfsx::rpc {

void MemoryBudget::Add(size_t n) {
  RaiseTo(peak_, used_.fetch_add(n, std::memory_order_relaxed) + n);
}

void MemoryBudget::Release(size_t n) {
  used_.fetch_sub(n);
  if (waiting_.load() > 0 && !Over()) WakeAll();
}

void MemoryBudget::WaitForRoom(std::function<void()> wake) {
  {
    std::lock_guard lock(mu_);
    waiters_.push_back(std::move(wake));
    waiting_.fetch_add(1);
  }
  // A Release between the caller's Over() and the registration saw nobody waiting.
  if (!Over()) WakeAll();
}

void MemoryBudget::WakeAll() {
  std::vector<std::function<void()>> waiters;
  {
    std::lock_guard lock(mu_);
    waiters.swap(waiters_);
    waiting_.store(0);
  }
  for (auto& w : waiters) w();
}

}  // namespace nfsx::rpc
