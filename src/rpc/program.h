// What an RPC program looks like to the dispatcher: a table of procedures.
//
// The RPC layer knows nothing of NFS. A program supplies, per procedure, a
// function that decodes its arguments and encodes its results, and flags that
// say how the transport may run it.
#pragma once

#include <sys/socket.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/sharded_counter.h"
#include "rpc/message.h"
#include "xdr/xdr.h"

namespace nfsx::rpc {

// Where a call came from.
struct Peer {
  sockaddr_storage addr{};
  socklen_t addr_len = 0;
  uint16_t port = 0;
  std::string host;  // numeric address, for logs and export matching
};

struct CallContext {
  const CallHeader& header;
  const Peer& peer;
  // The call runs on an event loop, which must not wait on the disk. A procedure that
  // would (its data is not in the page cache) sets would_block and answers nothing;
  // the transport then runs the call again on a worker thread.
  bool on_event_loop = false;
  mutable bool would_block = false;
};

enum ProcFlag : uint32_t {
  kProcInline = 0,
  kProcMayBlock = 1u << 0,  // may wait on disk (fsync): run it off the I/O thread
  // Must not run twice: replies are kept in the duplicate request cache for its
  // retention window.
  kProcNonIdempotent = 1u << 1,
  // Running twice rewrites the same bytes, harmful only if another write to the
  // range came between (WRITE): replies are kept in the cache's separate, smaller
  // class, so that they never push out those of kProcNonIdempotent calls.
  kProcRewritesData = 1u << 2,
};

// Decodes arguments from `args` and appends results to `results`.
// Returns SUCCESS, or GARBAGE_ARGS when the arguments do not decode (the
// dispatcher then discards whatever was encoded), or SYSTEM_ERR.
using ProcFn =
    std::function<accept_stat(CallContext&, xdr::XdrDecoder& args, xdr::XdrEncoder& results)>;

// Every call of a procedure records into the calling thread's shard (its own cache
// lines, base/sharded_counter.h); readers sum the shards.
class ProcStats {
 public:
  // Latency histogram: bucket 0 counts calls under 1 µs, bucket i > 0 those that took
  // [2^(i-1), 2^i) µs.
  static constexpr int kBuckets = 24;

  void Record(uint64_t ns);

  uint64_t Calls() const;
  uint64_t TotalNs() const;
  uint64_t MaxNs() const;
  // Smallest bucket bound (µs) under which `fraction` of the calls fell.
  uint64_t PercentileMicros(double fraction) const;

 private:
  struct alignas(kCacheLine) Shard {
    std::atomic<uint64_t> calls{0};
    std::atomic<uint64_t> total_ns{0};
    std::atomic<uint64_t> max_ns{0};
    std::array<std::atomic<uint64_t>, kBuckets> buckets{};
  };
  uint64_t Sum(std::atomic<uint64_t> Shard::*field) const;
  std::array<Shard, kCounterShards> shards_{};
};

// Looks at a call's raw arguments and says whether this call may block
// (for procedures whose cost depends on an argument, like WRITE's stability).
using BlocksFn = bool (*)(std::span<const std::byte> args);

// Looks at a call's raw arguments and says how large its reply may be, at most (0: small,
// a few KiB). A call run on a worker makes its reply only when it runs: the transport
// holds this much of its memory limits for it meanwhile.
using ReplyBoundFn = std::function<size_t(std::span<const std::byte> args)>;

struct Procedure {
  std::string name;
  ProcFn fn;
  uint32_t flags = kProcInline;
  BlocksFn blocks = nullptr;
  ReplyBoundFn reply_bound;
  mutable ProcStats stats;

  Procedure(std::string n, ProcFn f, uint32_t fl = kProcInline, BlocksFn b = nullptr)
      : name(std::move(n)), fn(std::move(f)), flags(fl), blocks(b) {}
  Procedure(Procedure&& o) noexcept
      : name(std::move(o.name)),
        fn(std::move(o.fn)),
        flags(o.flags),
        blocks(o.blocks),
        reply_bound(std::move(o.reply_bound)) {}

  bool MayBlock(std::span<const std::byte> args) const {
    return (flags & kProcMayBlock) || (blocks && blocks(args));
  }
};

struct Program {
  std::string name;
  uint32_t prog = 0;
  uint32_t vers = 0;
  std::vector<Procedure> procs;  // index = procedure number
  // When set and true for a call's peer, the call may block whatever its
  // procedure (the server must first wait for DNS to learn the peer's name), so
  // it runs off the I/O thread.
  std::function<bool(const Peer&)> blocks_for_peer;
};

}  // namespace nfsx::rpc
