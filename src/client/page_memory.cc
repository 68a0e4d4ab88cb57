#include "client/page_memory.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>

#include "base/logging.h"

namespace nfsx::client {

namespace {
constexpr uint16_t kBlocksPerSlab = PageMemory::kSlab / PageMemory::kBlock;
}

PageMemory& PageMemory::Instance() {
  // Never destroyed: pages of static clients may be freed during exit.
  static auto* instance = new PageMemory();
  return *instance;
}

PageMemory::Slab* PageMemory::NewSlabLocked() {
  // Map twice the size and cut it down to an aligned slab, so that the kernel can
  // use one huge page for it and Free can find a block's slab by masking.
  size_t span = 2 * kSlab;
  void* raw = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) {
    log::Error("page cache: cannot map {} bytes", span);
    std::abort();
  }
  auto start = reinterpret_cast<uintptr_t>(raw);
  uintptr_t base = (start + kSlab - 1) & ~(uintptr_t{kSlab} - 1);
  if (base > start) munmap(raw, base - start);
  if (base + kSlab < start + span) {
    munmap(reinterpret_cast<void*>(base + kSlab), start + span - base - kSlab);
  }
  // Best effort: where huge pages are off, this fails and 4 KiB pages are used.
  (void)madvise(reinterpret_cast<void*>(base), kSlab, MADV_HUGEPAGE);
  auto* slab = new Slab{reinterpret_cast<std::byte*>(base), {}};
  slab->free.resize(kBlocksPerSlab);
  // Hand out low blocks first: the slab fills in address order.
  for (uint16_t i = 0; i < kBlocksPerSlab; ++i) slab->free[i] = kBlocksPerSlab - 1 - i;
  by_base_.emplace(base, slab);
  with_free_.push_back(slab);
  ++empty_slabs_;
  return slab;
}

std::byte* PageMemory::Allocate() {
  std::lock_guard lock(mu_);
  Slab* slab = with_free_.empty() ? NewSlabLocked() : with_free_.back();
  if (slab->released) {
    slab->released = false;  // the kernel gives it fresh zero pages as it is touched
    --released_;
  } else if (slab->free.size() == kBlocksPerSlab) {
    --empty_slabs_;
  }
  uint16_t index = slab->free.back();
  slab->free.pop_back();
  if (slab->free.empty()) with_free_.pop_back();
  return slab->base + size_t{index} * kBlock;
}

void PageMemory::Free(std::byte* block) {
  auto addr = reinterpret_cast<uintptr_t>(block);
  std::lock_guard lock(mu_);
  auto it = by_base_.find(addr & ~(uintptr_t{kSlab} - 1));
  if (it == by_base_.end()) {
    log::Error("page cache: freeing a block it does not own");
    std::abort();
  }
  Slab* slab = it->second;
  if (slab->free.empty()) with_free_.push_back(slab);
  slab->free.push_back(static_cast<uint16_t>((addr - it->first) / kBlock));
  if (slab->free.size() == kBlocksPerSlab && ++empty_slabs_ > 1) ReleaseSlabLocked(slab);
}

void PageMemory::ReleaseSlabLocked(Slab* slab) {
  // Not munmap: see the header. Released slabs are used again before new ones are
  // mapped, but after every slab that holds memory (Allocate takes from the back).
  (void)madvise(slab->base, kSlab, MADV_DONTNEED);
  std::erase(with_free_, slab);
  with_free_.insert(with_free_.begin(), slab);
  slab->released = true;
  ++released_;
  --empty_slabs_;
}

size_t PageMemory::slabs() const {
  std::lock_guard lock(mu_);
  return by_base_.size() - released_;
}

}  // namespace nfsx::client
