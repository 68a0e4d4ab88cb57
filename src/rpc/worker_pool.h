// A fixed pool of threads that run queued tasks.
//
// Used for calls that may block on disk (COMMIT, stable WRITE, READ of data not in
// the page cache) so that an I/O thread never waits for the disk.
//
// Tasks are queued per key (the transport's key is the connection) and the keys take
// turns: a client that pipelines hundreds of slow calls delays another client's call
// by at most one of its own per worker, not by all of them. Within a key, tasks
// start in the order they were submitted.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

namespace nfsx::rpc {

class WorkerPool {
 public:
  using Task = std::move_only_function<void()>;

  explicit WorkerPool(int threads);
  ~WorkerPool();  // runs every queued task, then joins
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  void Submit(Task task) { Submit(0, std::move(task)); }
  void Submit(uintptr_t key, Task task);
  // Blocks until the queue is empty and no task is running.
  void Drain();

 private:
  void Loop();
  bool EmptyLocked() const { return turns_.empty(); }

  std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable idle_cv_;
  std::unordered_map<uintptr_t, std::deque<Task>> queues_;  // GUARDED_BY(mu_): none empty
  std::deque<uintptr_t> turns_;  // GUARDED_BY(mu_): each key with tasks, once
  int running_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace nfsx::rpc
