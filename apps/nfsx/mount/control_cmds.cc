// `nfsx umount` and `nfsx mountstat`: talk to a running mount through the
// control attributes of its root (src/fuse/control.h).
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

#include "apps/nfsx/mount/mount_commands.h"

#ifdef NFSX_HAVE_FUSE
#include "fuse/control.h"
#endif

extern char** environ;

namespace nfsx::app::mount {

#ifdef NFSX_HAVE_FUSE

namespace {

// fusermount3 for users; root unmounts directly and gets the errno.
int Unmount(const std::string& path, bool lazy) {
  if (geteuid() == 0) {
    if (umount2(path.c_str(), lazy ? MNT_DETACH : 0) == 0) return 0;
    std::fprintf(stderr, "nfsx umount: %s: %s\n", path.c_str(), std::strerror(errno));
    return 1;
  }
  std::string flag = lazy ? "-uz" : "-u";
  char* argv[] = {const_cast<char*>("fusermount3"), flag.data(), const_cast<char*>("--"),
                  const_cast<char*>(path.c_str()), nullptr};
  pid_t pid;
  if (int e = posix_spawnp(&pid, "fusermount3", nullptr, nullptr, argv, environ); e != 0) {
    std::fprintf(stderr, "nfsx umount: cannot run fusermount3: %s\n", std::strerror(e));
    return 1;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;  // it said why
}

bool Alive(pid_t pid) {
  if (kill(pid, 0) != 0 && errno == ESRCH) return false;
  // A zombie (its parent has not reaped it yet) is done with its work.
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/stat", pid);
  FILE* f = std::fopen(path, "r");
  if (!f) return false;
  char state = '?';
  int ignored = std::fscanf(f, "%*d (%*[^)]) %c", &state);
  (void)ignored;
  std::fclose(f);
  return state != 'Z';
}

}  // namespace

int RunUmount(const std::string& path, bool force) {
  std::string error;
  auto info = fuse::FindNfsxMount(path, &error);
  if (!info) {
    std::fprintf(stderr, "nfsx umount: %s\n", error.c_str());
    return 1;
  }
  const std::string& mnt = info->mountpoint;
  pid_t daemon = 0;
  if (auto pid = fuse::ReadControl(mnt, fuse::kPidXattr); pid) daemon = std::stoi(*pid);
  if (!force) {
    // The kernel's dirty pages (shared mappings) go to the daemon first; then
    // the daemon writes and commits everything it holds.
    int fd = open(mnt.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
      (void)syncfs(fd);
      close(fd);
    }
    if (auto s = fuse::ReadControl(mnt, fuse::kSyncXattr); !s) {
      std::fprintf(stderr,
                   "nfsx umount: cannot write back %s: %s; not unmounted (--force detaches "
                   "anyway, losing what was not written)\n",
                   mnt.c_str(), ErrorString(s.error()).c_str());
      return 1;
    }
  }
  if (int rc = Unmount(mnt, force); rc != 0) return rc;
  if (daemon > 0 && !force) {
    // The daemon exits once it has flushed what remained; wait so that the data
    // is on the server when we return.
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (Alive(daemon) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (Alive(daemon)) {
      std::fprintf(stderr, "nfsx umount: %s unmounted, but its process %d is still running\n",
                   mnt.c_str(), daemon);
      return 1;
    }
  }
  return 0;
}

int RunMountstat(const std::string& path) {
  std::string error;
  auto info = fuse::FindNfsxMount(path, &error);
  if (!info) {
    std::fprintf(stderr, "nfsx mountstat: %s\n", error.c_str());
    return 1;
  }
  auto text = fuse::ReadControl(info->mountpoint, fuse::kStatsXattr);
  if (!text) {
    std::fprintf(stderr, "nfsx mountstat: %s: %s\n", info->mountpoint.c_str(),
                 ErrorString(text.error()).c_str());
    return 1;
  }
  std::fputs(text->c_str(), stdout);
  return 0;
}

#else

int RunUmount(const std::string&, bool) {
  std::fprintf(stderr, "nfsx umount: this nfsx was built without libfuse3 (libfuse3-dev)\n");
  return 1;
}

int RunMountstat(const std::string&) {
  std::fprintf(stderr, "nfsx mountstat: this nfsx was built without libfuse3 (libfuse3-dev)\n");
  return 1;
}

#endif

}  // namespace nfsx::app::mount
