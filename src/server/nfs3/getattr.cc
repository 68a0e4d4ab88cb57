// RFC 1813 §3.3.1 GETATTR, §3.3.4 ACCESS, §3.3.5 READLINK: read-only questions about one file.
#include "server/nfs3/procedures.h"

namespace nfsx::server::nfs3proc {

GETATTR3res Getattr(Core& core, const GETATTR3args& args, const Ctx& ctx) {
  GETATTR3res res;
  auto r = core.Resolve(args.object, ctx);
  if (!r) {
    res.status = r.error();
    return res;
  }
  auto attr = core.Attr(*r->file);
  if (!attr) {
    res.status = StatusOf(attr.error());
    return res;
  }
  res.resok.obj_attributes = core.ToFattr3(*attr, r->file->exp());
  return res;
}

ACCESS3res Access(Core& core, const ACCESS3args& args, const Ctx& ctx) {
  ACCESS3res res;
  auto r = core.Resolve(args.object, ctx);
  if (!r) {
    res.status = r.error();
    return res;
  }
  auto attr = core.Attr(*r->file);
  if (!attr) {
    res.status = StatusOf(attr.error());
    return res;
  }
  res.resok.obj_attributes = core.ToFattr3(*attr, r->file->exp());
  res.resok.access = AccessBits(r->caller.who, *attr, args.access, r->caller.read_only());
  return res;
}

READLINK3res Readlink(Core& core, const READLINK3args& args, const Ctx& ctx) {
  READLINK3res res;
  auto r = core.Resolve(args.symlink, ctx);
  if (!r) {
    res.status = r.error();
    return res;
  }
  FileState& file = *r->file;
  auto attr = core.Attr(file);
  if (!attr) {
    res.status = StatusOf(attr.error());
    return res;
  }
  res.resfail.obj_attributes = core.ToFattr3(*attr, file.exp());
  if (attr->type != vfs::FileType::kSymlink) {
    res.status = NFS3ERR_INVAL;
    return res;
  }
  auto target = file.exp().fs->ReadLink(file.node());
  if (!target) {
    res.status = StatusOf(target.error());
    return res;
  }
  res.resok.symlink_attributes = res.resfail.obj_attributes;
  res.resok.data.value = std::move(*target);
  return res;
}

}  // namespace nfsx::server::nfs3proc
