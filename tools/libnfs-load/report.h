// Human and machine-readable results of nfsx-libnfs-load.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "tools/libnfs-load/job.h"
#include "tools/libnfs-load/options.h"

namespace nfsx::load {

struct PhaseReport {
  Mode mode = Mode::kWrite;
  std::vector<PhaseResult> jobs;      // indexed by job
  std::vector<std::string> files;     // file of each job
  std::vector<std::string> problems;  // file-level findings (verify: size)
  double seconds = 0;                 // the slowest job
};

struct Totals {
  uint64_t reads = 0;
  uint64_t writes = 0;
  uint64_t mismatches = 0;
  uint64_t errors = 0;
};

Totals Summarize(const std::vector<PhaseReport>& phases);

// One line per job and operation, a total line per operation, then commits.
void PrintPhase(std::FILE* out, const Options& options, int index, int count,
                const PhaseReport& phase);

// The same figures as JSON (latencies in microseconds, rates per second of the job's own
// elapsed time; totals over the slowest job's time).
// `run_errors`: failures outside the phases (connect, open, close, state file).
bool WriteJson(const std::string& path, const Options& options,
               const std::vector<PhaseReport>& phases, const std::vector<std::string>& run_errors,
               std::string* error);

}  // namespace nfsx::load
