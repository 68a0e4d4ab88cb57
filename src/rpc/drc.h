// Duplicate request cache for calls that must not run twice.
//
// A client that loses a connection retransmits its call with the same xid,
// often from a new source port. Re-executing a RENAME or REMOVE would then
// fail with NOENT although the first execution succeeded. The DRC remembers
// the reply of each such call, keyed by client address (not port), xid,
// program/version/procedure and a checksum of the arguments, and hands the
// original reply back. See docs/drc.md.
//
// Two classes with separate byte budgets, so that one cannot evict the other:
// namespace operations (CREATE, REMOVE, RENAME, SETATTR...) are kept for at
// least `window` unless their budget runs out (counted and logged), and WRITE
// replies, many and cheap to lose, are kept while their own budget allows.
// Sharded by key: no lock is shared by all calls.
//
// Thread-safe.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <span>
#include <unordered_map>
#include <vector>

#include "rpc/program.h"

namespace nfsx::rpc {

enum class DrcClass : uint8_t { kNamespace = 0, kWrite = 1 };

struct DrcOptions {
  // Namespace replies younger than this are evicted only when their budget is
  // exhausted. knfsd keeps entries 120 s; a hard-mounted client with the
  // default timeo of 60 s retransmits well within 300 s.
  std::chrono::seconds window{300};
  size_t namespace_bytes = 28u << 20;  // ~80,000 replies
  size_t write_bytes = 4u << 20;       // ~12,000 WRITE replies
  size_t shards = 32;
  // Monotonic clock in nanoseconds; tests substitute their own.
  std::function<int64_t()> now_ns;
};

class DuplicateRequestCache {
 public:
  struct Key {
    std::array<std::byte, 16> client{};  // peer address without port
    uint32_t xid = 0;
    uint32_t prog = 0, vers = 0, proc = 0;
    uint64_t checksum = 0;
    friend bool operator==(const Key&, const Key&) = default;
  };

  enum class Lookup {
    kNew,         // first time seen: now marked in progress, run it
    kInProgress,  // the original is still running: drop the retransmission
    kDone,        // *reply holds the original reply
  };

  struct Stats {
    size_t entries = 0;
    std::array<size_t, 2> bytes{};  // by DrcClass
    uint64_t hits = 0;
    // Namespace replies evicted before the window ended, for want of budget.
    uint64_t early_evictions = 0;
  };

  explicit DuplicateRequestCache(DrcOptions options = {});
  ~DuplicateRequestCache();

  static Key MakeKey(const CallHeader& h, const Peer& peer, std::span<const std::byte> args);

  Lookup Begin(const Key& key, DrcClass cls, std::vector<std::byte>* reply);
  // Stores the reply of a call for which Begin() returned kNew.
  void Finish(const Key& key, std::vector<std::byte> reply);
  // Forgets an in-progress call whose reply will never come (dropped).
  void Abandon(const Key& key);

  Stats stats() const;
  size_t size() const { return stats().entries; }
  uint64_t hits() const { return hits_.load(std::memory_order_relaxed); }

  // What one entry costs against its budget besides its reply's bytes.
  static constexpr size_t kEntryOverhead = 192;

 private:
  struct Shard;

  Shard& ShardOf(const Key& key);
  int64_t Now() const;
  void CountEarlyEvictions(uint64_t n);

  const DrcOptions options_;
  std::unique_ptr<Shard[]> shards_;
  std::atomic<uint64_t> hits_{0};
  std::atomic<uint64_t> early_evictions_{0};
  std::atomic<bool> warned_{false};
};

}  // namespace nfsx::rpc
