// RFC 1813 §3.3.3 LOOKUP.
#include "server/nfs3/procedures.h"

namespace nfsx::server::nfs3proc {

LOOKUP3res Lookup(Core& core, const LOOKUP3args& args, const Ctx& ctx) {
  LOOKUP3res res;
  auto r = core.Resolve(args.what.dir, ctx);
  if (!r) {
    res.status = r.error();
    return res;
  }
  FileState& dir = *r->file;
  ExportRuntime& exp = dir.exp();
  auto dir_attr = core.Attr(dir);
  if (!dir_attr) {
    res.status = StatusOf(dir_attr.error());
    return res;
  }
  res.resfail.dir_attributes = core.ToFattr3(*dir_attr, exp);
  if (dir_attr->type != vfs::FileType::kDirectory) {
    res.status = NFS3ERR_NOTDIR;
    return res;
  }
  if (!Permits(r->caller.who, *dir_attr, kExec)) {
    res.status = NFS3ERR_ACCES;
    return res;
  }
  const std::string& name = args.what.name.value;
  FileStatePtr child;
  if (name == ".") {
    child = r->file;
  } else if (name == "..") {
    // ".." of the export root is the root: nothing above it is reachable.
    if (r->file == exp.root) {
      child = exp.root;
    } else {
      auto parent = exp.fs->Parent(dir.node());
      if (!parent) {
        res.status = StatusOf(parent.error());
        return res;
      }
      child = core.Intern(exp, std::move(*parent));
    }
  } else {
    if (nfsstat3 bad = CheckName(name); bad != NFS3_OK) {
      res.status = bad;
      return res;
    }
    auto node = exp.fs->Lookup(dir.node(), name);
    if (!node) {
      res.status = StatusOf(node.error());
      return res;
    }
    child = core.Intern(exp, std::move(*node));
  }
  if (!child) {
    res.status = NFS3ERR_SERVERFAULT;
    return res;
  }
  auto attr = core.Attr(*child);
  if (!attr) {
    res.status = StatusOf(attr.error());
    return res;
  }
  res.resok.object = child->fh();
  res.resok.obj_attributes = core.ToFattr3(*attr, exp);
  res.resok.dir_attributes = res.resfail.dir_attributes;
  return res;
}

}  // namespace nfsx::server::nfs3proc
