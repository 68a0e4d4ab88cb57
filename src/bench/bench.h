// `nfsx bench WORKLOAD`: sets up the server (when no --url), the driver and the progress
// line, runs the workload, prints its tables and writes the JSON.
#pragma once

#include "bench/context.h"

namespace nfsx::bench {

// Exit status: 0 all good, 1 the run failed (I/O error, data that did not verify), 2 bad
// options or nothing to run against.
int RunBench(const BenchOptions& options);

}  // namespace nfsx::bench
