// The workloads `nfsx bench` runs (one file each).
#pragma once

#include "bench/context.h"

namespace nfsx::bench {

WorkloadOutcome RunIozone(Context& ctx);      // iozone.cc
WorkloadOutcome RunThroughput(Context& ctx);  // throughput.cc
WorkloadOutcome RunAppend(Context& ctx);      // append.cc
WorkloadOutcome RunRandRead(Context& ctx);    // random_io.cc
WorkloadOutcome RunRandWrite(Context& ctx);   // random_io.cc
WorkloadOutcome RunAsyncRead(Context& ctx);   // async_io.cc
WorkloadOutcome RunAsyncWrite(Context& ctx);  // async_io.cc
WorkloadOutcome RunPing(Context& ctx);        // ping.cc

}  // namespace nfsx::bench
