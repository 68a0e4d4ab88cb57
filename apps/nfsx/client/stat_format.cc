#include "apps/nfsx/client/stat_format.h"

#include <fmt/format.h>

#include <ctime>

namespace nfsx::app::cli {
namespace {

char TypeChar(FileType type) {
  switch (type) {
    case FileType::kRegular:
      return '-';
    case FileType::kDirectory:
      return 'd';
    case FileType::kBlockDevice:
      return 'b';
    case FileType::kCharDevice:
      return 'c';
    case FileType::kSymlink:
      return 'l';
    case FileType::kSocket:
      return 's';
    case FileType::kFifo:
      return 'p';
  }
  return '?';
}

std::string Strftime(const Timestamp& t, const char* format) {
  time_t secs = static_cast<time_t>(t.sec);
  struct tm tm {};
  localtime_r(&secs, &tm);
  char buf[64];
  size_t n = std::strftime(buf, sizeof(buf), format, &tm);
  return std::string(buf, n);
}

}  // namespace

std::string ModeString(FileType type, uint32_t mode) {
  std::string s(10, '-');
  s[0] = TypeChar(type);
  static constexpr char kRwx[] = "rwx";
  for (int i = 0; i < 9; ++i) {
    if (mode & (0400u >> i)) s[1 + i] = kRwx[i % 3];
  }
  // The special bit shows in the execute slot: lower case when execute is also set.
  auto special = [&](uint32_t bit, int slot, char with_x) {
    if (!(mode & bit)) return;
    bool x = s[slot] != '-';
    s[slot] = x ? with_x : static_cast<char>(with_x - 'a' + 'A');
  };
  special(04000, 3, 's');
  special(02000, 6, 's');
  special(01000, 9, 't');
  return s;
}

std::string TypeName(FileType type, uint64_t size) {
  switch (type) {
    case FileType::kRegular:
      return size == 0 ? "regular empty file" : "regular file";
    case FileType::kDirectory:
      return "directory";
    case FileType::kBlockDevice:
      return "block special file";
    case FileType::kCharDevice:
      return "character special file";
    case FileType::kSymlink:
      return "symbolic link";
    case FileType::kSocket:
      return "socket";
    case FileType::kFifo:
      return "fifo";
  }
  return "unknown";
}

std::string FullTime(const Timestamp& t) {
  return fmt::format("{}.{:09} {}", Strftime(t, "%Y-%m-%d %H:%M:%S"), t.nsec, Strftime(t, "%z"));
}

std::string ShortTime(const Timestamp& t) { return Strftime(t, "%Y-%m-%d %H:%M"); }

}  // namespace nfsx::app::cli
