#include "server/open_file_cache.h"

#include <algorithm>

#include "base/logging.h"
#include "server/export_runtime.h"

namespace nfsx::server {
namespace {

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

OpenFileCache::OpenFileCache(WriteVerifiers* verifiers, OpenFileCacheOptions options)
    : verifiers_(verifiers), options_(options) {}

OpenFileCache::~OpenFileCache() { CloseAll(); }

// The deleter runs when the last user lets go, possibly after eviction: that is
// where a deferred write-back error surfaces, so that is where it is recorded.
std::shared_ptr<vfs::OpenFile> OpenFileCache::Wrap(std::unique_ptr<vfs::OpenFile> file,
                                                   const FileState& state) {
  open_.fetch_add(1);
  opens_total_.fetch_add(1);
  std::string key(state.key());
  return std::shared_ptr<vfs::OpenFile>(file.release(), [this, key](vfs::OpenFile* f) {
    // A sync like COMMIT's (WriteVerifiers says why it is bracketed): a COMMIT on a new
    // descriptor beside it would succeed over what this one was told was lost.
    uint64_t ticket = verifiers_->BeginSync(key);
    bool failed = false;
    if (f->writable() && !f->Sync(true)) failed = true;
    if (!f->Close()) failed = true;
    verifiers_->EndSync(key, ticket, failed);
    delete f;
    open_.fetch_sub(1);
  });
}

void OpenFileCache::List(const FileStatePtr& state) {
  if (state->opens().listed.exchange(true)) return;
  std::lock_guard lock(mu_);
  listed_.push_back(state);
}

Result<std::shared_ptr<vfs::OpenFile>> OpenFileCache::Get(const FileStatePtr& state,
                                                          bool writable) {
  FileState::Opens& o = state->opens();
  o.last_use_ns.store(NowNs(), std::memory_order_relaxed);
  std::shared_ptr<vfs::OpenFile> file;
  {
    std::lock_guard lock(o.mu);
    if (o.read_write) return o.read_write;
    if (!writable && o.read_only) return o.read_only;
    auto opened = state->exp().fs->Open(state->node(), writable);
    if (!opened) return std::unexpected(opened.error());
    file = Wrap(std::move(*opened), *state);
    if (writable) {
      o.read_write = file;
      o.read_only.reset();  // the writable one serves reads from now on
    } else {
      o.read_only = file;
    }
  }
  List(state);
  if (open_.load() > options_.max_open) Sweep();
  return file;
}

void OpenFileCache::Release(FileState& state) {
  std::shared_ptr<vfs::OpenFile> ro, rw;
  {
    std::lock_guard lock(state.opens().mu);
    ro = std::move(state.opens().read_only);
    rw = std::move(state.opens().read_write);
  }
  // Dropped here, outside the lock; closes when no READ/WRITE still uses them.
}

void OpenFileCache::Sweep() {
  std::vector<FileStatePtr> live;
  {
    std::lock_guard lock(mu_);
    for (auto& w : listed_) {
      if (auto s = w.lock()) live.push_back(std::move(s));
    }
  }
  std::sort(live.begin(), live.end(), [](const FileStatePtr& a, const FileStatePtr& b) {
    return a->opens().last_use_ns.load() < b->opens().last_use_ns.load();
  });
  int64_t now = NowNs();
  int64_t idle_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(options_.idle_timeout).count();
  size_t excess = open_.load() > options_.max_open ? open_.load() - options_.max_open : 0;
  for (auto& s : live) {
    bool idle = now - s->opens().last_use_ns.load() > idle_ns;
    if (idle || excess > 0) {
      Release(*s);
      s->opens().listed.store(false);
      if (excess > 0) --excess;
    }
  }
  std::lock_guard lock(mu_);
  // Entries listed while we swept stay listed.
  std::erase_if(listed_, [](const std::weak_ptr<FileState>& w) {
    auto s = w.lock();
    return !s || !s->opens().listed.load();
  });
}

void OpenFileCache::CloseAll() {
  std::vector<std::weak_ptr<FileState>> all;
  {
    std::lock_guard lock(mu_);
    all.swap(listed_);
  }
  for (auto& w : all) {
    if (auto s = w.lock()) {
      Release(*s);
      s->opens().listed.store(false);
    }
  }
}

}  // namespace nfsx::server
