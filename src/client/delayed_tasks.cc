#include "client/delayed_tasks.h"

#include <vector>

namespace nfsx::client {

DelayedTasks::DelayedTasks() : thread_([this] { Loop(); }) {}

DelayedTasks::~DelayedTasks() { Stop(); }

void DelayedTasks::After(std::chrono::milliseconds delay, Task task) {
  {
    std::lock_guard lock(mu_);
    if (!stopped_) {
      tasks_.emplace(std::chrono::steady_clock::now() + delay, std::move(task));
      cv_.notify_one();
      return;
    }
  }
  task();
}

void DelayedTasks::Stop() {
  std::vector<Task> left;
  {
    std::lock_guard lock(mu_);
    if (stopped_) return;
    stopped_ = true;
    for (auto& [when, task] : tasks_) left.push_back(std::move(task));
    tasks_.clear();
  }
  cv_.notify_one();
  if (thread_.joinable()) thread_.join();
  for (auto& task : left) task();
}

void DelayedTasks::Loop() {
  std::unique_lock lock(mu_);
  while (!stopped_) {
    if (tasks_.empty()) {
      cv_.wait(lock);
      continue;
    }
    auto first = tasks_.begin();
    if (first->first > std::chrono::steady_clock::now()) {
      cv_.wait_until(lock, first->first);
      continue;
    }
    Task task = std::move(first->second);
    tasks_.erase(first);
    lock.unlock();
    task();
    lock.lock();
  }
}

}  // namespace nfsx::client
