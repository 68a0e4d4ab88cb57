// A fixed pool of threads that run queued tasks in FIFO order.
//
// Used for calls that may block on disk (COMMIT, stable WRITE) so that an
// I/O thread never waits for fsync.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace nfsx::rpc {

class WorkerPool {
 public:
  using Task = std::move_only_function<void()>;

  explicit WorkerPool(int threads);
  ~WorkerPool();  // runs every queued task, then joins
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  void Submit(Task task);
  // Blocks until the queue is empty and no task is running.
  void Drain();

 private:
  void Loop();

  std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable idle_cv_;
  std::deque<Task> queue_;
  int running_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace nfsx::rpc
