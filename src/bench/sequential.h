// One sequential pass over a file, as iozone does it: open, a write or read call per record,
// close. iozone and throughput are made of these.
#pragma once

#include <cstdint>
#include <string>

#include "bench/context.h"
#include "bench/io_util.h"

namespace nfsx::bench {

struct PassSpec {
  std::string name;  // file name
  bool write = false;
  int open_flags = 0;    // added to O_WRONLY|O_CREAT|O_TRUNC or O_RDONLY (O_DIRECT, ...)
  bool truncate = true;  // writes: O_TRUNC (iozone's initial write) or not (rewrite)
  uint64_t size = 0;
  uint64_t record = 0;
};

struct PassResult {
  uint64_t calls = 0;
  uint64_t bytes = 0;
  uint64_t mismatches = 0;     // reads: stamps that were not right
  std::string first_mismatch;  // where, and what was there instead
  double call_seconds = 0;     // in read/write calls only (iozone's figure)
  double open_seconds = 0;
  double close_seconds = 0;    // close flushes and commits what the client buffered
  double seconds = 0;          // open to close
  load::Histogram latency_ns;  // per call
  std::string error;           // empty when every call succeeded

  // {"calls", "bytes", "seconds", "call_seconds", "open_seconds", "close_seconds",
  //  "us_per_call", "mib_per_s" (open to close), "mib_per_s_calls", "latency_us",
  //  "mismatches"}
  Json ToJson() const;
};

// Runs the pass with `driver`, through `buf` (at least `record` bytes), adding bytes to the
// progress line as it goes.
PassResult SequentialPass(Driver& driver, const PassSpec& spec, AlignedBuffer& buf,
                          Progress* progress);

}  // namespace nfsx::bench
