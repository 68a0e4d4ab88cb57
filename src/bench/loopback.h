// The floor under every NFS figure: round trips of messages of the same sizes over a raw
// loopback TCP connection, to an echo thread in this process (blocking reads and writes,
// TCP_NODELAY on both ends), measured the way the NULL calls are.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nfsx/result.h"
#include "tools/libnfs-load/histogram.h"

namespace nfsx::bench {

// `calls` requests of `request` bytes, each answered by `reply` bytes, with `in_flight`
// outstanding; each round trip's latency recorded in nanoseconds.
Result<void> LoopbackRoundTrips(size_t request, size_t reply, int in_flight, uint64_t calls,
                                load::Histogram* latency_ns);

}  // namespace nfsx::bench
