#include "apps/nfsx/client/progress.h"

#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>

namespace nfsx::app::cli {
namespace {

double Now() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

int TerminalWidth(int fd) {
  winsize ws{};
  if (ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  return 80;
}

void WriteAll(int fd, std::string_view s) {
  while (!s.empty()) {
    ssize_t n = write(fd, s.data(), s.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // a progress bar is not worth an error
    s.remove_prefix(static_cast<size_t>(n));
  }
}

}  // namespace

std::string FormatBytes(uint64_t bytes) {
  if (bytes < 1024) return fmt::format("{} B", bytes);
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = static_cast<double>(bytes) / 1024;
  size_t unit = 0;
  while (v >= 1024 && unit + 1 < std::size(kUnits)) {
    v /= 1024;
    ++unit;
  }
  return fmt::format("{:.1f} {}", v, kUnits[unit]);
}

std::string FormatEta(double seconds) {
  if (!(seconds >= 0) || seconds > 360000) return "--:--";
  auto s = static_cast<uint64_t>(std::llround(seconds));
  if (s >= 3600) return fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
  return fmt::format("{}:{:02}", s / 60, s % 60);
}

std::string FormatProgressLine(uint64_t done, uint64_t total, double bytes_per_second, int width) {
  total = std::max(total, done);  // files may grow while we copy them
  int percent = total ? static_cast<int>(done * 100 / total) : 100;
  double eta = bytes_per_second > 0 ? static_cast<double>(total - done) / bytes_per_second : -1;
  std::string rate = FormatBytes(static_cast<uint64_t>(std::max(0.0, bytes_per_second))) + "/s";
  std::string head =
      fmt::format("{:>10} / {}  {:>3}% ", FormatBytes(done), FormatBytes(total), percent);
  std::string tail = fmt::format(" {:>12}  ETA {}", rate, FormatEta(eta));
  auto fits = [&](const std::string& line) { return static_cast<int>(line.size()) < width; };
  int room = width - 1 - static_cast<int>(head.size() + tail.size()) - 2;
  if (room >= 10) {
    auto filled = static_cast<int>(static_cast<uint64_t>(room) * percent / 100);
    std::string bar(static_cast<size_t>(filled), '=');
    if (filled < room) bar += '>';
    bar.resize(static_cast<size_t>(room), ' ');
    return head + "[" + bar + "]" + tail;
  }
  // A narrow terminal: the numbers matter more than the bar, the ETA more than the rate.
  if (fits(head + tail)) return head + tail;
  std::string eta_only = head + "ETA " + FormatEta(eta);
  if (fits(eta_only)) return eta_only;
  return head.substr(0, static_cast<size_t>(std::max(0, width - 1)));
}

void RateWindow::Add(double now, uint64_t done) {
  samples_.emplace_back(now, done);
  // Keep one sample older than the window so the rate always spans it.
  while (samples_.size() > 2 && samples_[1].first <= now - window_) samples_.pop_front();
}

double RateWindow::BytesPerSecond() const {
  if (samples_.size() < 2) return 0;
  double dt = samples_.back().first - samples_.front().first;
  if (dt <= 0) return 0;
  return static_cast<double>(samples_.back().second - samples_.front().second) / dt;
}

bool DrawThrottle::Due(double now) {
  if (now < next_) return false;
  next_ = now + interval_;
  return true;
}

bool ProgressBar::StderrIsTerminal() { return isatty(STDERR_FILENO) == 1; }

std::unique_ptr<ProgressBar> ProgressBar::ForStderr(uint64_t total_bytes) {
  if (!StderrIsTerminal()) return nullptr;
  return std::unique_ptr<ProgressBar>(new ProgressBar(total_bytes, STDERR_FILENO, Now()));
}

ProgressBar::ProgressBar(uint64_t total, int fd, double start)
    : total_(total), fd_(fd), throttle_(start) {
  rate_.Add(start, 0);
}

void ProgressBar::Add(uint64_t bytes) {
  done_ += bytes;
  double now = Now();
  if (!throttle_.Due(now)) return;
  rate_.Add(now, done_);
  std::string line = FormatProgressLine(done_, total_, rate_.BytesPerSecond(), TerminalWidth(fd_));
  WriteAll(fd_, "\r" + line + "\x1b[K");
  drawn_ = true;
}

void ProgressBar::Finish() {
  if (drawn_) WriteAll(fd_, "\r\x1b[K");
  drawn_ = false;
}

}  // namespace nfsx::app::cli
