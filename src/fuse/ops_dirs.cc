// NfsFuse: directory listings (readdir and readdirplus over one snapshot).
#include <mutex>

#include "fuse/dir_listing.h"
#include "fuse/nfs_fuse.h"
#include "fuse/type_bits.h"

namespace nfsx::fuse {

struct NfsFuse::DirHandle {
  std::mutex mu;  // the kernel serialises readdir per open directory; this is cheap insurance
  bool loaded = false;
  std::vector<DirItem> items;  // GUARDED_BY(mu)
};

namespace {

mode_t DirentType(const DirItem& item) { return item.type_known ? TypeBits(item.type) : 0; }

}  // namespace

void NfsFuse::OpenDir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  if (!NodeOr(req, ino)) return;
  auto* d = new DirHandle;
  fi->fh = reinterpret_cast<uint64_t>(d);
  if (fuse_reply_open(req, fi) != 0) delete d;
}

void NfsFuse::ReleaseDir(fuse_req_t req, fuse_file_info* fi) {
  delete reinterpret_cast<DirHandle*>(fi->fh);
  fuse_reply_err(req, 0);
}

void NfsFuse::ReadDir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi,
                      bool plus) {
  NodePtr dir = NodeOr(req, ino);
  if (!dir) return;
  auto* d = reinterpret_cast<DirHandle*>(fi->fh);
  std::vector<char> buf(size);
  std::vector<uint64_t> refs;  // lookups this reply hands the kernel
  size_t used = 0;
  int err = 0;
  {
    // The reply goes out only after this lock is released: once the kernel has
    // it, a RELEASEDIR may delete `d` (and its mutex) on another thread.
    std::lock_guard lock(d->mu);
    // Offset 0 again is a rewinddir(): POSIX wants the directory as it is now.
    if (!d->loaded || off == 0) {
      auto items = ListDirectory(*core_, dir->ino);
      if (items) {
        d->items = std::move(*items);
        d->loaded = true;
      } else {
        err = items.error().code;
      }
    }
    if (!err) used = FillDirBuffer(req, ino, dir, *d, off, plus, buf, &refs);
  }
  if (err) {
    fuse_reply_err(req, err);
    return;
  }
  if (fuse_reply_buf(req, buf.data(), used) != 0) {
    for (uint64_t id : refs) table_.Forget(id, 1);
  }
}

size_t NfsFuse::FillDirBuffer(fuse_req_t req, fuse_ino_t ino, const NodePtr& dir,
                              const DirHandle& d, off_t off, bool plus, std::span<char> buf,
                              std::vector<uint64_t>* refs) {
  const size_t size = buf.size();
  size_t used = 0;
  for (size_t i = static_cast<size_t>(off); i < d.items.size(); ++i) {
    const DirItem& item = d.items[i];
    auto next = static_cast<off_t>(i + 1);
    fuse_entry_param e{};
    e.attr.st_mode = DirentType(item);
    e.attr.st_ino = i == 0 ? dir->ino_number : item.ino ? table_.PeekIno(item.ino) : item.fileid;
    if (!plus) {
      size_t need =
          fuse_add_direntry(req, buf.data() + used, size - used, item.name.c_str(), &e.attr, next);
      if (need > size - used) break;
      used += need;
      continue;
    }
    // "." and ".." are never linked by the kernel; entries without a handle are
    // listed without attributes (the kernel looks them up when used).
    bool link = item.ino && i >= 2;
    size_t need = fuse_add_direntry_plus(req, nullptr, 0, item.name.c_str(), &e, next);
    if (need > size - used) break;
    if (link) {
      auto st = core_->GetAttr(item.ino);
      if (st) {
        NodePtr node = table_.Ref(item.ino);
        refs->push_back(node->nodeid);
        e.ino = node->nodeid;
        e.generation = node->generation;
        FillAttr(*st, *node, &e.attr);
        e.attr_timeout = AttrTimeout(*item.ino);
        e.entry_timeout = EntryTimeout();
        table_.NoteName(ino, item.name, node->nodeid);
      }
    }
    used +=
        fuse_add_direntry_plus(req, buf.data() + used, size - used, item.name.c_str(), &e, next);
  }
  return used;
}

}  // namespace nfsx::fuse
