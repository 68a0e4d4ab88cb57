#include "client/page_cache.h"

#include <algorithm>

namespace nfsx::client {

PageSet::~PageSet() {
  Shards* all = shards();
  if (!all) return;
  int64_t bytes = 0;
  for (auto& s : *all) bytes += static_cast<int64_t>(s.pages.size() * kPageSize);
  budget_->Add(-bytes);
  delete all;
}

PageSet::Shards& PageSet::EnsureShards() {
  Shards* all = shards();
  if (all) return *all;
  auto* fresh = new Shards();
  if (shards_.compare_exchange_strong(all, fresh, std::memory_order_acq_rel)) return *fresh;
  delete fresh;  // another thread won; `all` now holds its array
  return *all;
}

size_t PageSet::pages() const {
  size_t n = 0;
  Shards* all = shards();
  if (!all) return 0;
  for (auto& s : *all) {
    std::shared_lock lock(s.mu);
    n += s.pages.size();
  }
  return n;
}

bool PageSet::ReadCached(uint64_t offset, std::span<std::byte> out) {
  uint64_t pos = offset, end = offset + out.size();
  std::byte* dst = out.data();
  while (pos < end) {
    uint64_t index = pos / kPageSize;
    uint32_t b = static_cast<uint32_t>(pos % kPageSize);
    uint32_t e = static_cast<uint32_t>(std::min<uint64_t>(kPageSize, end - index * kPageSize));
    const Shard* s = FindShard(index);
    if (!s) return false;
    std::shared_lock lock(s->mu);
    auto it = s->pages.find(index);
    if (it == s->pages.end() || !it->second->Covers(b, e)) return false;
    Page& p = *it->second;
    std::memcpy(dst, p.data.data() + b, e - b);
    // Only a store when the bit changes: readers of one page do not fight over its line.
    if (!p.referenced.load(std::memory_order_relaxed)) {
      p.referenced.store(true, std::memory_order_relaxed);
    }
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
    const Shard* s = FindShard(index);
    if (!s) return static_cast<int64_t>(index);
    std::shared_lock lock(s->mu);
    auto it = s->pages.find(index);
    if (it == s->pages.end() || !it->second->Covers(b, e)) return static_cast<int64_t>(index);
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
    Shard& s = ShardOf(index);
    std::unique_lock lock(s.mu);
    auto& slot = s.pages[index];
    if (!slot) {
      slot = std::make_unique<Page>();
      budget_->Add(kPageSize);
    }
    Page& p = *slot;
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
    std::memcpy(p.data.data() + b, src, e - b);
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
    Shard& s = ShardOf(index);
    std::unique_lock lock(s.mu);
    // Checked under the shard's lock: InvalidateClean bumps the generation before
    // it takes this lock, and a write bumps write_seq before it does. So either
    // they come after us (and see the page), or we see their bump.
    if (generation_.load(std::memory_order_acquire) != ticket.generation) return;
    bool create = !ticket.write_seq ||
                  ticket.write_seq->load(std::memory_order_acquire) == ticket.write_seq_seen;
    auto it = s.pages.find(index);
    if (it == s.pages.end()) {
      if (!create) continue;
      it = s.pages.emplace(index, std::make_unique<Page>()).first;
      budget_->Add(kPageSize);
    }
    Page& p = *it->second;
    const std::byte* src = data.data() + (pos - offset);
    // The page becomes the read's bytes (zeros past them: `good` may count a short
    // last page as whole), except where it already holds bytes, which are at least
    // as new as the read and are kept in place.
    auto put = [&](size_t from, size_t to) {
      if (from < std::min(to, n))
        std::memcpy(p.data.data() + from, src + from, std::min(to, n) - from);
      if (std::max(from, n) < to)
        std::memset(p.data.data() + std::max(from, n), 0, to - std::max(from, n));
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
    const Shard* s = FindShard(index);
    if (!s) return;
    std::shared_lock lock(s->mu);
    auto it = s->pages.find(index);
    if (it != s->pages.end() && it->second->dirty()) visit(index, *it->second);
  }
}

uint64_t PageSet::MarkClean(uint64_t index, uint32_t version) {
  if (!shards()) return 0;
  Shard& s = ShardOf(index);
  std::unique_lock lock(s.mu);
  auto it = s.pages.find(index);
  if (it == s.pages.end() || it->second->version != version || !it->second->dirty()) return 0;
  Page& p = *it->second;
  uint64_t n = p.dirty_end - p.dirty_begin;
  p.dirty_begin = p.dirty_end = 0;
  return n;
}

void PageSet::InvalidateClean() {
  NewGeneration();  // before the shard locks: see Fill
  Shards* all = shards();
  if (!all) return;
  for (auto& s : *all) {
    std::unique_lock lock(s.mu);
    int64_t freed = 0;
    std::erase_if(s.pages, [&](auto& kv) {
      if (kv.second->dirty()) return false;
      freed += kPageSize;
      return true;
    });
    budget_->Add(-freed);
  }
}

void PageSet::DropRange(uint64_t offset, uint64_t end) {
  if (end <= offset || !shards()) return;
  for (uint64_t index = offset / kPageSize; index <= (end - 1) / kPageSize; ++index) {
    Shard& s = ShardOf(index);
    std::unique_lock lock(s.mu);
    auto it = s.pages.find(index);
    if (it == s.pages.end() || it->second->dirty()) continue;
    s.pages.erase(it);
    budget_->Add(-static_cast<int64_t>(kPageSize));
  }
}

void PageSet::Truncate(uint64_t size) {
  uint64_t keep = (size + kPageSize - 1) / kPageSize;  // pages [0, keep) survive
  Shards* all = shards();
  if (!all) return;
  for (auto& s : *all) {
    std::unique_lock lock(s.mu);
    int64_t freed = 0;
    std::erase_if(s.pages, [&](auto& kv) {
      if (kv.first < keep) return false;
      freed += kPageSize;
      return true;
    });
    budget_->Add(-freed);
  }
  if (size % kPageSize == 0) return;
  uint64_t index = size / kPageSize;
  Shard& s = ShardOf(index);
  std::unique_lock lock(s.mu);
  auto it = s.pages.find(index);
  if (it == s.pages.end()) return;
  Page& p = *it->second;
  uint16_t cut = static_cast<uint16_t>(size % kPageSize);
  std::memset(p.data.data() + cut, 0, kPageSize - cut);
  if (p.valid_end > cut) p.valid_end = std::max(cut, p.valid_begin);
  if (p.valid_end == cut) p.valid_end = kPageSize;  // zeros past EOF are valid
  if (p.dirty_end > cut) p.dirty_end = std::max(cut, p.dirty_begin);
  if (p.dirty_end <= p.dirty_begin) p.dirty_begin = p.dirty_end = 0;
}

size_t PageSet::Evict(size_t target) {
  size_t freed = 0;
  Shards* all = shards();
  if (!all) return 0;
  for (int pass = 0; pass < 2 && freed < target; ++pass) {
    for (auto& s : *all) {
      std::unique_lock lock(s.mu);
      for (auto it = s.pages.begin(); it != s.pages.end() && freed < target;) {
        Page& p = *it->second;
        if (p.dirty()) {
          ++it;
        } else if (p.referenced.load(std::memory_order_relaxed) && pass == 0) {
          p.referenced.store(false, std::memory_order_relaxed);  // a second chance (CLOCK)
          ++it;
        } else {
          it = s.pages.erase(it);
          freed += kPageSize;
        }
      }
    }
  }
  budget_->Add(-static_cast<int64_t>(freed));
  return freed;
}

}  // namespace nfsx::client
