// Interruptible waits: a thread that waits on behalf of someone who may stop
// wanting the answer (a FUSE request whose process got a signal) installs a
// check for the time of its work, and every long wait in the client stops with
// EINTR once the check says so.
//
// The check is polled (every 50 ms, only while a wait lasts that long) rather
// than pushed: libfuse may call an interrupt callback after the request was
// answered and freed, while asking fuse_req_interrupted() of a request being
// handled is always safe.
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace nfsx {

class InterruptScope {
 public:
  using Check = bool (*)(void* arg);
  // Installs `check(arg)` for this thread until the scope ends; scopes nest.
  InterruptScope(Check check, void* arg);
  ~InterruptScope();
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;

  // Whether this thread's installed check, if any, says its work is no longer wanted.
  static bool Interrupted();
  // Whether a check is installed on this thread.
  static bool Active();

 private:
  Check check_;
  void* arg_;
  InterruptScope* outer_;
};

// cv.wait(lock, done), ending early (false) when this thread's work is interrupted.
// Returns true when `done` holds.
template <class Pred>
bool WaitUnlessInterrupted(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                           Pred done) {
  if (!InterruptScope::Active()) {
    cv.wait(lock, done);
    return true;
  }
  while (!done()) {
    if (InterruptScope::Interrupted()) return false;
    cv.wait_for(lock, std::chrono::milliseconds(50));
  }
  return true;
}

// Sleeps for `d`; false if this thread's work is interrupted first.
inline bool SleepUnlessInterrupted(std::chrono::milliseconds d) {
  auto until = std::chrono::steady_clock::now() + d;
  if (!InterruptScope::Active()) {
    std::this_thread::sleep_until(until);
    return true;
  }
  while (std::chrono::steady_clock::now() < until) {
    if (InterruptScope::Interrupted()) return false;
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
        std::chrono::milliseconds(50), until - std::chrono::steady_clock::now()));
  }
  return true;
}

}  // namespace nfsx
