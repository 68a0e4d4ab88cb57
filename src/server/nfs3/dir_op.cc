#include "server/nfs3/dir_op.h"

namespace nfsx::server::nfs3proc {

DirOp::DirOp(Core& core, const nfs_fh3& dir, const std::string& name, const Ctx& ctx)
    : core_(core) {
  auto r = core.Resolve(dir, ctx);
  if (!r) {
    status_ = r.error();
    return;
  }
  dir_ = std::move(r->file);
  caller_ = r->caller;
  modification_.emplace(*dir_);
  pre_ = core.AttrLocked(*dir_);
  if (!pre_) {
    status_ = StatusOf(pre_.error());
  } else if (pre_->type != vfs::FileType::kDirectory) {
    status_ = NFS3ERR_NOTDIR;
  } else if (nfsstat3 bad = CheckName(name); bad != NFS3_OK) {
    status_ = bad;
  } else if (caller_.read_only()) {
    status_ = NFS3ERR_ROFS;
  } else if (!Permits(caller_.who, *pre_, kWrite | kExec)) {
    status_ = NFS3ERR_ACCES;
  }
}

vfs::Owner DirOp::NewOwner() const {
  vfs::Owner owner{caller_.who.uid, caller_.who.gid};
  if (pre_ && (pre_->mode & 02000)) owner.gid = pre_->gid;
  return owner;
}

nfsstat3 DirOp::Sync() {
  if (!caller_.options->sync) return NFS3_OK;
  auto synced = core_.SyncMetadata(dir_);
  return synced ? NFS3_OK : StatusOf(synced.error());
}

wcc_data DirOp::Wcc(bool changed) {
  if (!dir_) return {};
  uint8_t changes = changed ? (TimeOverlay::kMtime | TimeOverlay::kCtime) : TimeOverlay::kNone;
  return {Core::PreOpAttr(pre_), core_.PostOpAttrLocked(*dir_, changes)};
}

}  // namespace nfsx::server::nfs3proc
