#include "server/state_dir.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/logging.h"

namespace nfsx::server {
namespace {

Result<void> WriteAll(int fd, const std::byte* p, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return FailErrno();
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return {};
}

}  // namespace

Result<HandleKey> LoadOrCreateHandleKey(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return FailErrno();
  std::string path = dir + "/fh.key";
  HandleKey key{};
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    ssize_t n = ::read(fd, key.data(), key.size());
    ::close(fd);
    if (n != static_cast<ssize_t>(key.size())) {
      log::Error("{}: expected a {}-byte key", path, key.size());
      return Fail(EINVAL);
    }
    return key;
  }
  if (errno != ENOENT) return FailErrno();

  if (getrandom(key.data(), key.size(), 0) != static_cast<ssize_t>(key.size())) return FailErrno();
  std::string tmp = path + ".tmp";
  fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return FailErrno();
  auto written = WriteAll(fd, key.data(), key.size());
  if (written && ::fsync(fd) != 0) written = FailErrno();
  ::close(fd);
  if (!written) return std::unexpected(written.error());
  if (::rename(tmp.c_str(), path.c_str()) != 0) return FailErrno();
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  log::Info("created file handle key {}", path);
  return key;
}

}  // namespace nfsx::server
