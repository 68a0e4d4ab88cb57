// RFC 1813 §3.3.7 WRITE and §3.3.21 COMMIT.
#include "base/logging.h"
#include "server/nfs3/procedures.h"

namespace nfsx::server::nfs3proc {

WRITE3res Write(Core& core, const WRITE3args& args, const Ctx& ctx) {
  WRITE3res res;
  auto r = core.Resolve(args.file, ctx);
  if (!r) {
    res.status = r.error();
    return res;
  }
  const FileStatePtr& file = r->file;
  std::shared_ptr<vfs::OpenFile> to_sync;  // set for DATA_SYNC and FILE_SYNC
  // Taken before the data lands: a sync that fails after that point may lose it, and
  // the rotation it causes must reach the client as a different verifier at COMMIT.
  nfs3::writeverf3 verf;
  {
    FileState::Modification change(*file);
    auto pre = core.AttrLocked(*file);
    auto fail = [&](nfsstat3 status) {
      res.status = status;
      res.resfail.wcc = {Core::PreOpAttr(pre), core.PostOpAttrLocked(*file)};
      return res;
    };
    if (!pre) return fail(StatusOf(pre.error()));
    if (r->caller.read_only()) return fail(NFS3ERR_ROFS);
    if (pre->type != vfs::FileType::kRegular) {
      return fail(pre->type == vfs::FileType::kDirectory ? NFS3ERR_ISDIR : NFS3ERR_INVAL);
    }
    if (args.count != args.data.bytes.size()) return fail(NFS3ERR_INVAL);
    if (!PermitsData(r->caller.who, *pre, kWrite)) return fail(NFS3ERR_ACCES);
    auto open = core.open_files().Get(file, true);
    if (!open) return fail(StatusOf(open.error()));
    verf = core.verifiers().Verifier(file->key());
    auto n = (*open)->Write(args.offset, args.data.bytes);
    if (!n) return fail(StatusOf(n.error()));
    if (auto mode = ModeAfterDataChange(r->caller.who, *pre)) {
      vfs::SetAttr kill;
      kill.mode = *mode;
      if (auto done = file->exp().fs->SetAttr(file->node(), kill); !done) {
        log::Warn("WRITE: cannot clear setuid/setgid: {}", std::strerror(done.error().code));
      }
    }
    res.resok.file_wcc = {Core::PreOpAttr(pre),
                          core.PostOpAttrLocked(*file, TimeOverlay::kMtime | TimeOverlay::kCtime)};
    res.resok.count = static_cast<uint32_t>(*n);
    if (args.stable != UNSTABLE) to_sync = *open;
  }
  // The sync changes nothing clients see, so it runs after the modification:
  // observations of the file need not wait for the disk.
  // Never claim a stability that was not reached: if the sync fails, or another sync of
  // the file failed after the data landed (fsync(2) tells the error to one of them), the
  // reply is an error and the verifier has rotated, so clients resend what they wrote.
  res.resok.committed = UNSTABLE;
  res.resok.verf = verf;
  if (to_sync) {
    auto synced = core.SyncData(*file, *to_sync, args.stable == DATA_SYNC);
    if (!synced || *synced != verf) {
      res.status = synced ? NFS3ERR_IO : StatusOf(synced.error());
      log::Warn("WRITE: {}", synced ? "a sync of the file failed while the data went to disk"
                                    : std::strerror(synced.error().code));
      res.resfail.wcc = res.resok.file_wcc;
      return res;
    }
    res.resok.committed = args.stable;
  }
  return res;
}

COMMIT3res Commit(Core& core, const COMMIT3args& args, const Ctx& ctx) {
  COMMIT3res res;
  auto r = core.Resolve(args.file, ctx);
  if (!r) {
    res.status = r.error();
    return res;
  }
  const FileStatePtr& file = r->file;
  // The node's type, not a stat: nothing before the sync waits for a WRITE under way.
  if (vfs::FileType type = file->node().type(); type != vfs::FileType::kRegular) {
    res.status = type == vfs::FileType::kDirectory ? NFS3ERR_ISDIR : NFS3ERR_INVAL;
    return res;
  }
  // The whole file is synced whatever range was asked: cheaper than tracking ranges.
  // Not under the op lock, so WRITEs to the file go on during a slow fsync.
  auto open = core.open_files().Get(file, false);
  if (!open) core.verifiers().Rotate(file->key());
  auto synced = open ? core.SyncData(*file, **open, true)
                     : Result<nfs3::writeverf3>(std::unexpected(open.error()));
  if (!synced) log::Warn("COMMIT: sync failed: {}", std::strerror(synced.error().code));
  // COMMIT changes nothing a client caches: report an empty interval taken
  // atomically, so it cannot be mistaken for someone else's change.
  auto now = core.Attr(*file);
  wcc_data wcc{Core::PreOpAttr(now),
               now ? post_op_attr(core.ToFattr3(*now, file->exp())) : std::nullopt};
  // A file removed behind our back is stale, as the stat before the sync used to say.
  if (!synced || !now) {
    res.status = StatusOf(synced ? now.error() : synced.error());
    res.resfail.wcc = wcc;
    return res;
  }
  res.resok.file_wcc = wcc;
  res.resok.verf = *synced;
  return res;
}

}  // namespace nfsx::server::nfs3proc
