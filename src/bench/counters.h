// Wire counters (nfsx::WireStats) per phase: differences, sums, and their JSON form, which
// is the nfsstat-style table of the phase (per-procedure calls plus bytes).
#pragma once

#include <optional>

#include "bench/json.h"
#include "nfsx/client.h"

namespace nfsx::bench {

WireStats operator+(const WireStats& a, const WireStats& b);
WireStats operator-(const WireStats& a, const WireStats& b);

// {"calls": {"NULL": 0, "GETATTR": 3, ...all 22...}, "rpc_calls", "retransmits",
//  "reconnects", "write_bytes", "read_bytes", "resent_bytes", "commits_ahead",
//  "invalidations"}
Json WireJson(const WireStats& s);
// Calls of one procedure by its nfsstat name ("READ"), from WireJson output; 0 if absent.
uint64_t WireCalls(const Json& wire, const char* proc);

// Per-procedure calls seen by an in-process server (the program's procedure names).
struct ServerCalls {
  uint64_t calls[22] = {};
};
ServerCalls operator-(const ServerCalls& a, const ServerCalls& b);
Json ServerCallsJson(const ServerCalls& s);

}  // namespace nfsx::bench
