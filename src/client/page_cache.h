// The client's page cache: per file, 4 KiB pages in a lock-free radix index,
// with dirty ranges for write-back; one global budget for all files.
//
// A page holds a valid byte range (data known to be what the server has, or
// what we wrote) and, inside it, a dirty range (written here, not yet sent).
// Reads copy out of valid ranges; writes extend both.
//
// Reading cached pages (ReadCached, FirstMissing) takes no lock at all (seed
// 002: many threads reading one file must not queue, nor bounce a lock's cache
// line between cores): a lookup in the PageIndex with acquire loads, then a
// seqlock read of the page: its sequence number, its fields and bytes (atomic
// loads, so that a torn copy is merely discarded, never undefined), the
// sequence number again. A reader writes nothing shared.
// Changes take, per page index, one of 16 stripe locks (which serialise
// changes of the index and make a fill's check of its FillTicket atomic with
// the fill), then the page's lock exclusively, which makes its sequence number
// odd until the change ends (PageChange). Whole-file changes take all 16.
//
// Reclamation: a page unlinked while a reader copies from it must not vanish
// under the reader. Pages are type-stable (PagePool, never freed) and their
// bytes' memory stays mapped once mapped (PageMemory): a reader that found a
// page before it was unlinked, freed or even reused reads valid memory, and the
// sequence number (or the owner and index it checks) tells it to retry. Pages
// cost ~100 bytes each beyond their data, kept by the pool for reuse.
//
// Thread-safe.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <span>
#include <vector>

#include "client/page_index.h"
#include "client/page_memory.h"

namespace nfsx::client {

inline constexpr uint64_t kPageSize = PageMemory::kBlock;

// Bytes cached across all files, for the global budget.
class CacheBudget {
 public:
  explicit CacheBudget(size_t limit) : limit_(limit) {}
  void Add(int64_t bytes) { used_.fetch_add(bytes, std::memory_order_relaxed); }
  int64_t used() const { return used_.load(std::memory_order_relaxed); }
  bool over() const { return used() > static_cast<int64_t>(limit_); }
  size_t limit() const { return limit_; }

 private:
  size_t limit_;
  std::atomic<int64_t> used_{0};
};

// One cached page. Pages are type-stable: they come from a process-wide pool and
// go back to it, never to the allocator, so a reader holding a pointer it found
// in a PageIndex may always read the page, then checks that it is still the
// page it looked for (owner and index) and that no change overlapped its read.
//
// The fields lock-free readers look at are atomics, changed only under `mu`
// held exclusively (inside a PageChange); the others are plain, under `mu`.
struct Page {
  // Exclusive for any change; shared for write-back's reads of dirty bytes (which
  // must see them stable). Per page: writers and fills of other pages never touch it.
  mutable std::shared_mutex mu;
  // Odd while a change is under way; lock-free readers retry if it moved.
  std::atomic<uint32_t> seq{0};
  std::atomic<const void*> owner{nullptr};  // the PageSet, null while pooled
  std::atomic<uint64_t> index{0};
  std::atomic<std::byte*> bytes{nullptr};  // kPageSize bytes of PageMemory
  // [begin, end) holds good data.
  std::atomic<uint16_t> valid_begin{0}, valid_end{0};
  uint16_t dirty_begin = 0, dirty_end = 0;  // GUARDED_BY(mu): not yet written to the server
  uint32_t version = 0;                     // GUARDED_BY(mu): bumped by every write into the page
  // Used since the last eviction sweep; relaxed, since it is only a hint for eviction.
  mutable std::atomic<bool> referenced{false};

  bool dirty() const { return dirty_end > dirty_begin; }
  bool Covers(uint32_t b, uint32_t e) const {
    return valid_begin.load(std::memory_order_acquire) <= b &&
           e <= valid_end.load(std::memory_order_acquire);
  }
  // The page's bytes: readers under `mu` (shared or exclusive) may read them plainly.
  const std::byte* data() const { return bytes.load(std::memory_order_relaxed); }
  // Page bytes are written only with these (inside a PageChange), so that lock-free
  // readers' word loads never race with a plain store.
  void Store(size_t at, const std::byte* src, size_t n);
  void Zero(size_t at, size_t n);
};

// Copies [at, at+n) of `page` to `dst` with atomic word loads: the bytes
// may change meanwhile (the reader's seqlock check discards such a copy).
void LoadPageBytes(const std::byte* page, size_t at, size_t n, std::byte* dst);

// What a READ saw when it was sent. Its data may enter the cache only while the
// PageSet's generation is unchanged (nothing was invalidated since), and may
// create pages only while *write_seq is unchanged (no local write since: the
// write's bytes are newer than the READ's). Both are checked under the lock
// that invalidation and writes take for the page, so nothing can land between
// the check and the fill.
struct FillTicket {
  uint64_t generation = 0;
  const std::atomic<uint64_t>* write_seq = nullptr;  // null: create freely
  uint64_t write_seq_seen = 0;
};

class PageSet {
 public:
  explicit PageSet(CacheBudget* budget) : budget_(budget) {}
  ~PageSet();

