// PageMemory: where the bytes of cached pages live.
//
// Cached pages come from 2 MiB slabs that the kernel may back with transparent
// huge pages (madvise), and freed pages are reused before any new memory is
// touched. Filling the cache from malloc cost one page fault per 4 KiB page, which
// on a virtual machine was most of the time of a cold sequential read.
//
// Whole slabs that fall free give their memory back to the system, except one
// kept spare, but stay mapped: the page cache's lock-free readers may still copy
// from a block freed under them (and then discard the copy), so a freed block must
// never become an unmapped address. What stays is address space, as much as the
// cache ever held at once. Thread-safe; one instance per process.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace nfsx::client {

class PageMemory {
 public:
  static constexpr size_t kBlock = 4096;
  static constexpr size_t kSlab = size_t{2} << 20;

  static PageMemory& Instance();

  // kBlock bytes, aligned to kBlock, contents undefined. Never null (aborts when
  // the system has no memory left, as operator new would throw).
  std::byte* Allocate();
  void Free(std::byte* block);

  // Slabs holding memory (not given back).
  size_t slabs() const;

 private:
  struct Slab {
    std::byte* base = nullptr;
    std::vector<uint16_t> free;  // indexes of free blocks
    bool released = false;       // all free, memory given back (MADV_DONTNEED)
  };
  Slab* NewSlabLocked();
  void ReleaseSlabLocked(Slab* slab);
  size_t released_ = 0;  // GUARDED_BY(mu_)

  mutable std::mutex mu_;
  std::unordered_map<uintptr_t, Slab*> by_base_;  // GUARDED_BY(mu_)
  std::vector<Slab*> with_free_;                  // GUARDED_BY(mu_): slabs with a free block
  size_t empty_slabs_ = 0;                        // GUARDED_BY(mu_)
};

// One cached page's bytes: owns a block of PageMemory.
class PageBytes {
 public:
  PageBytes() : block_(PageMemory::Instance().Allocate()) {}
  ~PageBytes() { PageMemory::Instance().Free(block_); }
  PageBytes(const PageBytes&) = delete;
  PageBytes& operator=(const PageBytes&) = delete;

  std::byte* data() { return block_; }
  const std::byte* data() const { return block_; }

 private:
  std::byte* block_;
};

}  // namespace nfsx::client
