// RFC 1813 §3.3.16 READDIR and §3.3.17 READDIRPLUS.
//
// Each call does bounded work (what fits in the client's byte budget) and holds
// no lock across calls, so a huge directory never stalls other clients. Cookies
// come from the backend and stay valid while the directory changes.
#include "server/nfs3/procedures.h"

namespace nfsx::server::nfs3proc {
namespace {

// status + post_op_attr + cookieverf + end of list + eof.
constexpr size_t kReplyOverhead = 4 + 4 + kFattr3Size + NFS3_COOKIEVERFSIZE + 4 + 4;
// The largest an entryplus3 grows when its attributes and handle are added.
constexpr size_t kPlusExtra = 4 + kFattr3Size + 4 + 4 + NFS3_FHSIZE;

cookieverf3 CookieVerifier(Core& core, const ExportRuntime& exp) {
  // Backends with persistent cookies (LocalFs) need no verifier; the in-memory
  // one restarts empty, so tie its cookies to this run of the server.
  if (exp.fs->persistent()) return {};
  return core.verifiers().boot_verifier();
}

// Checks the directory and the cookie verifier; fills *attr. NFS3_OK to go on.
nfsstat3 Prepare(Core& core, const Resolved& r, uint64_t cookie, const cookieverf3& verf,
                 Result<vfs::Attr>* attr) {
  *attr = core.Attr(*r.file);
  if (!*attr) return StatusOf(attr->error());
  if ((*attr)->type != vfs::FileType::kDirectory) return NFS3ERR_NOTDIR;
  if (!Permits(r.caller.who, **attr, kRead)) return NFS3ERR_ACCES;
  if (cookie != 0 && verf != cookieverf3{} && verf != CookieVerifier(core, r.file->exp())) {
    return NFS3ERR_BAD_COOKIE;
  }
  return NFS3_OK;
}

}  // namespace

READDIR3res Readdir(Core& core, const READDIR3args& args, const Ctx& ctx) {
  READDIR3res res;
  auto r = core.Resolve(args.dir, ctx);
  if (!r) {
    res.status = r.error();
    return res;
  }
  Result<vfs::Attr> attr = Fail(EIO);
  res.status = Prepare(core, *r, args.cookie, args.cookieverf, &attr);
  if (attr) res.resfail.obj_attributes = core.ToFattr3(*attr, r->file->exp());
  if (res.status != NFS3_OK) return res;
  if (args.count <= kReplyOverhead) {
    res.status = NFS3ERR_TOOSMALL;
    return res;
  }
  size_t budget = std::min(args.count, core.options().dtmax) - kReplyOverhead, used = 0;
  bool stopped = false;
  auto eof = r->file->exp().fs->ReadDir(r->file->node(), args.cookie, [&](const vfs::DirEntry& e) {
    entry3 entry{e.fileid, {std::string(e.name)}, e.cookie};
    size_t size = Entry3Size(entry);
    if (used + size > budget) {
      stopped = true;
      return false;
    }
    used += size;
    res.resok.entries.push_back(std::move(entry));
    return true;
  });
  if (!eof) {
    res.status = StatusOf(eof.error());
    return res;
  }
  if (res.resok.entries.empty() && stopped) {
    res.status = NFS3ERR_TOOSMALL;
    return res;
  }
  res.resok.dir_attributes = res.resfail.obj_attributes;
  res.resok.cookieverf = CookieVerifier(core, r->file->exp());
  res.resok.eof = *eof && !stopped;
  return res;
}

READDIRPLUS3res Readdirplus(Core& core, const READDIRPLUS3args& args, const Ctx& ctx) {
  READDIRPLUS3res res;
  auto r = core.Resolve(args.dir, ctx);
  if (!r) {
    res.status = r.error();
    return res;
  }
  FileState& dir = *r->file;
  ExportRuntime& exp = dir.exp();
  Result<vfs::Attr> attr = Fail(EIO);
  res.status = Prepare(core, *r, args.cookie, args.cookieverf, &attr);
  if (attr) res.resfail.obj_attributes = core.ToFattr3(*attr, exp);
  if (res.status != NFS3_OK) return res;
  if (args.maxcount <= kReplyOverhead) {
    res.status = NFS3ERR_TOOSMALL;
    return res;
  }
  // Names first, within both budgets (counting each entry at its largest);
  // lookups after, so no backend lock is held across them.
  size_t budget = std::min(args.maxcount, core.options().dtmax) - kReplyOverhead, used = 0,
         dir_used = 0;
  bool stopped = false;
  auto& entries = res.resok.entries;
  auto eof = exp.fs->ReadDir(dir.node(), args.cookie, [&](const vfs::DirEntry& e) {
    entryplus3 entry;
    entry.fileid = e.fileid;
    entry.name.value = std::string(e.name);
    entry.cookie = e.cookie;
    size_t size = EntryPlus3Size(entry) + kPlusExtra;
    size_t dir_size = Entry3Size(entry3{entry.fileid, entry.name, entry.cookie});
    if (used + size > budget ||
        (args.dircount > 0 && dir_used + dir_size > args.dircount && !entries.empty())) {
      stopped = true;
      return false;
    }
    used += size;
    dir_used += dir_size;
    entries.push_back(std::move(entry));
    return true;
  });
  if (!eof) {
    res.status = StatusOf(eof.error());
    return res;
  }
  if (entries.empty() && stopped) {
    res.status = NFS3ERR_TOOSMALL;
    return res;
  }
  for (entryplus3& e : entries) {
    FileStatePtr child;
    if (e.name.value == ".") {
      child = r->file;
    } else if (e.name.value == "..") {
      if (r->file == exp.root) {
        child = exp.root;
      } else if (auto parent = exp.fs->Parent(dir.node())) {
        child = core.Intern(exp, std::move(*parent));
      }
    } else if (auto node = exp.fs->Lookup(dir.node(), e.name.value)) {
      child = core.Intern(exp, std::move(*node));
    }
    if (!child) continue;  // removed meanwhile: the entry goes without attributes
    if (auto a = core.Attr(*child)) {
      e.name_attributes = core.ToFattr3(*a, exp);
      e.name_handle = child->fh();
    }
  }
  res.resok.dir_attributes = res.resfail.obj_attributes;
  res.resok.cookieverf = CookieVerifier(core, exp);
  res.resok.eof = *eof && !stopped;
  return res;
}

}  // namespace nfsx::server::nfs3proc
