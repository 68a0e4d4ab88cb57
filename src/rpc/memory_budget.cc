#include "rpc/memory_budget.h"

#include "base/atomic_max.h"

namespace nfsx::rpc {

void MemoryBudget::Add(size_t n) {
  RaiseTo(peak_, used_.fetch_add(n, std::memory_order_relaxed) + n);
}

bool MemoryBudget::TryAdd(size_t n) {
  size_t used = used_.load();
  do {
    if (limit_ != 0 && used + n > limit_) return false;
  } while (!used_.compare_exchange_weak(used, used + n));
  RaiseTo(peak_, used + n);
  return true;
}

void MemoryBudget::Release(size_t n) {
  used_.fetch_sub(n);
  if (waiting_.load() > 0 && !Over()) WakeFitting();
}

void MemoryBudget::WaitForRoom(std::function<void()> wake, size_t need) {
  {
    std::lock_guard lock(mu_);
    waiters_.push_back({need, std::move(wake)});
    waiting_.fetch_add(1);
  }
  // A Release between the caller's check and the registration saw nobody waiting.
  if (Fits(need)) WakeFitting();
}

void MemoryBudget::WakeFitting() {
  std::vector<std::function<void()>> woken;
  {
    std::lock_guard lock(mu_);
    std::erase_if(waiters_, [&](Waiter& w) {
      if (!Fits(w.need)) return false;
      woken.push_back(std::move(w.wake));
      return true;
    });
    waiting_.store(waiters_.size());
  }
  for (auto& w : woken) w();
}

}  // namespace nfsx::rpc
