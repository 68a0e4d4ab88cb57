// RFC 1813 §3.3.12 REMOVE, §3.3.13 RMDIR, §3.3.15 LINK.
#include "server/nfs3/dir_op.h"

namespace nfsx::server::nfs3proc {
namespace {

REMOVE3res Unlink(Core& core, const REMOVE3args& args, const Ctx& ctx, bool rmdir) {
  REMOVE3res res;
  const std::string& name = args.object.name.value;
  DirOp op(core, args.object.dir, name, ctx);
  auto fail = [&](nfsstat3 status, bool changed = false) {
    res.status = status;
    res.resfail.wcc = op.Wcc(changed);
    return res;
  };
  if (op.status() != NFS3_OK) return fail(op.status());
  auto node = op.fs().Lookup(op.dir().node(), name);
  if (!node) return fail(StatusOf(node.error()));
  auto attr = op.fs().GetAttr(**node);
  if (!attr) return fail(StatusOf(attr.error()));
  bool is_dir = attr->type == vfs::FileType::kDirectory;
  if (rmdir && !is_dir) return fail(NFS3ERR_NOTDIR);
  if (!rmdir && is_dir) return fail(NFS3ERR_ISDIR);
  if (!MayUnlink(op.caller().who, op.dir_attr(), *attr)) return fail(NFS3ERR_ACCES);
  FileStatePtr victim = core.Intern(op.exp(), std::move(*node));
  auto done = rmdir ? op.fs().Rmdir(op.dir().node(), name) : op.fs().Remove(op.dir().node(), name);
  if (!done) return fail(StatusOf(done.error()));
  core.ForgetIfGone(victim);
  if (nfsstat3 st = op.Sync(); st != NFS3_OK) return fail(st, true);
  res.resok.wcc = op.Wcc(true);
  return res;
}

}  // namespace

REMOVE3res Remove(Core& core, const REMOVE3args& args, const Ctx& ctx) {
  return Unlink(core, args, ctx, false);
}

RMDIR3res Rmdir(Core& core, const RMDIR3args& args, const Ctx& ctx) {
  return Unlink(core, args, ctx, true);
}

LINK3res Link(Core& core, const LINK3args& args, const Ctx& ctx) {
  LINK3res res;
  auto target = core.Resolve(args.file, ctx);
  if (!target) {
    res.status = target.error();
    return res;
  }
  // Refused before anything is locked: holding the directory while looking at
  // another directory could deadlock against a RENAME between the two.
  if (target->file->node().type() == vfs::FileType::kDirectory) {
    res.status = NFS3ERR_ISDIR;
    res.resfail.file_attributes = core.PostOpAttr(*target->file);
    return res;
  }
  DirOp op(core, args.link.dir, args.link.name.value, ctx);
  auto fail = [&](nfsstat3 status) {
    res.status = status;
    res.resfail.file_attributes = core.PostOpAttr(*target->file);
    res.resfail.linkdir_wcc = op.Wcc(false);
    return res;
  };
  if (op.status() != NFS3_OK) return fail(op.status());
  if (&target->file->exp() != &op.exp()) return fail(NFS3ERR_XDEV);
  if (auto attr = core.Attr(*target->file); !attr) return fail(StatusOf(attr.error()));
  // The link count and ctime of the file change too: its attributes chain like
  // those of any other modification.
  FileState::Modification file_change(*target->file);
  auto done = op.fs().Link(target->file->node(), op.dir().node(), args.link.name.value);
  if (!done) return fail(StatusOf(done.error()));
  if (nfsstat3 st = op.Sync(); st != NFS3_OK) {
    res.status = st;
    res.resfail.file_attributes = core.PostOpAttrLocked(*target->file, TimeOverlay::kCtime);
    res.resfail.linkdir_wcc = op.Wcc(true);
    return res;
  }
  res.resok.file_attributes = core.PostOpAttrLocked(*target->file, TimeOverlay::kCtime);
  res.resok.linkdir_wcc = op.Wcc(true);
  return res;
}

}  // namespace nfsx::server::nfs3proc
