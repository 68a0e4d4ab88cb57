#include "base/buffer_pool.h"

#include <sys/mman.h>

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

// Blocks of kHugeMinBlock and up live in 2 MiB-aligned mappings that ask for transparent
// huge pages: a fresh 1 MiB buffer then costs one page fault instead of 256. In the
// 2-core VMs we measure on, filling fresh memory took 3-4.7 ms per MiB in 4 KiB pages
// and 0.1 ms in huge pages. Blocks smaller than a huge page are carved from one, so
// their memory is never unmapped: a block released over the idle limit gives its pages
// back (MADV_DONTNEED) and waits, cold, to be handed out before any new mapping.
constexpr size_t kHugePage = size_t{2} << 20;
constexpr size_t kHugeMinBlock = size_t{256} << 10;
constexpr int kHugeMinClass = std::countr_zero(kHugeMinBlock) - kMinShift;

bool InHugePages(int cls) { return cls >= kHugeMinClass; }
bool Carved(int cls) { return InHugePages(cls) && (BufferPool::kMinBlock << cls) < kHugePage; }

// `n` bytes (a multiple of kHugePage) aligned to a huge page.
std::byte* MapHuge(size_t n) {
  void* p =
      ::mmap(nullptr, n + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  auto start = reinterpret_cast<uintptr_t>(p);
  uintptr_t aligned = (start + kHugePage - 1) & ~(kHugePage - 1);
  if (aligned > start) ::munmap(p, aligned - start);
  if (size_t tail = start + kHugePage - aligned; tail > 0) {
    ::munmap(reinterpret_cast<void*>(aligned + n), tail);
  }
  // Advice only: with THP off the mapping works in small pages.
  ::madvise(reinterpret_cast<void*>(aligned), n, MADV_HUGEPAGE);
  return reinterpret_cast<std::byte*>(aligned);
}

// Carved blocks whose memory was given back (or never touched), by class.
struct ColdBlocks {
  std::mutex mu;
  std::array<std::vector<std::byte*>, kClasses> blocks;  // GUARDED_BY(mu)
};
ColdBlocks& Cold() {
  static ColdBlocks* cold = new ColdBlocks;  // never destroyed, as the pool
  return *cold;
}

std::byte* TakeCold(int cls) {
  ColdBlocks& cold = Cold();
  std::lock_guard lock(cold.mu);
  auto& stack = cold.blocks[cls];
  if (stack.empty()) return nullptr;
  std::byte* p = stack.back();
  stack.pop_back();
  return p;
}

void GiveCold(int cls, std::byte* p) {
  ColdBlocks& cold = Cold();
  std::lock_guard lock(cold.mu);
  cold.blocks[cls].push_back(p);
}

// Memory for a block of class `cls` nobody holds: a new allocation, or a cold block.
std::byte* AllocateBlock(int cls) {
  size_t capacity = BufferPool::kMinBlock << cls;
  if (!InHugePages(cls)) return Allocate(capacity);
  if (!Carved(cls)) return MapHuge(capacity);
  if (std::byte* p = TakeCold(cls)) return p;
  // Cold blocks run out before a new huge page is mapped, so at most one huge page per
  // class holds untouched blocks that its first touch filled in.
  std::byte* page = MapHuge(kHugePage);
  for (size_t at = capacity; at < kHugePage; at += capacity) GiveCold(cls, page + at);
  return page;
}

void FreeBlock(int cls, std::byte* p) {
  size_t capacity = BufferPool::kMinBlock << cls;
  if (!InHugePages(cls)) {
    ::operator delete(p);
  } else if (!Carved(cls)) {
    ::munmap(p, capacity);
  } else {
    ::madvise(p, capacity, MADV_DONTNEED);
    GiveCold(cls, p);
  }
}

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
  return {AllocateBlock(cls), capacity, shard};
}

void BufferPool::Give(Block b) {
  if (b.data == nullptr) return;
  Pool& pool = ThePool();
  pool.given_bytes.Add(b.capacity);
  if (b.shard == kUnpooled) {
    ::operator delete(b.data);
    pool.freed.Add();
    return;
  }
  if (pool.idle_bytes.fetch_add(b.capacity, std::memory_order_relaxed) + b.capacity >
      pool.idle_limit.load(std::memory_order_relaxed)) {
    pool.idle_bytes.fetch_sub(b.capacity, std::memory_order_relaxed);
    FreeBlock(ClassOf(b.capacity), b.data);
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
