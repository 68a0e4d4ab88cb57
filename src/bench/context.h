// What every workload gets: the options, the driver, the progress line, the server when the
// bench started it, and the per-phase measurement of wire and server counters.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bench/counters.h"
#include "bench/cpu_time.h"
#include "bench/driver.h"
#include "bench/json.h"
#include "bench/progress.h"
#include "bench/self_server.h"

namespace nfsx::bench {

struct BenchOptions {
  std::string workload;
  std::string url;              // empty: start an nfsx server in this process
  std::string driver = "nfsx";  // nfsx | libnfs | path:DIR
  std::string threads;          // a count, or for randread a list ("1,2,4")
  std::string size;             // per file
  std::string records;          // "4k", "4k,1m", "1k-16m"
  std::optional<bool> direct;   // --direct / --no-direct; unset: the workload's default
  std::string json_path;
  double seconds = 0;   // timed workloads (randread, randwrite); 0: default
  uint64_t ops = 0;     // append: appends; ping: round trips; 0: default
  int depth = 0;        // ping: calls in flight for the "many" measurement; 0: default
  std::string backend;  // the self-started server's: localfs (default as root) or memfs
  std::string tmp_dir;  // where the self-started server's export goes
  std::string label;    // free text copied into the JSON (compare.sh names the system)
  bool keep_files = false;
  bool quiet = false;  // no progress line
  int server_pid = 0;  // > 0: also measure this server process's CPU time per phase
};

using Clock = std::chrono::steady_clock;

class Context {
 public:
  Context(const BenchOptions& options, Driver& driver, Progress& progress, SelfServer* server,
          std::string prefix)
      : options_(options),
        driver_(driver),
        progress_(progress),
        server_(server),
        prefix_(std::move(prefix)) {}

  const BenchOptions& options() const { return options_; }
  Driver& driver() { return driver_; }
  Progress& progress() { return progress_; }
  // A file name unique to this run: "<prefix>-<what>".
  std::string FileName(const std::string& what) const { return prefix_ + "-" + what; }

  struct Snapshot {
    std::optional<WireStats> wire;
    std::optional<ServerCalls> server;
    std::optional<CpuSeconds> server_cpu;  // of the process --server-pid names
    double client_cpu = 0;                 // seconds, of this process
  };
  Snapshot Take() const;
  // {"wire": WireJson or null, "server_calls": ... or null, "server_cpu_seconds" and
  // "server_user_cpu_seconds": seconds or null, "client_cpu_seconds": seconds} for what
  // happened since `before`. The client's CPU is this process's: with the in-process
  // server (no --url) it includes the server's.
  Json Since(const Snapshot& before) const { return Between(before, Take()); }
  // The same for what happened from `before` to `after`.
  Json Between(const Snapshot& before, const Snapshot& now) const;

  // Notes for the JSON and the end of the table (e.g. a skipped part, a fallback).
  void Note(std::string text) { notes_.push_back(std::move(text)); }
  const std::vector<std::string>& notes() const { return notes_; }

 private:
  const BenchOptions& options_;
  Driver& driver_;
  Progress& progress_;
  SelfServer* server_;
  std::string prefix_;
  std::vector<std::string> notes_;
};

// A workload runs, prints its tables to stdout and returns its figures as JSON. Errors
// (an I/O failure, data that does not verify) come back as a message.
struct WorkloadOutcome {
  Json results;
  std::string error;  // empty when the run was good
};
using WorkloadFn = WorkloadOutcome (*)(Context& ctx);

struct Workload {
  const char* name;
  const char* summary;
  WorkloadFn run;
};
const std::vector<Workload>& Workloads();

// Seconds since `start`.
inline double Since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace nfsx::bench
