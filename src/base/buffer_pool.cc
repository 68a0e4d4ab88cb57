#include "base/buffer_pool.h"

#include <array>
#include <atomic>
#include <bit>
#include <mutex>
#include <new>
#include <vector>

#include "base/sharded_counter.h"

namespace nfsx {
namespace {

constexpr int kMinShift = std::countr_zero(BufferPool::kMinBlock);
constexpr int kClasses = std::countr_zero(BufferPool::kMaxBlock) - kMinShift + 1;
constexpr uint16_t kUnpooled = UINT16_MAX;

struct alignas(kCacheLine) Stack {
  std::mutex mu;
  std::vector<std::byte*> blocks;  // GUARDED_BY(mu)
};

struct Pool {
  std::array<std::array<Stack, kClasses>, kCounterShards> shards;
  std::atomic<size_t> idle_bytes{0};
  std::atomic<size_t> idle_limit{BufferPool::kDefaultIdleLimit};
  ShardedCounter reused, fresh, freed;
  ShardedCounter taken_bytes, given_bytes;
};

// Never destroyed: blocks may be released by threads that outlive static destruction.
Pool& ThePool() {
  static Pool* pool = new Pool;
  return *pool;
}

int ClassOf(size_t size) {
  size_t rounded = std::bit_ceil(std::max(size, BufferPool::kMinBlock));
  return std::countr_zero(rounded) - kMinShift;
}

std::byte* Allocate(size_t n) { return static_cast<std::byte*>(::operator new(n)); }

}  // namespace

BufferPool::Block BufferPool::Take(size_t size) {
  if (size == 0) return {};
  Pool& pool = ThePool();
  if (size > kMaxBlock) {
    pool.fresh.Add();
    pool.taken_bytes.Add(size);
    return {Allocate(size), size, kUnpooled};
  }
  int cls = ClassOf(size);
  size_t capacity = kMinBlock << cls;
  auto shard = static_cast<uint16_t>(CounterShard());
  pool.taken_bytes.Add(capacity);
  Stack& stack = pool.shards[shard][cls];
  {
    std::lock_guard lock(stack.mu);
    if (!stack.blocks.empty()) {
      std::byte* p = stack.blocks.back();
      stack.blocks.pop_back();
      pool.idle_bytes.fetch_sub(capacity, std::memory_order_relaxed);
      pool.reused.Add();
      return {p, capacity, shard};
    }
  }
  pool.fresh.Add();
  return {Allocate(capacity), capacity, shard};
}

void BufferPool::Give(Block b) {
  if (b.data == nullptr) return;
  Pool& pool = ThePool();
  pool.given_bytes.Add(b.capacity);
  if (b.shard == kUnpooled ||
      pool.idle_bytes.fetch_add(b.capacity, std::memory_order_relaxed) + b.capacity >
          pool.idle_limit.load(std::memory_order_relaxed)) {
    if (b.shard != kUnpooled) pool.idle_bytes.fetch_sub(b.capacity, std::memory_order_relaxed);
    ::operator delete(b.data);
    pool.freed.Add();
    return;
  }
  Stack& stack = pool.shards[b.shard][ClassOf(b.capacity)];
  std::lock_guard lock(stack.mu);
  stack.blocks.push_back(b.data);
}

void BufferPool::SetIdleLimit(size_t bytes) { ThePool().idle_limit.store(bytes); }
size_t BufferPool::IdleLimit() { return ThePool().idle_limit.load(); }

BufferPool::Stats BufferPool::GetStats() {
  Pool& pool = ThePool();
  uint64_t given = pool.given_bytes.Load();  // first, so that a racing pair never shows < 0
  return {pool.reused.Load(), pool.fresh.Load(), pool.freed.Load(),
          pool.idle_bytes.load(std::memory_order_relaxed),
          static_cast<int64_t>(pool.taken_bytes.Load() - given)};
}

}  // namespace nfsx
