// RFC 1813 §3.3.14 RENAME.
#include "server/nfs3/procedures.h"

namespace nfsx::server::nfs3proc {
namespace {

// Locks one or two directories in a fixed order (by handle), so that two
// RENAMEs between the same directories in opposite directions cannot deadlock.
class TwoDirLock {
 public:
  TwoDirLock(FileState& a, FileState& b) {
    if (&a == &b) {
      first_.emplace(a);
      return;
    }
    bool a_first = a.key() < b.key();
    first_.emplace(a_first ? a : b);
    second_.emplace(a_first ? b : a);
  }

 private:
  std::optional<FileState::Modification> first_, second_;
};

}  // namespace

RENAME3res Rename(Core& core, const RENAME3args& args, const Ctx& ctx) {
  RENAME3res res;
  auto from = core.Resolve(args.from.dir, ctx);
  if (!from) {
    res.status = from.error();
    return res;
  }
  auto to = core.Resolve(args.to.dir, ctx);
  if (!to) {
    res.status = to.error();
    return res;
  }
  FileState& fdir = *from->file;
  FileState& tdir = *to->file;
  const Caller& caller = from->caller;
  TwoDirLock lock(fdir, tdir);
  auto fpre = core.AttrLocked(fdir);
  auto tpre = core.AttrLocked(tdir);
  auto wcc = [&](bool changed) {
    uint8_t c = changed ? (TimeOverlay::kMtime | TimeOverlay::kCtime) : TimeOverlay::kNone;
    RENAME3wcc w;
    w.fromdir_wcc = {Core::PreOpAttr(fpre), core.PostOpAttrLocked(fdir, c)};
    w.todir_wcc = {Core::PreOpAttr(tpre),
                   &fdir == &tdir ? w.fromdir_wcc.after : core.PostOpAttrLocked(tdir, c)};
    return w;
  };
  auto fail = [&](nfsstat3 status) {
    res.status = status;
    res.resfail = wcc(false);
    return res;
  };
  if (!fpre) return fail(StatusOf(fpre.error()));
  if (!tpre) return fail(StatusOf(tpre.error()));
  if (&fdir.exp() != &tdir.exp()) return fail(NFS3ERR_XDEV);
  if (fpre->type != vfs::FileType::kDirectory || tpre->type != vfs::FileType::kDirectory) {
    return fail(NFS3ERR_NOTDIR);
  }
  const std::string& fname = args.from.name.value;
  const std::string& tname = args.to.name.value;
  if (nfsstat3 bad = CheckName(fname); bad != NFS3_OK) return fail(bad);
  if (nfsstat3 bad = CheckName(tname); bad != NFS3_OK) return fail(bad);
  if (caller.read_only()) return fail(NFS3ERR_ROFS);
  if (!Permits(caller.who, *tpre, kWrite | kExec)) return fail(NFS3ERR_ACCES);

  vfs::Filesystem& fs = *fdir.exp().fs;
  auto src = fs.Lookup(fdir.node(), fname);
  if (!src) return fail(StatusOf(src.error()));
  auto src_attr = fs.GetAttr(**src);
  if (!src_attr) return fail(StatusOf(src_attr.error()));
  if (!MayUnlink(caller.who, *fpre, *src_attr)) return fail(NFS3ERR_ACCES);
  // Moving a directory to a new parent rewrites its "..": that needs write on it.
  if (src_attr->type == vfs::FileType::kDirectory && &fdir != &tdir &&
      !Permits(caller.who, *src_attr, kWrite)) {
    return fail(NFS3ERR_ACCES);
  }
  FileStatePtr replaced;
  if (auto dst = fs.Lookup(tdir.node(), tname)) {
    auto dst_attr = fs.GetAttr(**dst);
    if (dst_attr && !MayUnlink(caller.who, *tpre, *dst_attr)) return fail(NFS3ERR_ACCES);
    replaced = core.Intern(fdir.exp(), std::move(*dst));
  }
  if (auto done = fs.Rename(fdir.node(), fname, tdir.node(), tname); !done) {
    return fail(StatusOf(done.error()));
  }
  core.ForgetIfGone(replaced);
  if (caller.options->sync) {
    auto s1 = core.SyncMetadata(from->file);
    auto s2 = &fdir == &tdir ? s1 : core.SyncMetadata(to->file);
    if (!s1 || !s2) {
      res.status = StatusOf(!s1 ? s1.error() : s2.error());
      res.resfail = wcc(true);
      return res;
    }
  }
  res.resok = wcc(true);
  return res;
}

}  // namespace nfsx::server::nfs3proc
