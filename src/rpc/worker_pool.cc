#include "rpc/worker_pool.h"

namespace nfsx::rpc {

WorkerPool::WorkerPool(int threads) {
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Loop(); });
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void WorkerPool::Submit(uintptr_t key, Task task) {
  {
    std::lock_guard lock(mu_);
    std::deque<Task>& q = queues_[key];
    if (q.empty()) turns_.push_back(key);
    q.push_back(std::move(task));
  }
  work_cv_.notify_one();
}

void WorkerPool::Drain() {
  std::unique_lock lock(mu_);
  idle_cv_.wait(lock, [&] { return EmptyLocked() && running_ == 0; });
}

void WorkerPool::Loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    work_cv_.wait(lock, [&] { return stopping_ || !EmptyLocked(); });
    if (EmptyLocked()) return;  // stopping and nothing left
    // The key whose turn it is gives one task, then goes to the back of the line.
    uintptr_t key = turns_.front();
    turns_.pop_front();
    auto it = queues_.find(key);
    Task task = std::move(it->second.front());
    it->second.pop_front();
    if (it->second.empty()) {
      queues_.erase(it);
    } else {
      turns_.push_back(key);
    }
    ++running_;
    lock.unlock();
    task();
    task = nullptr;  // what it captured goes before the pool counts it done
    lock.lock();
    --running_;
    if (EmptyLocked() && running_ == 0) idle_cv_.notify_all();
  }
}

}  // namespace nfsx::rpc
