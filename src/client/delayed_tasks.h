// DelayedTasks: runs functions after a delay on one thread of its own (retries of
// calls the server asked to repeat later, NFS3ERR_JUKEBOX).
//
// Thread-safe. Stop() runs every task still waiting, at once, on the calling
// thread, so that each task runs exactly once.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

namespace nfsx::client {

class DelayedTasks {
 public:
  using Task = std::move_only_function<void()>;

  DelayedTasks();
  ~DelayedTasks();
  DelayedTasks(const DelayedTasks&) = delete;
  DelayedTasks& operator=(const DelayedTasks&) = delete;

  // Runs `task` after `delay` (at once if stopped).
  void After(std::chrono::milliseconds delay, Task task);
  // Ends the thread and runs what is still waiting. Idempotent.
  void Stop();

 private:
  void Loop();

  std::mutex mu_;
  std::condition_variable cv_;
  std::multimap<std::chrono::steady_clock::time_point, Task> tasks_;  // GUARDED_BY(mu_)
  bool stopped_ = false;                                              // GUARDED_BY(mu_)
  std::thread thread_;
};

}  // namespace nfsx::client
