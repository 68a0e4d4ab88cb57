// NfsFuse: names — lookup and forget, creating and removing directory entries.
#include <fmt/format.h>
#include <sys/sysmacros.h>

#include "base/logging.h"
#include "fuse/nfs_fuse.h"

namespace nfsx::fuse {

using client::InodePtr;
using namespace nfs3;

void NfsFuse::Lookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
  NodePtr dir = NodeOr(req, parent);
  if (!dir) return;
  auto r = core_->Lookup(dir->ino, name);
  if (r) {
    ReplyEntry(req, parent, name, *r);
    return;
  }
  if (r.error().code == ENOENT && EntryTimeout() > 0) {
    // A negative entry: the kernel remembers the name is absent for as long as
    // it would remember a present one (Linux NFS's lookupcache=all).
    fuse_entry_param e{};
    e.entry_timeout = EntryTimeout();
    table_.NoteName(parent, name, 0);
    fuse_reply_entry(req, &e);
    return;
  }
  fuse_reply_err(req, r.error().code);
}

void NfsFuse::Forget(fuse_ino_t ino, uint64_t nlookup) { table_.Forget(ino, nlookup); }

void NfsFuse::Readlink(fuse_req_t req, fuse_ino_t ino) {
  NodePtr node = NodeOr(req, ino);
  if (!node) return;
  auto target = core_->Readlink(node->ino);
  if (!target) {
    fuse_reply_err(req, target.error().code);
    return;
  }
  fuse_reply_readlink(req, target->c_str());
}

void NfsFuse::Mknod(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode, dev_t rdev) {
  NodePtr dir = NodeOr(req, parent);
  if (!dir) return;
  Result<InodePtr> r;
  uint32_t perm = mode & 07777;
  switch (mode & S_IFMT) {
    case S_IFREG:
      r = core_->Create(dir->ino, name, perm, /*exclusive=*/true, /*truncate=*/false);
      break;
    case S_IFIFO:
      r = core_->Mknod(dir->ino, name, FileType::kFifo, perm, 0, 0);
      break;
    case S_IFSOCK:
      r = core_->Mknod(dir->ino, name, FileType::kSocket, perm, 0, 0);
      break;
    case S_IFCHR:
      r = core_->Mknod(dir->ino, name, FileType::kCharDevice, perm, major(rdev), minor(rdev));
      break;
    case S_IFBLK:
      r = core_->Mknod(dir->ino, name, FileType::kBlockDevice, perm, major(rdev), minor(rdev));
      break;
    default:
      fuse_reply_err(req, EINVAL);
      return;
  }
  if (!r) {
    fuse_reply_err(req, r.error().code);
    return;
  }
  ReplyEntry(req, parent, name, *r);
}

void NfsFuse::Mkdir(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode) {
  NodePtr dir = NodeOr(req, parent);
  if (!dir) return;
  auto r = core_->Mkdir(dir->ino, name, mode & 07777);
  if (!r) {
    fuse_reply_err(req, r.error().code);
    return;
  }
  ReplyEntry(req, parent, name, *r);
}

void NfsFuse::Symlink(fuse_req_t req, const char* target, fuse_ino_t parent, const char* name) {
  NodePtr dir = NodeOr(req, parent);
  if (!dir) return;
  auto r = core_->Symlink(dir->ino, name, target);
  if (!r) {
    fuse_reply_err(req, r.error().code);
    return;
  }
  ReplyEntry(req, parent, name, *r);
}

void NfsFuse::Link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t parent, const char* name) {
  NodePtr node = NodeOr(req, ino);
  if (!node) return;
  NodePtr dir = NodeOr(req, parent);
  if (!dir) return;
  if (auto r = core_->Link(node->ino, dir->ino, name); !r) {
    fuse_reply_err(req, r.error().code);
    return;
  }
  // The new name is the same node, so both names show the same st_ino; a fresh
  // GETATTR makes sure both show the new link count even from a server that left
  // the file's attributes out of the LINK reply.
  (void)core_->GetAttr(node->ino, /*force=*/true);
  ReplyEntry(req, parent, name, node->ino);
}

NodePtr NfsFuse::Cached(fuse_ino_t parent, const std::string& name) {
  uint64_t id = table_.FindName(parent, name);
  return id ? table_.Get(id) : nullptr;
}

Result<NodePtr> NfsFuse::ToHide(const NodePtr& dir, const std::string& name,
                                const NodePtr& cached) {
  // Nothing is open through the mount, so nothing needs hiding. (An open that has
  // not been counted yet waits for this removal: the caller holds a removal ticket.)
  if (table_.open_files() == 0) return nullptr;
  // The name is a file the kernel knows and nobody has open. (The cache follows the
  // kernel's dentries; as with the Linux client, a name that another client has
  // since pointed at a file open here is not noticed.)
  if (cached && (cached->opens.load() == 0 || cached->ino->type() != NF3REG)) return nullptr;
  // Ask the server which file the name is: the cache may not know the name (it
  // starts over past max_names names while the kernel keeps its dentries), and the
  // open file it knew may no longer be the one under it.
  auto now = core_->Lookup(dir->ino, name);
  if (!now) {
    if (now.error().code == ENOENT) return nullptr;
    return std::unexpected(now.error());
  }
  // A file the kernel holds no node for is open nowhere in this mount: an open needs
  // the node first, and an open from now on waits for this removal.
  NodePtr node = table_.Find(now->get());
  if (!node || node->opens.load() == 0 || node->ino->type() != NF3REG) return nullptr;
  // Only the last link matters.
  auto st = core_->GetAttr(node->ino);
  if (!st) return std::unexpected(st.error());
  return st->nlink <= 1 ? node : nullptr;
}

