// The progress bar of long copies: one line on stderr, redrawn in place, only on a
// terminal, only once a copy has run for a second (short copies print nothing), and at
// most ten times a second so that drawing never costs throughput.
#pragma once

#include <cstdint>
#include <cstdio>
#include <deque>
#include <memory>
#include <string>
#include <utility>

namespace nfsx::app::cli {

// "0 B", "1023 B", "1.0 KiB", "312.5 MiB", "1.2 GiB".
std::string FormatBytes(uint64_t bytes);

// "0:07", "12:34", "1:02:03"; "--:--" when unknown (negative or absurd).
std::string FormatEta(double seconds);

// The whole line, at most `width - 1` columns so that it never wraps:
// " 12.0 MiB / 32.0 MiB  37% [=======>            ] 95.2 MiB/s  ETA 0:07"
std::string FormatProgressLine(uint64_t done, uint64_t total, double bytes_per_second, int width);

// Rate over the last few seconds, so that the ETA follows the current speed.
class RateWindow {
 public:
  explicit RateWindow(double window_seconds = 3) : window_(window_seconds) {}
  void Add(double now, uint64_t done);
  double BytesPerSecond() const;

 private:
  double window_;
  std::deque<std::pair<double, uint64_t>> samples_;
};

// When to draw: not before `delay` seconds from the start, then every `interval`.
class DrawThrottle {
 public:
  DrawThrottle(double start, double delay = 1.0, double interval = 0.1)
      : next_(start + delay), interval_(interval) {}
  bool Due(double now);

 private:
  double next_;
  double interval_;
};

class ProgressBar {
 public:
  static bool StderrIsTerminal();
  // nullptr when stderr is not a terminal: nothing is ever drawn then.
  static std::unique_ptr<ProgressBar> ForStderr(uint64_t total_bytes);
  ~ProgressBar() { Finish(); }

  void Add(uint64_t bytes);
  // Erases the line (if one was drawn).
  void Finish();

 private:
  ProgressBar(uint64_t total, int fd, double start);

  uint64_t total_;
  uint64_t done_ = 0;
  int fd_;
  RateWindow rate_;
  DrawThrottle throttle_;
  bool drawn_ = false;
};

}  // namespace nfsx::app::cli
