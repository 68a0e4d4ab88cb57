// RFC 1813 §3.3.2 SETATTR.
#include "server/nfs3/procedures.h"

namespace nfsx::server::nfs3proc {

SETATTR3res Setattr(Core& core, const SETATTR3args& args, const Ctx& ctx) {
  SETATTR3res res;
  auto r = core.Resolve(args.object, ctx);
  if (!r) {
    res.status = r.error();
    return res;
  }
  FileState& file = *r->file;
  const Caller& caller = r->caller;
  FileState::Modification modification(file);
  auto pre = core.AttrLocked(file);
  auto fail = [&](nfsstat3 status) {
    res.status = status;
    res.resfail.obj_wcc = {Core::PreOpAttr(pre), core.PostOpAttrLocked(file)};
    return res;
  };
  if (!pre) return fail(StatusOf(pre.error()));
  if (caller.read_only()) return fail(NFS3ERR_ROFS);
  if (args.guard) {
    nfstime3 ctime{static_cast<uint32_t>(pre->ctime.sec), pre->ctime.nsec};
    if (ctime != *args.guard) return fail(NFS3ERR_NOT_SYNC);
  }
  vfs::SetAttr change = FromSattr3(args.new_attributes);
  if (change.size && pre->type != vfs::FileType::kRegular) {
    return fail(pre->type == vfs::FileType::kDirectory ? NFS3ERR_ISDIR : NFS3ERR_INVAL);
  }
  if (int err = CheckSetAttr(caller.who, *pre, change)) return fail(NfsStatFromErrno(err));
  LimitSetgidOfChmod(caller.who, *pre, &change);
  if (change.size && !change.mode) change.mode = ModeAfterDataChange(caller.who, *pre);
  if (auto done = file.exp().fs->SetAttr(file.node(), change); !done) {
    return fail(StatusOf(done.error()));
  }
  if (caller.options->sync) {
    if (auto synced = core.SyncMetadata(r->file); !synced) return fail(StatusOf(synced.error()));
  }
  using T = vfs::SetAttr::Time;
  uint8_t changes = TimeOverlay::kCtime;
  if (change.size || change.mtime_how == T::kServerNow) changes |= TimeOverlay::kMtime;
  if (change.mtime_how == T::kGiven) changes |= TimeOverlay::kMtimeExact;
  res.resok.obj_wcc = {Core::PreOpAttr(pre), core.PostOpAttrLocked(file, changes)};
  return res;
}

}  // namespace nfsx::server::nfs3proc