Result<std::string> NfsFuse::Hide(const NodePtr& dir, const std::string& name,
                                  const NodePtr& victim) {
  // The server would delete the file and its open descriptors would get ESTALE:
  // keep it under a hidden name until its last close, as the Linux NFS client does.
  std::string hidden_name =
      fmt::format(".nfsx{:016x}.{:04x}", victim->ino->fileid(), hide_counter_.fetch_add(1));
  if (auto r = core_->Rename(dir->ino, name, dir->ino, hidden_name); !r) {
    return std::unexpected(r.error());
  }
  {
    std::lock_guard lock(victim->hidden_mu);
    victim->hidden.emplace_back(dir->ino, hidden_name);
  }
  victim->unlinked.store(true);
  {
    std::lock_guard lock(hidden_mu_);
    hidden_.insert(victim);
  }
  // The file may have been closed meanwhile, without seeing the hidden name.
  if (victim->opens.load() == 0) ForgetHidden(victim);
  return hidden_name;
}

void NfsFuse::Unhide(const NodePtr& dir, const std::string& hidden_name, const std::string& name,
                     const NodePtr& victim) {
  {
    std::lock_guard lock(victim->hidden_mu);
    std::erase_if(victim->hidden, [&](const auto& h) { return h.second == hidden_name; });
    if (victim->hidden.empty()) victim->unlinked.store(false);
  }
  if (auto r = core_->Rename(dir->ino, hidden_name, dir->ino, name); !r) {
    log::Warn("fuse: could not restore {} from {}: {}", name, hidden_name, ErrorString(r.error()));
  }
}

void NfsFuse::ForgetHidden(const NodePtr& node) {
  std::vector<std::pair<InodePtr, std::string>> names;
  {
    std::lock_guard lock(node->hidden_mu);
    names.swap(node->hidden);
  }
  for (auto& [dir, name] : names) {
    if (auto r = core_->Remove(dir, name); !r) {
      log::Warn("fuse: removing hidden {} of an unlinked file: {}", name, ErrorString(r.error()));
    }
  }
  std::lock_guard lock(hidden_mu_);
  hidden_.erase(node);
}

void NfsFuse::Unlink(fuse_req_t req, fuse_ino_t parent, const char* name) {
  NodePtr dir = NodeOr(req, parent);
  if (!dir) return;
  NodeTable::Removal removal(table_);  // before any open count is read
  NodePtr cached = Cached(parent, name);
  auto victim = ToHide(dir, name, cached);
  if (!victim) {
    fuse_reply_err(req, victim.error().code);
    return;
  }
  bool hidden = *victim != nullptr;
  Result<void> r;
  if (hidden) {
    if (auto h = Hide(dir, name, *victim); !h) r = std::unexpected(h.error());
  } else {
    r = core_->Remove(dir->ino, name);
  }
  if (r) {
    table_.DropName(parent, name);
    // Its other names must show one link fewer: the REMOVE reply says nothing of it.
    if (cached && !hidden) cached->ino->ExpireAttr();
  }
  fuse_reply_err(req, r ? 0 : r.error().code);
}

void NfsFuse::Rmdir(fuse_req_t req, fuse_ino_t parent, const char* name) {
  NodePtr dir = NodeOr(req, parent);
  if (!dir) return;
  auto r = core_->Rmdir(dir->ino, name);
  if (r) table_.DropName(parent, name);
  fuse_reply_err(req, r ? 0 : r.error().code);
}

void NfsFuse::Rename(fuse_req_t req, fuse_ino_t parent, const char* name, fuse_ino_t newparent,
                     const char* newname, unsigned flags) {
  // NFSv3 RENAME has no NOREPLACE or EXCHANGE; EINVAL as from the Linux NFS
  // client, and callers such as mv fall back to a plain rename.
  if (flags != 0) {
    fuse_reply_err(req, EINVAL);
    return;
  }
  NodePtr from = NodeOr(req, parent);
  if (!from) return;
  NodePtr to = NodeOr(req, newparent);
  if (!to) return;
  NodeTable::Removal removal(table_);  // before any open count is read
  NodePtr moved = Cached(parent, name);
  NodePtr replaced = Cached(newparent, newname);
  if (replaced && replaced == moved) replaced = nullptr;  // two names of one file
  std::string hidden_name;
  auto victim = ToHide(to, newname, replaced);
  if (!victim) {
    fuse_reply_err(req, victim.error().code);
    return;
  }
  if (*victim) {
    // The file renamed over is open: hide it first so that its descriptors keep working.
    auto h = Hide(to, newname, *victim);
    if (!h) {
      fuse_reply_err(req, h.error().code);
      return;
    }
    hidden_name = *h;
  }
  auto r = core_->Rename(from->ino, name, to->ino, newname);
  if (!r) {
    if (!hidden_name.empty()) Unhide(to, hidden_name, newname, *victim);
    fuse_reply_err(req, r.error().code);
    return;
  }
  table_.DropName(parent, name);
  table_.DropName(newparent, newname);
  if (moved) {
    table_.NoteName(newparent, newname, moved->nodeid);
    moved->ino->ExpireAttr();  // servers move ctime on rename
  }
  if (replaced) replaced->ino->ExpireAttr();
  fuse_reply_err(req, 0);
}

}  // namespace nfsx::fuse
