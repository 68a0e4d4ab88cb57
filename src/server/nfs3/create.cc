// RFC 1813 §3.3.8 CREATE, §3.3.9 MKDIR, §3.3.10 SYMLINK, §3.3.11 MKNOD.
#include <cstring>

#include "server/nfs3/dir_op.h"

namespace nfsx::server::nfs3proc {
namespace {

// Applies what the client asked for beyond the mode the object was created with.
Result<void> ApplyInitialAttrs(DirOp& op, FileState& file, vfs::SetAttr change) {
  change.mode.reset();
  bool any = change.uid || change.gid || change.size ||
             change.atime_how != vfs::SetAttr::Time::kKeep ||
             change.mtime_how != vfs::SetAttr::Time::kKeep;
  if (!any) return {};
  auto attr = op.fs().GetAttr(file.node());
  if (!attr) return std::unexpected(attr.error());
  if (int err = CheckSetAttr(op.caller().who, *attr, change)) return Fail(err);
  return op.fs().SetAttr(file.node(), change);
}

// The reply for a new (or, for UNCHECKED CREATE, existing) object.
CREATE3res Finish(DirOp& op, Result<vfs::NodePtr> node, const vfs::SetAttr& initial, bool created) {
  CREATE3res res;
  if (!node) {
    res.status = StatusOf(node.error());
    res.resfail.wcc = op.Wcc(false);
    return res;
  }
  FileStatePtr file = op.core().Intern(op.exp(), std::move(*node));
  if (!file) {
    res.status = NFS3ERR_SERVERFAULT;
    res.resfail.wcc = op.Wcc(created);
    return res;
  }
  if (auto applied = ApplyInitialAttrs(op, *file, initial); !applied) {
    res.status = StatusOf(applied.error());
    res.resfail.wcc = op.Wcc(created);
    return res;
  }
  if (created) {
    if (nfsstat3 st = op.Sync(); st != NFS3_OK) {
      res.status = st;
      res.resfail.wcc = op.Wcc(true);
      return res;
    }
  }
  res.resok.obj = file->fh();
  res.resok.obj_attributes = op.core().PostOpAttr(*file);
  res.resok.dir_wcc = op.Wcc(created);
  return res;
}

CREATE3res Refuse(DirOp& op) {
  CREATE3res res;
  res.status = op.status();
  res.resfail.wcc = op.Wcc(false);
  return res;
}

// EXCLUSIVE CREATE keeps the client's verifier in the new file's atime and
// mtime (as knfsd does) until the client's follow-up SETATTR, so that a
// retransmitted CREATE can be recognised as the same request.
vfs::SetAttr VerifierTimes(const createverf3& verf) {
  uint32_t a, m;
  std::memcpy(&a, verf.data(), 4);
  std::memcpy(&m, verf.data() + 4, 4);
  vfs::SetAttr s;
  s.atime_how = s.mtime_how = vfs::SetAttr::Time::kGiven;
  s.atime = {a & 0x7fffffff, 0};
  s.mtime = {m & 0x7fffffff, 0};
  return s;
}

}  // namespace

CREATE3res Create(Core& core, const CREATE3args& args, const Ctx& ctx) {
  const std::string& name = args.where.name.value;
  DirOp op(core, args.where.dir, name, ctx);
  if (op.status() != NFS3_OK) return Refuse(op);
  vfs::SetAttr attrs = FromSattr3(args.how.obj_attributes);
  uint32_t mode = attrs.mode.value_or(0644) & 07777;

  auto existing = op.fs().Lookup(op.dir().node(), name);
  if (existing) {
    auto attr = op.fs().GetAttr(**existing);
    switch (args.how.mode) {
      case UNCHECKED: {
        if (attr && attr->type != vfs::FileType::kRegular) {
          CREATE3res res;
          res.status = attr->type == vfs::FileType::kDirectory ? NFS3ERR_ISDIR : NFS3ERR_EXIST;
          res.resfail.wcc = op.Wcc(false);
          return res;
        }
        // An existing file is opened as is, except for truncation (as knfsd).
        vfs::SetAttr size_only;
        size_only.size = attrs.size;
        return Finish(op, std::move(existing), size_only, false);
      }
      case EXCLUSIVE: {
        vfs::SetAttr v = VerifierTimes(args.how.verf);
        if (attr && attr->type == vfs::FileType::kRegular && attr->mtime.sec == v.mtime.sec &&
            attr->atime.sec == v.atime.sec) {
          return Finish(op, std::move(existing), {}, false);  // our own retransmission
        }
        [[fallthrough]];
      }
      case GUARDED: {
        CREATE3res res;
        res.status = NFS3ERR_EXIST;
        res.resfail.wcc = op.Wcc(false);
        return res;
      }
    }
  }
  if (existing.error().code != ENOENT) return Finish(op, std::move(existing), {}, false);

  if (args.how.mode == EXCLUSIVE) {
    auto node = op.fs().Create(op.dir().node(), name, 0600, op.NewOwner(), true);
    return Finish(op, std::move(node), VerifierTimes(args.how.verf), true);
  }
  vfs::Owner owner = op.NewOwner();
  mode = NewFileMode(op.caller().who, mode, owner.gid);
  auto node = op.fs().Create(op.dir().node(), name, mode, owner, true);
  return Finish(op, std::move(node), attrs, true);
}

MKDIR3res Mkdir(Core& core, const MKDIR3args& args, const Ctx& ctx) {
  DirOp op(core, args.where.dir, args.where.name.value, ctx);
  if (op.status() != NFS3_OK) return Refuse(op);
  vfs::SetAttr attrs = FromSattr3(args.attributes);
  // As mkdir(2): the permission and sticky bits only (vfs_prepare_mode), for root too;
  // setgid comes from a setgid parent alone.
  uint32_t mode = attrs.mode.value_or(0755) & 01777;
  if (op.dir_attr().mode & 02000) mode |= 02000;
  auto node = op.fs().Mkdir(op.dir().node(), args.where.name.value, mode, op.NewOwner());
  return Finish(op, std::move(node), attrs, true);
}

SYMLINK3res Symlink(Core& core, const SYMLINK3args& args, const Ctx& ctx) {
  DirOp op(core, args.where.dir, args.where.name.value, ctx);
  if (op.status() != NFS3_OK) return Refuse(op);
  if (args.symlink_data.value.empty() || args.symlink_data.value.find('\0') != std::string::npos) {
    CREATE3res res;
    res.status = NFS3ERR_INVAL;
    res.resfail.wcc = op.Wcc(false);
    return res;
  }
  vfs::SetAttr attrs = FromSattr3(args.symlink_attributes);
  attrs.size.reset();
  auto node = op.fs().Symlink(op.dir().node(), args.where.name.value, args.symlink_data.value,
                              op.NewOwner());
  return Finish(op, std::move(node), attrs, true);
}

MKNOD3res Mknod(Core& core, const MKNOD3args& args, const Ctx& ctx) {
  DirOp op(core, args.where.dir, args.where.name.value, ctx);
  if (op.status() != NFS3_OK) return Refuse(op);
  CREATE3res res;
  vfs::FileType type;
  switch (args.type) {
    case NF3CHR:
      type = vfs::FileType::kCharDevice;
      break;
    case NF3BLK:
      type = vfs::FileType::kBlockDevice;
      break;
    case NF3SOCK:
      type = vfs::FileType::kSocket;
      break;
    case NF3FIFO:
      type = vfs::FileType::kFifo;
      break;
    default:
      res.status = NFS3ERR_BADTYPE;
      res.resfail.wcc = op.Wcc(false);
      return res;
  }
  bool device = type == vfs::FileType::kCharDevice || type == vfs::FileType::kBlockDevice;
  if (device && !op.caller().who.is_root()) {
    res.status = NFS3ERR_PERM;
    res.resfail.wcc = op.Wcc(false);
    return res;
  }
  vfs::SetAttr attrs = FromSattr3(args.attributes);
  attrs.size.reset();
  vfs::Owner owner = op.NewOwner();
  uint32_t mode = NewFileMode(op.caller().who, attrs.mode.value_or(0644) & 07777, owner.gid);
  auto node = op.fs().Mknod(op.dir().node(), args.where.name.value, type, mode, args.spec.specdata1,
                            args.spec.specdata2, owner);
  return Finish(op, std::move(node), attrs, true);
}

}  // namespace nfsx::server::nfs3proc
