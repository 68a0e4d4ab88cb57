#include "client/page_cache.h"

#include <algorithm>

namespace nfsx::client {

namespace {

// Where Page objects live: never freed, so a reader may lock any page it found
// in an index, however stale (see page_cache.h). Only inserts and removals come
// here, never reads.
class PagePool {
 public:
  static PagePool& Instance() {
    static auto* pool = new PagePool();  // never destroyed: static clients exit late
    return *pool;
  }
  Page* Get() {
    std::lock_guard lock(mu_);
    if (free_.empty()) {
      constexpr size_t kBatch = 256;
      auto* batch = new Page[kBatch];  // kept forever: type-stable
      for (size_t i = 0; i < kBatch; ++i) free_.push_back(&batch[i]);
    }
    Page* p = free_.back();
    free_.pop_back();
    return p;
  }
  void Put(Page* p) {
    std::lock_guard lock(mu_);
    free_.push_back(p);
  }

 private:
  std::mutex mu_;
  std::vector<Page*> free_;  // GUARDED_BY(mu_)
};

}  // namespace

PageSet::~PageSet() {
  Index* ix = index();
  if (!ix) return;
  // Nobody else can reach us any more: no locks needed, but taking the page
  // locks keeps the pages' state changes ordered for the next owner.
  ix->pages.ForEach([](uint64_t, Page* p) {
    std::unique_lock lock(p->mu);
    PageMemory::Instance().Free(p->bytes);
    p->bytes = nullptr;
    p->owner = nullptr;
    lock.unlock();
    PagePool::Instance().Put(p);
  });
  budget_->Add(-static_cast<int64_t>(count_.load() * kPageSize));
  delete ix;
}

PageSet::Index& PageSet::EnsureIndex() {
  Index* ix = index();
  if (ix) return *ix;
  auto* fresh = new Index();
  if (index_.compare_exchange_strong(ix, fresh, std::memory_order_acq_rel)) return *fresh;
  delete fresh;  // another thread won; `ix` now holds its index
  return *ix;
}

void PageSet::LockAll(Index& ix) {
  for (auto& m : ix.stripes) m.lock();  // always in this order: no deadlock
}

void PageSet::UnlockAll(Index& ix) {
  for (auto& m : ix.stripes) m.unlock();
}

const Page* PageSet::LockShared(uint64_t index) const {
  Index* ix = this->index();
  if (!ix) return nullptr;
  // A page found may have been unlinked (even reused) since: retry while the
  // slot keeps changing under us, which only a concurrent invalidation does.
  for (int attempt = 0; attempt < 3; ++attempt) {
    Page* p = ix->pages.Find(index);
    if (!p) return nullptr;
    p->mu.lock_shared();
    if (p->owner == this && p->index == index) return p;
    p->mu.unlock_shared();
  }
  return nullptr;
}

Page* PageSet::LockExclusive(uint64_t index, bool create) {
  Index& ix = EnsureIndex();
  // The stripe lock is held: the slot cannot change, and a page in it is ours.
  if (Page* p = ix.pages.Find(index)) {
    p->mu.lock();
    return p;
  }
  if (!create) return nullptr;
  Page* p = PagePool::Instance().Get();
  p->mu.lock();
  p->owner = this;
  p->index = index;
  p->bytes = PageMemory::Instance().Allocate();
  p->valid_begin = p->valid_end = p->dirty_begin = p->dirty_end = 0;
  p->version = 0;
  p->referenced.store(false, std::memory_order_relaxed);
  ix.pages.Set(index, p);
  count_.fetch_add(1, std::memory_order_relaxed);
  budget_->Add(kPageSize);
  return p;
}

void PageSet::Unlink(uint64_t index, Page* p) {
  index_.load(std::memory_order_relaxed)->pages.Set(index, nullptr);
  // Readers that found the page before the slot was cleared wait for this lock
  // or hold it shared now (we waited for them); afterwards they see no owner.
  p->owner = nullptr;
  PageMemory::Instance().Free(p->bytes);
  p->bytes = nullptr;
  p->mu.unlock();
  PagePool::Instance().Put(p);
  count_.fetch_sub(1, std::memory_order_relaxed);
  budget_->Add(-static_cast<int64_t>(kPageSize));
}

bool PageSet::ReadCached(uint64_t offset, std::span<std::byte> out) {
  uint64_t pos = offset, end = offset + out.size();
  std::byte* dst = out.data();
  while (pos < end) {
    uint64_t index = pos / kPageSize;
    uint32_t b = static_cast<uint32_t>(pos % kPageSize);
    uint32_t e = static_cast<uint32_t>(std::min<uint64_t>(kPageSize, end - index * kPageSize));
    const Page* p = LockShared(index);
    if (!p) return false;
    bool covered = p->Covers(b, e);
    if (covered) {
      std::memcpy(dst, p->bytes + b, e - b);
      // Only a store when the bit changes: readers of one page do not fight over its line.
      if (!p->referenced.load(std::memory_order_relaxed)) {
        p->referenced.store(true, std::memory_order_relaxed);
      }
    }
    p->mu.unlock_shared();
    if (!covered) return false;
    dst += e - b;
    pos += e - b;
  }
  return true;
}

int64_t PageSet::FirstMissing(uint64_t offset, uint64_t end) const {
  for (uint64_t pos = offset; pos < end;) {
    uint64_t index = pos / kPageSize;
    uint32_t b = static_cast<uint32_t>(pos % kPageSize);
    uint32_t e = static_cast<uint32_t>(std::min<uint64_t>(kPageSize, end - index * kPageSize));
    const Page* p = LockShared(index);
    if (!p) return static_cast<int64_t>(index);
    bool covered = p->Covers(b, e);
    p->mu.unlock_shared();
    if (!covered) return static_cast<int64_t>(index);
    pos = (index + 1) * kPageSize;
  }
  return -1;
}

int64_t PageSet::Write(uint64_t offset, std::span<const std::byte> data, uint64_t* newly_dirty) {
  *newly_dirty = 0;
  uint64_t pos = offset, end = offset + data.size();
  const std::byte* src = data.data();
  while (pos < end) {
    uint64_t index = pos / kPageSize;
    uint16_t b = static_cast<uint16_t>(pos % kPageSize);
    uint16_t e = static_cast<uint16_t>(std::min<uint64_t>(kPageSize, end - index * kPageSize));
    std::lock_guard stripe(StripeOf(index));
    Page& p = *LockExclusive(index, true);
    std::unique_lock lock(p.mu, std::adopt_lock);
    // One valid range per page: the new bytes must touch or overlap it, unless the
    // old range can be given up (it is clean: the server still has it).
    bool adjoins = p.valid_end > p.valid_begin && b <= p.valid_end && e >= p.valid_begin;
    if (!adjoins) {
      if (p.dirty()) return static_cast<int64_t>(index);
      p.valid_begin = b;
      p.valid_end = e;
    }
    // A dirty range apart from the new bytes but inside the valid range may
    // grow over the valid bytes between them: rewriting those is harmless.
    std::memcpy(p.bytes + b, src, e - b);
    uint16_t old_dirty = p.dirty() ? static_cast<uint16_t>(p.dirty_end - p.dirty_begin) : 0;
    if (!p.dirty()) {
      p.dirty_begin = b;
      p.dirty_end = e;
    } else {
      p.dirty_begin = std::min(p.dirty_begin, b);
      p.dirty_end = std::max(p.dirty_end, e);
    }
    p.valid_begin = std::min(p.valid_begin, b);
    p.valid_end = std::max(p.valid_end, e);
    ++p.version;
    p.referenced.store(true, std::memory_order_relaxed);
    *newly_dirty += static_cast<uint64_t>(p.dirty_end - p.dirty_begin) - old_dirty;
    src += e - b;
    pos += e - b;
  }
  return -1;
}

void PageSet::Fill(uint64_t offset, std::span<const std::byte> data, uint64_t file_size,
                   const FillTicket& ticket) {
  uint64_t end = offset + data.size();
  for (uint64_t pos = offset; pos < end; pos += kPageSize) {
    uint64_t index = pos / kPageSize;
    size_t n = static_cast<size_t>(std::min<uint64_t>(kPageSize, end - pos));
    // A short last page at end of file is whole: the file has no bytes past it.
    uint16_t good = static_cast<uint16_t>(n == kPageSize || end >= file_size ? kPageSize : n);
    std::lock_guard stripe(StripeOf(index));
    // Checked under the stripe lock: InvalidateClean bumps the generation before
    // it takes this lock, and a write bumps write_seq before it does. So either
    // they come after us (and see the page), or we see their bump.
    if (generation_.load(std::memory_order_acquire) != ticket.generation) return;
    bool create = !ticket.write_seq ||
                  ticket.write_seq->load(std::memory_order_acquire) == ticket.write_seq_seen;
    Page* page = LockExclusive(index, create);
    if (!page) continue;
    Page& p = *page;
    std::unique_lock lock(p.mu, std::adopt_lock);
    const std::byte* src = data.data() + (pos - offset);
    // The page becomes the read's bytes (zeros past them: `good` may count a short
    // last page as whole), except where it already holds bytes, which are at least
    // as new as the read and are kept in place.
    auto put = [&](size_t from, size_t to) {
      if (from < std::min(to, n)) std::memcpy(p.bytes + from, src + from, std::min(to, n) - from);
      if (std::max(from, n) < to)
        std::memset(p.bytes + std::max(from, n), 0, to - std::max(from, n));
    };
    bool had = p.valid_end > p.valid_begin;
    if (!had) {
      put(0, kPageSize);
      p.valid_begin = 0;
      p.valid_end = good;
    } else if (p.valid_begin <= good) {  // else the union would not be one range
      put(0, p.valid_begin);
      put(p.valid_end, kPageSize);
      p.valid_end = std::max(good, p.valid_end);
      p.valid_begin = 0;
    } else {
      continue;
    }
    p.referenced.store(true, std::memory_order_relaxed);
  }
}

void PageSet::ForEachDirty(const std::vector<uint64_t>& indexes,
                           const std::function<void(uint64_t, const Page&)>& visit) const {
  for (uint64_t index : indexes) {
    const Page* p = LockShared(index);
    if (!p) continue;
    if (p->dirty()) visit(index, *p);
    p->mu.unlock_shared();
  }
}

uint64_t PageSet::MarkClean(uint64_t index, uint32_t version) {
  if (!this->index()) return 0;
  std::lock_guard stripe(StripeOf(index));
  Page* p = LockExclusive(index, false);
  if (!p) return 0;
  std::unique_lock lock(p->mu, std::adopt_lock);
  if (p->version != version || !p->dirty()) return 0;
  uint64_t n = p->dirty_end - p->dirty_begin;
  p->dirty_begin = p->dirty_end = 0;
  return n;
}

void PageSet::InvalidateClean() {
  NewGeneration();  // before the stripe locks: see Fill
  Index* ix = index();
  if (!ix) return;
  LockAll(*ix);
  ix->pages.ForEach([&](uint64_t index, Page* p) {
    p->mu.lock();
    if (p->dirty()) {
      p->mu.unlock();
    } else {
      Unlink(index, p);
    }
  });
  UnlockAll(*ix);
}

void PageSet::DropRange(uint64_t offset, uint64_t end) {
  if (end <= offset || !index()) return;
  for (uint64_t index = offset / kPageSize; index <= (end - 1) / kPageSize; ++index) {
    std::lock_guard stripe(StripeOf(index));
    Page* p = LockExclusive(index, false);
    if (!p) continue;
    if (p->dirty()) {
      p->mu.unlock();
    } else {
      Unlink(index, p);
    }
  }
}

void PageSet::Truncate(uint64_t size) {
  uint64_t keep = (size + kPageSize - 1) / kPageSize;  // pages [0, keep) survive
  Index* ix = index();
  if (!ix) return;
  LockAll(*ix);
  ix->pages.ForEach([&](uint64_t index, Page* p) {
    if (index < keep) return;
    p->mu.lock();
    Unlink(index, p);
  });
  UnlockAll(*ix);
  if (size % kPageSize == 0) return;
  uint64_t index = size / kPageSize;
  std::lock_guard stripe(StripeOf(index));
  Page* page = LockExclusive(index, false);
  if (!page) return;
  Page& p = *page;
  std::unique_lock lock(p.mu, std::adopt_lock);
  uint16_t cut = static_cast<uint16_t>(size % kPageSize);
  std::memset(p.bytes + cut, 0, kPageSize - cut);
  if (p.valid_end > cut) p.valid_end = std::max(cut, p.valid_begin);
  if (p.valid_end == cut) p.valid_end = kPageSize;  // zeros past EOF are valid
  if (p.dirty_end > cut) p.dirty_end = std::max(cut, p.dirty_begin);
  if (p.dirty_end <= p.dirty_begin) p.dirty_begin = p.dirty_end = 0;
}

size_t PageSet::Evict(size_t target) {
  size_t freed = 0;
  Index* ix = index();
  if (!ix) return 0;
  LockAll(*ix);
  for (int pass = 0; pass < 2 && freed < target; ++pass) {
    ix->pages.ForEach([&](uint64_t index, Page* p) {
      if (freed >= target) return;
      p->mu.lock();
      if (p->dirty()) {
        p->mu.unlock();
      } else if (p->referenced.load(std::memory_order_relaxed) && pass == 0) {
        p->referenced.store(false, std::memory_order_relaxed);  // a second chance (CLOCK)
        p->mu.unlock();
      } else {
        Unlink(index, p);
        freed += kPageSize;
      }
    });
  }
  UnlockAll(*ix);
  return freed;
}

}  // namespace nfsx::client
