// CPU time of processes, for "CPU per operation" figures: the server's (another process,
// from /proc) and the bench's own (the client side of a library driver).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string_view>

namespace nfsx::bench {

struct CpuSeconds {
  double user = 0;    // in the process's own code
  double system = 0;  // in the kernel on its behalf: system calls, and on loopback much of TCP
  double total() const { return user + system; }
  CpuSeconds operator-(const CpuSeconds& o) const { return {user - o.user, system - o.system}; }
};

// CPU seconds used so far by every thread of process `pid`, living or exited
// (/proc/PID/stat, clock-tick resolution); nullopt when it cannot be read.
std::optional<CpuSeconds> ProcessCpuSeconds(pid_t pid);

// The same figures from the text of a /proc/PID/stat file (exposed for tests: the command
// name may hold spaces and parentheses).
std::optional<CpuSeconds> ParseProcStatCpuSeconds(std::string_view stat, long ticks_per_second);

// User + system seconds of this process (getrusage).
double SelfCpuSeconds();

}  // namespace nfsx::bench
