#include "bench/cpu_time.h"

#include <sys/resource.h>
#include <unistd.h>

#include <charconv>
#include <fstream>
#include <sstream>
#include <string>

namespace nfsx::bench {

std::optional<CpuSeconds> ParseProcStatCpuSeconds(std::string_view stat, long ticks_per_second) {
  // "pid (comm) state ppid ...": comm may contain ") ", so fields are counted from the
  // last ')'. utime and stime are fields 14 and 15, the 12th and 13th after it.
  size_t close = stat.rfind(')');
  if (close == std::string_view::npos || ticks_per_second <= 0) return std::nullopt;
  std::string_view rest = stat.substr(close + 1);
  unsigned long long ticks[2] = {0, 0};
  int field = 2;  // the field before the first one after ')'
  size_t pos = 0;
  while (field < 15) {
    while (pos < rest.size() && rest[pos] == ' ') ++pos;
    if (pos >= rest.size()) return std::nullopt;
    size_t end = rest.find(' ', pos);
    if (end == std::string_view::npos) end = rest.size();
    ++field;
    if (field == 14 || field == 15) {
      const char* first = rest.data() + pos;
      const char* last = rest.data() + end;
      auto [ptr, ec] = std::from_chars(first, last, ticks[field - 14]);
      if (ec != std::errc() || ptr != last) return std::nullopt;
    }
    pos = end;
  }
  auto hz = static_cast<double>(ticks_per_second);
  return CpuSeconds{static_cast<double>(ticks[0]) / hz, static_cast<double>(ticks[1]) / hz};
}

std::optional<CpuSeconds> ProcessCpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  return ParseProcStatCpuSeconds(text.str(), sysconf(_SC_CLK_TCK));
}

double SelfCpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  auto seconds = [](const timeval& tv) {
    return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) / 1e6;
  };
  return seconds(ru.ru_utime) + seconds(ru.ru_stime);
}

}  // namespace nfsx::bench