  // Copies [offset, offset+out.size()) if every byte is cached; false otherwise
  // (nothing is guaranteed about `out` then).
  bool ReadCached(uint64_t offset, std::span<std::byte> out);
  // First page index in [first, last] whose needed bytes are not cached, or -1.
  // `offset`/`end` bound the bytes needed in the first/last page.
  int64_t FirstMissing(uint64_t offset, uint64_t end) const;

  // Writes into the cache and marks the bytes dirty. Fails (returns the index of
  // the page) when a page holds dirty bytes that the new ones would not touch or
  // adjoin: those must be written back first (one dirty range per page).
  // Returns -1 on success. *newly_dirty gets the bytes that became dirty.
  int64_t Write(uint64_t offset, std::span<const std::byte> data, uint64_t* newly_dirty);

  // Inserts data read from the server for [offset, offset+data.size()), page
  // aligned at `offset`, as far as `ticket` allows. Bytes already valid in a page
  // are kept (they may be newer than the read).
  void Fill(uint64_t offset, std::span<const std::byte> data, uint64_t file_size,
            const FillTicket& ticket);

  // The generation READs record in their FillTicket.
  uint64_t generation() const { return generation_.load(std::memory_order_acquire); }
  // READs sent before may no longer fill pages (the data changed on the server;
  // the stale pages are dropped later, by InvalidateClean).
  void NewGeneration() { generation_.fetch_add(1, std::memory_order_acq_rel); }

  // Dirty pages in index order, for write-back: calls `visit(index, page)` with the
  // page locked shared; the visitor copies what it needs.
  void ForEachDirty(const std::vector<uint64_t>& indexes,
                    const std::function<void(uint64_t, const Page&)>& visit) const;
  // Clears the dirty range of `index` if the page's version is still `version`.
  // Returns the bytes that stopped being dirty.
  uint64_t MarkClean(uint64_t index, uint32_t version);

  // Drops clean pages (all, or those overlapping [offset, end)); dirty ones stay.
  // InvalidateClean and DropChangedRange are for data changed on the server: they
  // start a new generation first, so no READ sent before can put its data back, and
  // DropChangedRange keeps only the dirty bytes of a dirty page valid. DropRange
  // only gives memory back (the data did not change): READs in flight still fill.
  void InvalidateClean();
  void DropRange(uint64_t offset, uint64_t end);
  void DropChangedRange(uint64_t offset, uint64_t end);
  // Truncation: pages past `size` go, the tail of the page holding `size` is zeroed;
  // a new generation, as above.
  void Truncate(uint64_t size);
  // Evicts unreferenced clean pages until `target` bytes are freed; returns bytes freed.
  size_t Evict(size_t target);

  size_t pages() const { return count_.load(std::memory_order_relaxed); }

  // For tests: page `index`'s lock, held exclusively as a writer would hold it
  // just before it changes anything (empty if there is no such page).
  std::unique_lock<std::shared_mutex> LockPageForTesting(uint64_t index);

 private:
  static constexpr size_t kStripes = 16;
  struct Index {
    PageIndex pages;
    std::array<std::mutex, kStripes> stripes;
  };
  // The index exists only once the file has a page: most files a client knows
  // of (directory listings) never do, and an empty set should cost a pointer.
  Index* index() const { return index_.load(std::memory_order_acquire); }
  Index& EnsureIndex();
  std::mutex& StripeOf(uint64_t index) { return EnsureIndex().stripes[index % kStripes]; }
  void LockAll(Index& ix);
  void UnlockAll(Index& ix);

  // The page at `index`, locked shared and checked to be ours, or null.
  const Page* LockShared(uint64_t index) const;
  // Calls `look(page, bytes)` on the page at `index` without taking its lock,
  // until one call saw the page unchanged from start to end (a seqlock read);
  // `look` reads only atomics, and `bytes` (never null) through LoadPageBytes,
  // and may run several times.
  // False if there is no such page of ours. After a few torn attempts (writers
  // keep changing the page) it takes the page's lock shared instead.
  template <typename Look>
  bool Peek(uint64_t index, Look&& look) const;
  void Drop(uint64_t offset, uint64_t end, bool changed);
  // REQUIRES: the stripe of `index`. The page at `index` locked exclusively (or
  // null); with `create`, a new empty page is made if there is none.
  Page* LockExclusive(uint64_t index, bool create);
  // REQUIRES: the stripe of `index` and p->mu exclusively (released here).
  void Unlink(uint64_t index, Page* p);

  CacheBudget* budget_;
  std::atomic<Index*> index_{nullptr};
  std::atomic<uint64_t> generation_{0};
  std::atomic<size_t> count_{0};
};

}  // namespace nfsx::client
