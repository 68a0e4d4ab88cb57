#include "client/page_cache.h"

#include <algorithm>

namespace nfsx::client {

namespace {

uint64_t LoadWord(const std::byte* page, size_t word) {
  // atomic_ref<const T> is C++26; the memory is writable, only this access is not.
  auto* w = const_cast<uint64_t*>(reinterpret_cast<const uint64_t*>(page) + word);
  return std::atomic_ref<uint64_t>(*w).load(std::memory_order_acquire);
}

void StoreWord(std::byte* page, size_t word, uint64_t v) {
  std::atomic_ref<uint64_t>(*(reinterpret_cast<uint64_t*>(page) + word))
      .store(v, std::memory_order_release);
}

// Writes [at, at+n) of a page from `src` (zeros if null) in whole aligned words,
// merging the partial first and last ones: every access to page bytes is one
// 8-byte atomic on an aligned word, so no two accesses of different sizes overlap.
// Whole words take a fixed-size copy (one load, one store), unrolled: a
// variable-length copy per word made cached reads about twice as slow
// (bench/results/2026-12-06-vm-randread.md).
void StoreBytes(std::byte* page, size_t at, const std::byte* src, size_t n) {
  size_t pos = at, end = at + n;
  auto partial = [&](size_t take) {
    size_t word = pos / 8, lo = pos % 8;
    uint64_t v = LoadWord(page, word);  // only the writer changes it: no lost update
    auto* vb = reinterpret_cast<std::byte*>(&v);
    if (src) {
      std::memcpy(vb + lo, src + (pos - at), take);
    } else {
      std::memset(vb + lo, 0, take);
    }
    StoreWord(page, word, v);
    pos += take;
  };
  if (pos % 8 != 0 && pos < end) partial(std::min<size_t>(8 - pos % 8, end - pos));
#pragma GCC unroll 8
  for (; end - pos >= 8; pos += 8) {
    uint64_t v = 0;
    if (src) std::memcpy(&v, src + (pos - at), 8);
    StoreWord(page, pos / 8, v);
  }
  if (pos < end) partial(end - pos);
}

// REQUIRES: p.mu held exclusively. Makes the sequence number odd until EndChange,
// so that lock-free readers overlapping the change retry.
//
// The seqlock without fences (GCC's TSan has none): every store of a change is a
// release store, so a reader whose acquire load sees any of them also sees the
// odd number before it; the reader's loads are acquire loads, so its second look
// at the number cannot move before them. On x86 both are plain moves.
void StartChange(Page& p) {
  p.seq.store(p.seq.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

// The exclusive hold of a page for a change: its lock, and StartChange.
void BeginChange(Page& p) {
  p.mu.lock();
  StartChange(p);
}

void EndChange(Page& p) {
  p.seq.store(p.seq.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  p.mu.unlock();
}

// Ends the change of a page locked by LockExclusive when it goes out of scope.
class PageChange {
 public:
  explicit PageChange(Page& p) : p_(p) {}
  ~PageChange() { EndChange(p_); }
  PageChange(const PageChange&) = delete;
  PageChange& operator=(const PageChange&) = delete;

 private:
  Page& p_;
};

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

void LoadPageBytes(const std::byte* page, size_t at, size_t n, std::byte* dst) {
  size_t pos = at, end = at + n;
  auto partial = [&](size_t take) {
    uint64_t v = LoadWord(page, pos / 8);
    std::memcpy(dst + (pos - at), reinterpret_cast<const std::byte*>(&v) + pos % 8, take);
    pos += take;
  };
  if (pos % 8 != 0 && pos < end) partial(std::min<size_t>(8 - pos % 8, end - pos));
#pragma GCC unroll 8
  for (; end - pos >= 8; pos += 8) {  // whole words, a fixed-size copy: see StoreBytes
    uint64_t v = LoadWord(page, pos / 8);
    std::memcpy(dst + (pos - at), &v, 8);
  }
  if (pos < end) partial(end - pos);
}

void Page::Store(size_t at, const std::byte* src, size_t n) {
  StoreBytes(bytes.load(std::memory_order_relaxed), at, src, n);
}

void Page::Zero(size_t at, size_t n) {
  StoreBytes(bytes.load(std::memory_order_relaxed), at, nullptr, n);
}

PageSet::~PageSet() {
  Index* ix = index();
  if (!ix) return;
  // Nobody else can reach us any more: no locks needed, but taking the page
  // locks keeps the pages' state changes ordered for the next owner.
  ix->pages.ForEach([](uint64_t, Page* p) {
    BeginChange(*p);
    PageMemory::Instance().Free(p->bytes.load(std::memory_order_acquire));
    p->bytes.store(nullptr, std::memory_order_release);
    p->owner.store(nullptr, std::memory_order_release);
    EndChange(*p);
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
    if (p->owner.load(std::memory_order_acquire) == this &&
        p->index.load(std::memory_order_acquire) == index) {
      return p;
    }
    p->mu.unlock_shared();
  }
  return nullptr;
}

template <typename Look>
bool PageSet::Peek(uint64_t index, Look&& look) const {
  Index* ix = this->index();
  if (!ix) return false;
  for (int attempt = 0; attempt < 8; ++attempt) {
    const Page* p = ix->pages.Find(index);
    if (!p) return false;
    uint32_t before = p->seq.load(std::memory_order_acquire);
    if (before & 1) continue;  // a change is under way
    // Loaded once: an unlink may clear it any time, and `look` must copy from
    // memory that is some page's (see PageMemory), never from null.
    const std::byte* bytes = p->bytes.load(std::memory_order_acquire);
    bool ours = p->owner.load(std::memory_order_acquire) == this &&
                p->index.load(std::memory_order_acquire) == index && bytes != nullptr;
    if (ours) look(*p, bytes);
    // After the acquire loads above (see StartChange): if the number did not move,
    // no change overlapped them.
    if (p->seq.load(std::memory_order_relaxed) != before) continue;
    if (ours) return true;
    // Unlinked from our slot (and perhaps reused) since we found it: look again.
  }
  // Writers keep changing the page: wait for them instead of spinning.
  const Page* p = LockShared(index);
  if (!p) return false;
  look(*p, p->data());
  p->mu.unlock_shared();
  return true;
}

Page* PageSet::LockExclusive(uint64_t index, bool create) {
  Index& ix = EnsureIndex();
  // The stripe lock is held: the slot cannot change, and a page in it is ours.
  if (Page* p = ix.pages.Find(index)) {
    BeginChange(*p);
    return p;
  }
  if (!create) return nullptr;
  Page* p = PagePool::Instance().Get();
  BeginChange(*p);  // readers that found this page in an earlier life retry
  p->owner.store(this, std::memory_order_release);
  p->index.store(index, std::memory_order_release);
  p->bytes.store(PageMemory::Instance().Allocate(), std::memory_order_release);
  p->valid_begin.store(0, std::memory_order_release);
  p->valid_end.store(0, std::memory_order_release);
  p->dirty_begin = p->dirty_end = 0;
  p->version = 0;
  p->referenced.store(false, std::memory_order_relaxed);
  ix.pages.Set(index, p);
  count_.fetch_add(1, std::memory_order_relaxed);
  budget_->Add(kPageSize);
  return p;
}

void PageSet::Unlink(uint64_t index, Page* p) {
  index_.load(std::memory_order_relaxed)->pages.Set(index, nullptr);
  // Readers that found the page before the slot was cleared see the sequence
  // number move (or, under the shared lock, no owner) and look again.
  p->owner.store(nullptr, std::memory_order_release);
  PageMemory::Instance().Free(p->bytes.load(std::memory_order_acquire));
  p->bytes.store(nullptr, std::memory_order_release);
  EndChange(*p);
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
    bool covered = false;
    bool found = Peek(index, [&](const Page& p, const std::byte* bytes) {
      covered = p.Covers(b, e);
      if (!covered) return;
      LoadPageBytes(bytes, b, e - b, dst);
      // Only a store when the bit changes: readers of one page do not fight over
      // its line. (Perhaps on a page reused meanwhile: a hint, harmless.)
      if (!p.referenced.load(std::memory_order_relaxed)) {
        p.referenced.store(true, std::memory_order_relaxed);
      }
    });
    if (!found || !covered) return false;
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
    bool covered = false;
    if (!Peek(index, [&](const Page& p, const std::byte*) { covered = p.Covers(b, e); }) ||
        !covered) {
      return static_cast<int64_t>(index);
    }
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
    PageChange change(p);
    uint16_t vb = p.valid_begin.load(std::memory_order_relaxed);
    uint16_t ve = p.valid_end.load(std::memory_order_relaxed);
    // One valid range per page: the new bytes must touch or overlap it, unless the
    // old range can be given up (it is clean: the server still has it).
    bool adjoins = ve > vb && b <= ve && e >= vb;
    if (!adjoins) {
      if (p.dirty()) return static_cast<int64_t>(index);
      vb = b;
      ve = e;
    }
    // A dirty range apart from the new bytes but inside the valid range may grow
    // over the valid bytes between them, which are written back as cached. Linux
    // does the same (nfs_can_extend_write) unless the file has byte-range locks:
    // then another client may own the bytes between. Sending them apart instead
    // cost a flush per such write (1 KiB random buffered writes: 1.28M -> 21k IOPS).
    p.Store(b, src, e - b);
    uint16_t old_dirty = p.dirty() ? static_cast<uint16_t>(p.dirty_end - p.dirty_begin) : 0;
    if (!p.dirty()) {
      p.dirty_begin = b;
      p.dirty_end = e;
    } else {
      p.dirty_begin = std::min(p.dirty_begin, b);
      p.dirty_end = std::max(p.dirty_end, e);
    }
    p.valid_begin.store(std::min(vb, b), std::memory_order_release);
    p.valid_end.store(std::max(ve, e), std::memory_order_release);
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
    PageChange change(p);
    const std::byte* src = data.data() + (pos - offset);
    // The page becomes the read's bytes (zeros past them: `good` may count a short
    // last page as whole), except where it already holds bytes, which are at least
    // as new as the read and are kept in place.
    auto put = [&](size_t from, size_t to) {
      if (from < std::min(to, n)) p.Store(from, src + from, std::min(to, n) - from);
      if (std::max(from, n) < to) p.Zero(std::max(from, n), to - std::max(from, n));
    };
    uint16_t vb = p.valid_begin.load(std::memory_order_relaxed);
    uint16_t ve = p.valid_end.load(std::memory_order_relaxed);
    if (ve <= vb) {
      put(0, kPageSize);
      p.valid_begin.store(0, std::memory_order_release);
      p.valid_end.store(good, std::memory_order_release);
    } else if (vb <= good) {  // else the union would not be one range
      put(0, vb);
      put(ve, kPageSize);
      p.valid_end.store(std::max(good, ve), std::memory_order_release);
      p.valid_begin.store(0, std::memory_order_release);
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
  PageChange change(*p);
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
    BeginChange(*p);
    if (p->dirty()) {
      EndChange(*p);
    } else {
      Unlink(index, p);
    }
  });
  UnlockAll(*ix);
}

void PageSet::DropRange(uint64_t offset, uint64_t end) { Drop(offset, end, false); }

void PageSet::DropChangedRange(uint64_t offset, uint64_t end) {
  // A READ sent before may not put the old bytes back, not even into a page a later
  // write made again.
  if (end > offset) NewGeneration();  // before the stripe locks: see Fill
  Drop(offset, end, true);
}

void PageSet::Drop(uint64_t offset, uint64_t end, bool changed) {
  if (end <= offset || !index()) return;
  for (uint64_t index = offset / kPageSize; index <= (end - 1) / kPageSize; ++index) {
    std::lock_guard stripe(StripeOf(index));
    Page* p = LockExclusive(index, false);
    if (!p) continue;
    if (!p->dirty()) {
      Unlink(index, p);
      continue;
    }
    if (changed) {
      // Its dirty bytes were written after the change was sent (the change flushed
      // what was dirty before); the rest of the page may predate it. (Not exact: a
      // dirty range that grew across clean bytes since keeps those too.)
      p->valid_begin.store(p->dirty_begin, std::memory_order_release);
      p->valid_end.store(p->dirty_end, std::memory_order_release);
    }
    EndChange(*p);
  }
}

void PageSet::Truncate(uint64_t size) {
  uint64_t keep = (size + kPageSize - 1) / kPageSize;  // pages [0, keep) survive
  // A READ sent before may not bring back the bytes cut off, not even into a page
  // a later write past the new end made again (fsx found it under load).
  NewGeneration();  // before the stripe locks: see Fill
  Index* ix = index();
  if (!ix) return;
  LockAll(*ix);
  ix->pages.ForEach([&](uint64_t index, Page* p) {
    if (index < keep) return;
    BeginChange(*p);
    Unlink(index, p);
  });
  UnlockAll(*ix);
  if (size % kPageSize == 0) return;
  uint64_t index = size / kPageSize;
  std::lock_guard stripe(StripeOf(index));
  Page* page = LockExclusive(index, false);
  if (!page) return;
  Page& p = *page;
  PageChange change(p);
  uint16_t cut = static_cast<uint16_t>(size % kPageSize);
  p.Zero(cut, kPageSize - cut);
  uint16_t vb = p.valid_begin.load(std::memory_order_relaxed);
  uint16_t ve = p.valid_end.load(std::memory_order_relaxed);
  if (ve > cut) ve = std::max(cut, vb);
  if (ve == cut) ve = kPageSize;  // zeros past EOF are valid
  p.valid_end.store(ve, std::memory_order_release);
  if (p.dirty_end > cut) p.dirty_end = std::max(cut, p.dirty_begin);
  if (p.dirty_end <= p.dirty_begin) p.dirty_begin = p.dirty_end = 0;
}

std::unique_lock<std::shared_mutex> PageSet::LockPageForTesting(uint64_t index) {
  std::lock_guard stripe(StripeOf(index));
  Page* p = EnsureIndex().pages.Find(index);
  return p ? std::unique_lock(p->mu) : std::unique_lock<std::shared_mutex>();
}

size_t PageSet::Evict(size_t target) {
  size_t freed = 0;
  Index* ix = index();
  if (!ix) return 0;
  LockAll(*ix);
  for (int pass = 0; pass < 2 && freed < target; ++pass) {
    ix->pages.ForEach([&](uint64_t index, Page* p) {
      if (freed >= target) return;
      p->mu.lock();  // no change of what readers see unless it is unlinked
      if (p->dirty()) {
        p->mu.unlock();
      } else if (p->referenced.load(std::memory_order_relaxed) && pass == 0) {
        p->referenced.store(false, std::memory_order_relaxed);  // a second chance (CLOCK)
        p->mu.unlock();
      } else {
        StartChange(*p);
        Unlink(index, p);
        freed += kPageSize;
      }
    });
  }
  UnlockAll(*ix);
  return freed;
}

}  // namespace nfsx::client
