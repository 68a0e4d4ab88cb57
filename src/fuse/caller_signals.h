// Whether the signal that made the kernel interrupt a FUSE request should end the
// caller's wait. The kernel interrupts a request for any signal at all, SIGSTOP
// included, and the EINTR we would answer reaches the program as is (FUSE never
// restarts the call). The Linux NFS client waits killably: only a signal that kills
// the process ends a wait. We end one also for a signal the program catches, which it
// asked to see; a stop (Ctrl-Z, a debugger, a freezer) or an ignored signal must not
// turn a hard mount's fsync into EINTR that cp or a database takes for an I/O error.
#pragma once

#include <sys/types.h>

#include <cstdint>

namespace nfsx::fuse {

// Signal sets as /proc/PID/status shows them: bit N-1 is signal N.
struct SignalSets {
  uint64_t pending = 0;  // SigPnd | ShdPnd
  uint64_t blocked = 0;
  uint64_t ignored = 0;
  uint64_t caught = 0;
};

// Whether any pending, unblocked signal kills the process or runs a handler.
bool SignalsEndWait(const SignalSets& s);

// SignalsEndWait for thread `tid` as /proc shows it now; true when that cannot be read
// (the thread is gone, or /proc is not there): then nobody waits for the answer.
bool CallerSignalsEndWait(pid_t tid);

// Parses the Sig*/ShdPnd lines of a /proc/PID/status text; false if one is missing.
bool ParseSignalSets(const char* status, SignalSets* out);

}  // namespace nfsx::fuse
