// The progress line on a terminal: which phase runs, how far it is, how fast. Redrawn
// five times a second by a thread of its own, so that workloads only add to a counter.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

namespace nfsx::bench {

class Progress {
 public:
  // Draws only when `enabled` (stderr is a terminal, and not --quiet).
  explicit Progress(bool enabled);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // A new phase: `total` units (bytes, or operations when `unit` is "ops"); 0 if unknown.
  void Phase(std::string label, uint64_t total, std::string unit = "B");
  // Work done; may be called from any thread. Callers doing millions of tiny operations
  // add in batches.
  void Add(uint64_t n) { done_.fetch_add(n, std::memory_order_relaxed); }
  // Clears the line (before a table is printed).
  void Clear();

 private:
  void Loop();
  void Draw();

  const bool enabled_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::string label_;                            // GUARDED_BY(mu_)
  std::string unit_;                             // GUARDED_BY(mu_)
  uint64_t total_ = 0;                           // GUARDED_BY(mu_)
  std::chrono::steady_clock::time_point start_;  // GUARDED_BY(mu_)
  bool shown_ = false;
  bool stop_ = false;
  std::atomic<uint64_t> done_{0};
  std::thread thread_;
};

}  // namespace nfsx::bench
