// NfsFuse: open files — create, open, read, write, flush, fsync, release.
#include <fcntl.h>

#include <vector>

#include "base/logging.h"
#include "fuse/nfs_fuse.h"

namespace nfsx::fuse {

using client::InodePtr;
using client::WriteMode;
using namespace nfs3;

struct NfsFuse::FileHandle {
  NodePtr node;
  int flags = 0;
  client::ReadAhead ra;
  // The client's pages of this stream before here have been dropped (DropBehind).
  std::atomic<uint64_t> dropped_until{0};
};

namespace {

bool Writable(int flags) { return (flags & O_ACCMODE) != O_RDONLY; }

}  // namespace

Result<void> NfsFuse::CheckOpen(const InodePtr& ino, int flags) {
  // With default_permissions the kernel has checked the mode bits already; but where
  // requests carry their caller's identity the server may still say no (root_squash),
  // so the open asks, as the kernel NFS client does (answers are cached per identity).
  if ((options_.default_permissions && !callers_) || ino->type() != NF3REG) return {};
  uint32_t want = 0;
  if ((flags & O_ACCMODE) != O_WRONLY) want |= ACCESS3_READ;
  if (Writable(flags)) want |= ACCESS3_MODIFY;
  auto granted = core_->Access(ino, want);
  if (!granted) return std::unexpected(granted.error());
  if ((*granted & want) != want) return Fail(EACCES);
  return {};
}

void NfsFuse::Open(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  NodePtr node = NodeOr(req, ino);
  if (!node) return;
  // Counted open before anything else: an unlink or rename over the file from now
  // on hides it rather than delete it, and one already under way, which may have
  // missed the count, is waited for (NodeTable::BeginRemoval).
  auto removals = table_.WatchRemovals();
  table_.Opened(*node);
  auto fail = [&](int err) {
    Close(node);
    fuse_reply_err(req, err);
  };
  auto raced = table_.AwaitRemovals(removals);
  if (!raced) return fail(raced.error().code);
  // Close-to-open: see what other clients did since we last looked. After a racing
  // removal, also whether the file is still there: if it was deleted, ESTALE has the
  // kernel look its name up again (and find it gone).
  if (core_->options().cto || *raced) {
    auto st = core_->GetAttr(node->ino, /*force=*/true);
    if (!st) return fail(st.error().code);
    if (*raced && st->nlink == 0) return fail(ESTALE);
  }
  if (auto r = CheckOpen(node->ino, fi->flags); !r) return fail(r.error().code);
  if ((fi->flags & O_TRUNC) && Writable(fi->flags)) {  // FUSE_CAP_ATOMIC_O_TRUNC
    if (auto r = core_->Truncate(node->ino, 0); !r) return fail(r.error().code);
  }
  // The kernel's pages of the file are good unless someone else changed the
  // file since the kernel last opened it. If so, its attributes (the size
  // above all) are stale too: drop them now, synchronously, so that the first
  // read after this open sees the new size. Attributes only: no page locks are
  // involved, so this cannot deadlock with requests in flight.
  uint64_t changes = node->foreign_changes.load();
  bool unchanged = node->changes_at_open.exchange(changes) == changes;
  if (!unchanged && se_) (void)fuse_lowlevel_notify_inval_inode(se_, ino, -1, 0);
  fi->keep_cache = unchanged;
  fi->direct_io = options_.direct_io;
  auto* h = new FileHandle{node, fi->flags, {}};
  fi->fh = reinterpret_cast<uint64_t>(h);
  if (fuse_reply_open(req, fi) != 0) {  // interrupted: no release will come
    delete h;
    // Uncounted only: nothing may wait on the server after a reply. Should the file
    // have been hidden meanwhile, its hidden name goes at unmount.
    table_.Closed(*node);
  }
}

void NfsFuse::Create(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode,
                     fuse_file_info* fi) {
  NodePtr dir = NodeOr(req, parent);
  if (!dir) return;
  // GUARDED, so that a file another client created meanwhile is opened as it
  // is (O_CREAT without O_EXCL), never re-created or chmod-ed.
  InodePtr ino;
  auto c = core_->Create(dir->ino, name, mode & 07777, /*exclusive=*/true, /*truncate=*/false);
  if (c) {
    ino = *c;
  } else if (c.error().code == EEXIST && !(fi->flags & O_EXCL)) {
    auto l = core_->Lookup(dir->ino, name);
    if (!l) {
      fuse_reply_err(req, l.error().code);
      return;
    }
    ino = *l;
    int err = ino->type() == NF3DIR ? EISDIR : ino->type() != NF3REG ? EEXIST : 0;
    if (!err) {
      if (auto r = CheckOpen(ino, fi->flags); !r) err = r.error().code;
    }
    if (!err && (fi->flags & O_TRUNC) && Writable(fi->flags)) {
      if (auto r = core_->Truncate(ino, 0); !r) err = r.error().code;
    }
    if (err) {
      fuse_reply_err(req, err);
      return;
    }
  } else {
    fuse_reply_err(req, c.error().code);
    return;
  }
  fuse_entry_param e;
  NodePtr node = EntryFor(req, parent, name, ino, &e);
  if (!node) return;
  node->changes_at_open.store(node->foreign_changes.load());
  fi->keep_cache = 1;
  fi->direct_io = options_.direct_io;
  auto* h = new FileHandle{node, fi->flags, {}};
  fi->fh = reinterpret_cast<uint64_t>(h);
  // No removal can race this open as one can race Open: the kernel holds the
  // directory locked for an O_CREAT open, so no unlink or rename in it runs meanwhile.
  table_.Opened(*node);
  if (fuse_reply_create(req, &e, fi) != 0) {
    delete h;
    table_.Closed(*node);  // as in Open
    table_.Forget(node->nodeid, 1);
  }
}

void NfsFuse::Read(fuse_req_t req, size_t size, off_t off, fuse_file_info* fi) {
  auto* h = reinterpret_cast<FileHandle*>(fi->fh);
  // One buffer per worker thread: requests are at most max_read/max_write.
  thread_local std::vector<std::byte> buf;
  if (buf.size() < size) buf.resize(size);
  // O_DIRECT can be set after open (fcntl); the request carries the current flags.
  std::span<std::byte> out(buf.data(), size);
  bool direct = options_.direct_io || (fi->flags & O_DIRECT);
  const InodePtr& ino = h->node->ino;
  if (!direct && ino->dirty_bytes.load() > 0) {
    // Pages past the server's end of file that hold only part of our dirty bytes
    // cannot be filled by a READ; ClientCore::Read would retry and then read
    // around its cache. Sending the dirty bytes first lets one READ fill them.
    if (static_cast<uint64_t>(off) + size > ino->ServerSize()) (void)core_->Flush(ino, false);
  }
  auto n = core_->Read(ino, static_cast<uint64_t>(off), out, direct, direct ? nullptr : &h->ra);
  if (!n) {
    fuse_reply_err(req, n.error().code);
    return;
  }
  // Before the reply: once the kernel has it, a RELEASE on another thread may free `h`.
  if (!direct) DropBehind(*h, static_cast<uint64_t>(off));
  fuse_reply_buf(req, reinterpret_cast<const char*>(buf.data()), *n);
}

void NfsFuse::DropBehind(FileHandle& h, uint64_t offset) {
  // What a sequential reader has read is in the kernel's page cache now (kept across
  // opens until another client changes the file), so the client's copy only costs
  // memory, and fresh memory is slow to fault in. Clean pages well behind the reader
  // go, and the stream reuses them. Random reads and dirty pages are never dropped.
  constexpr uint64_t kBehind = 8 << 20;
  if (h.ra.window.load(std::memory_order_relaxed) == 0 || offset < kBehind) return;
  uint64_t until = offset - kBehind;
  uint64_t from = h.dropped_until.load(std::memory_order_relaxed);
  if (until < from + (1 << 20)) return;  // in steps of at least 1 MiB
  if (!h.dropped_until.compare_exchange_strong(from, until)) return;
  h.node->ino->pages.DropRange(from, until);
}

void NfsFuse::WriteBuf(fuse_req_t req, fuse_bufvec* bufv, off_t off, fuse_file_info* fi) {
  auto* h = reinterpret_cast<FileHandle*>(fi->fh);
  size_t size = fuse_buf_size(bufv);
  std::span<const std::byte> data;
  const fuse_buf& first = bufv->buf[bufv->idx];
  if (bufv->count == 1 && !(first.flags & FUSE_BUF_IS_FD)) {
    data = {static_cast<const std::byte*>(first.mem) + bufv->off, size};
  } else {
    // Spliced from the kernel (a pipe): one copy into memory, as a read() would.
    thread_local std::vector<std::byte> buf;
    if (buf.size() < size) buf.resize(size);
    fuse_bufvec dst{};
    dst.count = 1;
    dst.buf[0].size = size;
    dst.buf[0].mem = buf.data();
    ssize_t got = fuse_buf_copy(&dst, bufv, static_cast<fuse_buf_copy_flags>(0));
    if (got < 0) {
      fuse_reply_err(req, static_cast<int>(-got));
      return;
    }
    data = {buf.data(), static_cast<size_t>(got)};
  }
  const InodePtr& ino = h->node->ino;
  Result<size_t> n;
  if (fi->writepage) {
    // Write-back of the kernel's page cache (mmap, or the write-back cache):
    // positional whatever the flags of the file it came through.
    n = core_->Write(ino, static_cast<uint64_t>(off), data, WriteMode::kBuffered);
  } else if (fi->flags & O_APPEND) {
    // At the server's end of file, as one FILE_SYNC WRITE (seed 001). If that is
    // not where the kernel thought the end was (another client appended), the
    // kernel cached these bytes at the wrong place: have it drop them.
    auto at = core_->Append(ino, data);
    if (at && *at != static_cast<uint64_t>(off)) OnForeignChange(ino);
    n = at ? Result<size_t>(data.size()) : std::unexpected(at.error());
  } else if (options_.direct_io || (fi->flags & O_DIRECT)) {
    n = core_->Write(ino, static_cast<uint64_t>(off), data, WriteMode::kDirect);
  } else if (fi->flags & (O_SYNC | O_DSYNC)) {
    n = core_->Write(ino, static_cast<uint64_t>(off), data, WriteMode::kSync);
  } else {
    n = core_->Write(ino, static_cast<uint64_t>(off), data, WriteMode::kBuffered);
  }
  if (!n) {
    fuse_reply_err(req, n.error().code);
    return;
  }
  fuse_reply_write(req, *n);
}

void NfsFuse::Flush(fuse_req_t req, fuse_file_info* fi) {
  auto* h = reinterpret_cast<FileHandle*>(fi->fh);
  // Close-to-open: what was written is on the server's disk before close()
  // returns, and a write-back error is reported by close().
  Result<void> r;
  if (Writable(h->flags) || h->node->ino->dirty_bytes.load() > 0) {
    r = core_->Flush(h->node->ino, /*commit=*/true);
  }
  fuse_reply_err(req, r ? 0 : r.error().code);
}

void NfsFuse::Fsync(fuse_req_t req, fuse_file_info* fi) {
  auto* h = reinterpret_cast<FileHandle*>(fi->fh);
  auto r = core_->Flush(h->node->ino, /*commit=*/true);
  fuse_reply_err(req, r ? 0 : r.error().code);
}

void NfsFuse::Release(fuse_req_t req, fuse_file_info* fi) {
  auto* h = reinterpret_cast<FileHandle*>(fi->fh);
  NodePtr node = std::move(h->node);
  delete h;
  // Pages of a shared mapping may have been written back after the last close.
  if (node->ino->dirty_bytes.load() > 0) {
    // RELEASE has no caller to tell: the next fsync/close of the file reports it.
    if (auto r = core_->Flush(node->ino, true, /*keep_error=*/true); !r) {
      log::Warn("fuse: write-back of file {} at release: {} (kept for the next fsync/close)",
                node->ino->fileid(), ErrorString(r.error()));
    }
  }
  Close(node);
  fuse_reply_err(req, 0);
}

void NfsFuse::Close(const NodePtr& node) {
  if (!table_.Closed(*node)) return;
  bool hidden;
  {
    std::lock_guard lock(node->hidden_mu);
    hidden = !node->hidden.empty();
  }
  if (hidden) ForgetHidden(node);
}

}  // namespace nfsx::fuse
