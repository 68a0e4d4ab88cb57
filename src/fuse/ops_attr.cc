// NfsFuse: attributes, permissions, file system statistics, and the control
// attributes of the mount's root (docs/fuse.md).
#include <fmt/format.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cstring>

#include "fuse/nfs_fuse.h"

namespace nfsx::fuse {

using namespace nfs3;

void NfsFuse::GetAttr(fuse_req_t req, fuse_ino_t ino) {
  NodePtr node = NodeOr(req, ino);
  if (!node) return;
  auto s = core_->GetAttr(node->ino);
  if (!s) {
    fuse_reply_err(req, s.error().code);
    return;
  }
  struct stat st;
  FillAttr(*s, *node, &st);
  fuse_reply_attr(req, &st, AttrTimeout(*node->ino));
}

uint32_t NfsFuse::KillPrivBits(fuse_req_t req, const Node& node, uint32_t new_mode) {
  // Before a user's write or truncation the kernel clears setuid/setgid by a chmod as
  // that user. Only the owner may chmod, so the server would refuse it and the write
  // would fail. The server clears those bits itself when a user writes or truncates
  // (as knfsd does for the kernel NFS client), so such a chmod is left out. libfuse
  // 3.14 cannot ask for FUSE_HANDLE_KILLPRIV_V2, which would tell us so directly.
  // Only with default_permissions: the kernel then refuses a user's own chmod of a file
  // they do not own, so such a chmod that reaches us can only be the kernel's.
  constexpr uint32_t kSetIds = 06000;
  const fuse_ctx* ctx = fuse_req_ctx(req);
  if (!callers_ || !options_.default_permissions || ctx->uid == 0) return 0;
  auto cur = core_->GetAttr(node.ino);
  if (!cur || ctx->uid == cur->uid) return 0;
  uint32_t dropped = cur->mode & ~new_mode;
  bool only_dropped_set_ids =
      dropped != 0 && (dropped & ~kSetIds) == 0 && (new_mode & ~cur->mode) == 0;
  return only_dropped_set_ids ? dropped : 0;
}

void NfsFuse::SetAttr(fuse_req_t req, fuse_ino_t ino, const struct stat* attr, int to_set) {
  NodePtr node = NodeOr(req, ino);
  if (!node) return;
  SetAttrs a;
  if (to_set & FUSE_SET_ATTR_MODE) a.mode = attr->st_mode & 07777;
  if (to_set & FUSE_SET_ATTR_UID) a.uid = attr->st_uid;
  if (to_set & FUSE_SET_ATTR_GID) a.gid = attr->st_gid;
  if (to_set & FUSE_SET_ATTR_SIZE) a.size = static_cast<uint64_t>(attr->st_size);
  if (to_set & FUSE_SET_ATTR_ATIME_NOW) {
    a.atime_how = SetAttrs::Time::kNow;
  } else if (to_set & FUSE_SET_ATTR_ATIME) {
    a.atime_how = SetAttrs::Time::kGiven;
    a.atime = {attr->st_atim.tv_sec, static_cast<uint32_t>(attr->st_atim.tv_nsec)};
  }
  if (to_set & FUSE_SET_ATTR_MTIME_NOW) {
    a.mtime_how = SetAttrs::Time::kNow;
  } else if (to_set & FUSE_SET_ATTR_MTIME) {
    a.mtime_how = SetAttrs::Time::kGiven;
    a.mtime = {attr->st_mtim.tv_sec, static_cast<uint32_t>(attr->st_mtim.tv_nsec)};
  }
  // FUSE_SET_ATTR_CTIME alone (the kernel's own bookkeeping) changes nothing here.
  uint32_t killed = a.mode ? KillPrivBits(req, *node, *a.mode) : 0;
  if (killed) a.mode.reset();
  bool rest = a.mode || a.uid || a.gid || a.size || a.atime_how != SetAttrs::Time::kKeep ||
              a.mtime_how != SetAttrs::Time::kKeep;
  auto s = rest || !killed ? core_->SetAttr(node->ino, a) : core_->GetAttr(node->ino);
  if (s) s->mode &= ~killed;
  if (!s) {
    fuse_reply_err(req, s.error().code);
    return;
  }
  struct stat st;
  FillAttr(*s, *node, &st);
  fuse_reply_attr(req, &st, AttrTimeout(*node->ino));
}

void NfsFuse::Access(fuse_req_t req, fuse_ino_t ino, int mask) {
  NodePtr node = NodeOr(req, ino);
  if (!node) return;
  if (mask == F_OK) {
    fuse_reply_err(req, 0);
    return;
  }
  // The Linux NFS client's mapping of MAY_* onto ACCESS3 bits.
  bool dir = node->ino->type() == NF3DIR;
  uint32_t read = ACCESS3_READ;
  uint32_t write = ACCESS3_MODIFY | ACCESS3_EXTEND | (dir ? ACCESS3_DELETE : 0);
  uint32_t exec = dir ? ACCESS3_LOOKUP : ACCESS3_EXECUTE;
  uint32_t want =
      ((mask & R_OK) ? read : 0) | ((mask & W_OK) ? write : 0) | ((mask & X_OK) ? exec : 0);
  auto granted = core_->Access(node->ino, want);
  if (!granted) {
    fuse_reply_err(req, granted.error().code);
    return;
  }
  bool ok = (!(mask & R_OK) || (*granted & read)) && (!(mask & W_OK) || (*granted & write)) &&
            (!(mask & X_OK) || (*granted & exec));
  fuse_reply_err(req, ok ? 0 : EACCES);
}

void NfsFuse::StatFs(fuse_req_t req) {
  auto fs = core_->StatFs();
  if (!fs) {
    fuse_reply_err(req, fs.error().code);
    return;
  }
  constexpr uint64_t kFrag = 4096;
  struct statvfs sv;
  std::memset(&sv, 0, sizeof(sv));
  sv.f_bsize = blksize_;
  sv.f_frsize = kFrag;
  sv.f_blocks = fs->total_bytes / kFrag;
  sv.f_bfree = fs->free_bytes / kFrag;
  sv.f_bavail = fs->avail_bytes / kFrag;
  sv.f_files = fs->total_files;
  sv.f_ffree = fs->free_files;
  sv.f_favail = fs->avail_files;
  sv.f_namemax = 255;
  fuse_reply_statfs(req, &sv);
}

Result<void> NfsFuse::Sync() { return core_->SyncAll(); }

std::string NfsFuse::StatsText() {
  WireStats s = core_->stats();
  std::string out = fmt::format("nfsx mount of {}\n\n", source_);
  out += FormatNfsstat(s);
  out += fmt::format(
      "\nClient data:\nwrite_bytes  read_bytes   read_landed  resent_bytes commit_ahead retrans    "
      "reconnects\n{:<12} {:<12} {:<12} {:<12} {:<12} {:<10} {}\n",
      s.write_bytes, s.read_bytes, s.read_bytes_landed, s.resent_bytes, s.commits_ahead,
      s.retransmits, s.reconnects);
  out += fmt::format(
      "\nCache coherence:\nforeign_changes kernel_invalidations inodes_known\n{:<15} {:<20} {}\n",
      s.invalidations, invalidator_.sent(), table_.size());
  return out;
}

void NfsFuse::GetXattr(fuse_req_t req, fuse_ino_t ino, const char* name, size_t size) {
  std::string value;
  if (ino != FUSE_ROOT_ID || std::strncmp(name, "user.nfsx.", 10) != 0) {
    // NFSv3 has no extended attributes.
    fuse_reply_err(req, EOPNOTSUPP);
    return;
  }
  if (std::strcmp(name, kStatsXattr) == 0) {
    value = StatsText();
  } else if (std::strcmp(name, kPidXattr) == 0) {
    value = std::to_string(getpid());
  } else if (std::strcmp(name, kSyncXattr) == 0) {
    if (auto r = Sync(); !r) {
      fuse_reply_err(req, r.error().code);
      return;
    }
    value = "ok";
  } else {
    fuse_reply_err(req, ENODATA);
    return;
  }
  if (size == 0) {
    // The statistics grow between the size query and the read: leave room.
    fuse_reply_xattr(req, value.size() + 4096);
  } else if (size < value.size()) {
    fuse_reply_err(req, ERANGE);
  } else {
    fuse_reply_buf(req, value.data(), value.size());
  }
}

void NfsFuse::ListXattr(fuse_req_t req, size_t size) {
  // The control attributes stay unlisted so that `cp -a` and rsync -X of the
  // mount root do not copy them.
  if (size == 0) {
    fuse_reply_xattr(req, 0);
  } else {
    fuse_reply_buf(req, nullptr, 0);
  }
}

}  // namespace nfsx::fuse
