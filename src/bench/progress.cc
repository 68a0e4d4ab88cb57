#include "bench/progress.h"

#include <fmt/format.h>

#include <cstdio>

#include "bench/units.h"

namespace nfsx::bench {

Progress::Progress(bool enabled) : enabled_(enabled) {
  if (enabled_) thread_ = std::thread([this] { Loop(); });
}

Progress::~Progress() {
  if (!enabled_) return;
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
  Clear();
}

void Progress::Phase(std::string label, uint64_t total, std::string unit) {
  std::lock_guard lock(mu_);
  label_ = std::move(label);
  total_ = total;
  unit_ = std::move(unit);
  start_ = std::chrono::steady_clock::now();
  done_.store(0, std::memory_order_relaxed);
}

void Progress::Clear() {
  if (!enabled_) return;
  std::lock_guard lock(mu_);
  if (shown_) std::fputs("\r\033[K", stderr);
  shown_ = false;
}

void Progress::Loop() {
  std::unique_lock lock(mu_);
  while (!stop_) {
    cv_.wait_for(lock, std::chrono::milliseconds(200));
    if (!stop_ && !label_.empty()) Draw();
  }
}

void Progress::Draw() {
  uint64_t done = done_.load(std::memory_order_relaxed);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::string line = fmt::format("nfsx bench: {}", label_);
  if (total_) line += fmt::format("  {:3.0f}%", 100.0 * static_cast<double>(done) / total_);
  if (unit_ == "B") {
    line += fmt::format("  {:.1f} MiB/s", MiBPerSecond(done, secs));
  } else {
    line += fmt::format("  {:.0f} {}/s", secs > 0 ? static_cast<double>(done) / secs : 0.0, unit_);
  }
  line += fmt::format("  {:.1f} s", secs);
  std::fprintf(stderr, "\r\033[K%s", line.c_str());
  std::fflush(stderr);
  shown_ = true;
}

}  // namespace nfsx::bench
