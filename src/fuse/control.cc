#include "fuse/control.h"

#include <fmt/format.h>
#include <sys/xattr.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <vector>

namespace nfsx::fuse {

namespace {

// /proc/self/mountinfo escapes space, tab, newline and backslash as \ooo.
std::string Unescape(const std::string& s) {
  auto octal = [](char c) { return c >= '0' && c <= '7'; };
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && octal(s[i + 1]) && octal(s[i + 2]) && octal(s[i + 3])) {
      out.push_back(
          static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0')));
      i += 3;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

}  // namespace

Result<MountInfo> FindNfsxMount(const std::string& path, std::string* error) {
  char resolved[PATH_MAX];
  if (!realpath(path.c_str(), resolved)) {
    int err = errno;
    if (error) *error = fmt::format("{}: {}", path, std::strerror(err));
    return Fail(err);
  }
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  std::optional<MountInfo> found;
  std::string other;
  while (std::getline(in, line)) {
    std::istringstream ss(line);
    std::vector<std::string> f;
    for (std::string w; ss >> w;) f.push_back(w);
    auto dash = std::find(f.begin(), f.end(), "-");
    if (f.size() < 5 || dash == f.end() || dash + 2 >= f.end()) continue;
    if (Unescape(f[4]) != resolved) continue;
    // Mounts stack: the last one listed on a path is the one visible there.
    if (*(dash + 1) == "fuse.nfsx") {
      found = MountInfo{resolved, Unescape(*(dash + 2))};
    } else {
      found.reset();
      other = *(dash + 1);
    }
  }
  if (!found) {
    if (error) {
      *error = other.empty() ? fmt::format("{}: not a mount point", resolved)
                             : fmt::format("{}: not an nfsx mount ({})", resolved, other);
    }
    return Fail(EINVAL);
  }
  return *found;
}

Result<std::string> ReadControl(const std::string& mountpoint, const char* name) {
  std::vector<char> buf(1 << 16);
  ssize_t n = getxattr(mountpoint.c_str(), name, buf.data(), buf.size());
  if (n < 0) return FailErrno();
  return std::string(buf.data(), static_cast<size_t>(n));
}

}  // namespace nfsx::fuse
