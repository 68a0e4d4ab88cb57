// BufferPool: recycled memory for large transient buffers (READ replies, call
// records handed to workers, O_DIRECT data kept until COMMIT).
//
// Fresh memory is expensive where it matters most: every 4 KiB page of a new
// allocation is a page fault on first touch (about 9 us each in the 2-core VMs we
// measure on, so a fresh 1 MiB buffer costs 2.3 ms to fill against 47 us for a
// reused one), and glibc hands large blocks back to the kernel when they are freed.
// Here blocks of a size class go back to a stack of their own when released and
// are handed out again warm.
//
// Blocks come in power-of-two classes from 4 KiB to 4 MiB; larger requests are
// plain allocations. Each class is sharded by the allocating thread (a block goes
// back to the shard it came from), so no lock is process-wide. What is kept idle
// is bounded in bytes across the process (IdleLimit()); a block released beyond it
// is freed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

namespace nfsx {

class BufferPool {
 public:
  static constexpr size_t kMinBlock = size_t{4} << 10;
  static constexpr size_t kMaxBlock = size_t{4} << 20;
  static constexpr size_t kDefaultIdleLimit = size_t{64} << 20;

  struct Block {
    std::byte* data = nullptr;
    size_t capacity = 0;
    uint16_t shard = 0;
  };

  // A block of at least `size` bytes, uninitialised.
  static Block Take(size_t size);
  static void Give(Block b);

  // Bytes kept idle, at most. Lowering it frees nothing at once: releases over it free.
  static void SetIdleLimit(size_t bytes);
  static size_t IdleLimit();

  struct Stats {
    uint64_t reused = 0;  // blocks handed out warm
    uint64_t fresh = 0;   // blocks newly allocated
    uint64_t freed = 0;   // released blocks freed (over the limit, or too large)
    size_t idle_bytes = 0;
    int64_t lent_bytes = 0;  // in blocks handed out and not yet given back
  };
  static Stats GetStats();
};

// Bytes in a pooled block: a buffer of fixed capacity whose memory returns to the
// pool when it is destroyed. Hold it in a shared_ptr to give it to several owners
// (an OutBuffer segment, an extent kept for a resend).
class PooledBytes {
 public:
  // Empty, with room for `capacity` bytes.
  explicit PooledBytes(size_t capacity) : block_(BufferPool::Take(capacity)) {}
  // A copy of `bytes`.
  explicit PooledBytes(std::span<const std::byte> bytes) : PooledBytes(bytes.size()) {
    Append(bytes);
  }
  ~PooledBytes() { BufferPool::Give(block_); }
  PooledBytes(const PooledBytes&) = delete;
  PooledBytes& operator=(const PooledBytes&) = delete;

  std::byte* data() { return block_.data; }
  const std::byte* data() const { return block_.data; }
  size_t size() const { return size_; }
  size_t capacity() const { return block_.capacity; }
  bool empty() const { return size_ == 0; }
  const std::byte* begin() const { return block_.data; }
  const std::byte* end() const { return block_.data + size_; }
  operator std::span<const std::byte>() const { return {block_.data, size_}; }  // NOLINT
  std::span<std::byte> writable() { return {block_.data, size_}; }

  // REQUIRES: size() + bytes.size() <= capacity().
  void Append(std::span<const std::byte> bytes) {
    if (!bytes.empty()) std::memcpy(block_.data + size_, bytes.data(), bytes.size());
    size_ += bytes.size();
  }
  // New bytes are uninitialised. REQUIRES: n <= capacity().
  void Resize(size_t n) { size_ = n; }

 private:
  BufferPool::Block block_;
  size_t size_ = 0;
};

}  // namespace nfsx
