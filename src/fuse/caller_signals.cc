#include "fuse/caller_signals.h"

#include <fcntl.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <string>

namespace nfsx::fuse {

namespace {

constexpr uint64_t Bit(int sig) { return uint64_t{1} << (sig - 1); }

// Signals whose default action neither kills nor is ignored: the stops, and SIGCONT,
// whose default is to resume.
constexpr uint64_t kHarmlessByDefault = Bit(SIGSTOP) | Bit(SIGTSTP) | Bit(SIGTTIN) | Bit(SIGTTOU) |
                                        Bit(SIGCONT) | Bit(SIGCHLD) | Bit(SIGURG) | Bit(SIGWINCH);

bool ParseHex(const char* status, const char* field, uint64_t* out) {
  const char* p = std::strstr(status, field);
  if (p == nullptr) return false;
  p += std::strlen(field);
  char* end = nullptr;
  *out = std::strtoull(p, &end, 16);
  return end != p;
}

}  // namespace

bool SignalsEndWait(const SignalSets& s) {
  uint64_t live = s.pending & ~s.blocked;
  if (live & Bit(SIGKILL)) return true;
  live &= ~s.ignored;
  // A caught signal runs its handler; an uncaught one kills unless its default is harmless.
  return (live & s.caught) != 0 || (live & ~s.caught & ~kHarmlessByDefault) != 0;
}

bool ParseSignalSets(const char* status, SignalSets* out) {
  uint64_t thread = 0, shared = 0;
  if (!ParseHex(status, "\nSigPnd:", &thread) || !ParseHex(status, "\nShdPnd:", &shared) ||
      !ParseHex(status, "\nSigBlk:", &out->blocked) ||
      !ParseHex(status, "\nSigIgn:", &out->ignored) ||
      !ParseHex(status, "\nSigCgt:", &out->caught)) {
    return false;
  }
  out->pending = thread | shared;
  return true;
}

bool CallerSignalsEndWait(pid_t tid) {
  std::string path = "/proc/" + std::to_string(tid) + "/status";
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return true;
  // Whole: a long Groups line can push the signal lines past any fixed buffer.
  std::string status;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0) status.append(buf, static_cast<size_t>(n));
  close(fd);
  SignalSets sets;
  return !ParseSignalSets(status.c_str(), &sets) || SignalsEndWait(sets);
}

}  // namespace nfsx::fuse
