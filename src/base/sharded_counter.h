// Counters that every I/O and worker thread bumps on every call (calls per procedure,
// bytes in and out). One shared atomic per counter makes each increment pull the same
// cache line from whichever core bumped it last; at 16-64 cores that line is the hot spot
// of the whole call path. Here each thread adds to a slot of its own cache line, and a
// reader sums the slots: exact once the writers are quiet, and never torn, but a sum taken
// while calls run may miss increments in flight (as any monitoring read would).
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace nfsx {

inline constexpr size_t kCounterShards = 16;
inline constexpr size_t kCacheLine = 64;

// The calling thread's slot, given round robin on a thread's first count: the first
// kCounterShards threads get slots of their own; later threads share (still exact, only
// slower).
size_t CounterShard();

class ShardedCounter {
 public:
  void Add(uint64_t n = 1) { slots_[CounterShard()].value.fetch_add(n, std::memory_order_relaxed); }
  uint64_t Load() const {
    uint64_t sum = 0;
    for (const Slot& s : slots_) sum += s.value.load(std::memory_order_relaxed);
    return sum;
  }

 private:
  struct alignas(kCacheLine) Slot {
    std::atomic<uint64_t> value{0};
  };
  std::array<Slot, kCounterShards> slots_{};
};

}  // namespace nfsx
