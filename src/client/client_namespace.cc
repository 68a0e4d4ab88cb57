// ClientCore: lookups and changes to directories.
#include "base/logging.h"
#include "client/client_core.h"
#include "proto/nfsstat.h"

namespace nfsx::client {

using namespace nfs3;
using Kind = ConsistencyTracker::Kind;

namespace {

int StatusErrno(nfsstat3 s) { return ErrnoFromNfsStat(s); }

}  // namespace

Result<InodePtr> ClientCore::Lookup(const InodePtr& dir, const std::string& name) {
  auto token = BeginCall(dir, Kind::kObserve);
  auto r = channel_->CallSync<LOOKUP3res>(nfsproc3::LOOKUP, LOOKUP3args{{dir->fh(), {name}}});
  if (!r) {
    EndCall(dir, token, std::nullopt, std::nullopt);
    return std::unexpected(r.error());
  }
  if (r->status != NFS3_OK) {
    EndCall(dir, token, std::nullopt, r->resfail.dir_attributes);
    return Fail(StatusErrno(r->status));
  }
  EndCall(dir, token, std::nullopt, r->resok.dir_attributes);
  fattr3 attr;
  if (r->resok.obj_attributes) {
    attr = *r->resok.obj_attributes;
  } else {
    auto a = channel_->CallSync<GETATTR3res>(nfsproc3::GETATTR, GETATTR3args{r->resok.object});
    if (!a || a->status != NFS3_OK) return Fail(!a ? a.error().code : StatusErrno(a->status));
    attr = a->resok.obj_attributes;
  }
  return Intern(r->resok.object, attr, token.sent_ns);
}

// The common tail of CREATE, MKDIR, SYMLINK and MKNOD.
static Result<InodePtr> FinishCreate(ClientCore& core, const InodePtr& dir, const std::string& name,
                                     const CREATE3res& r, int64_t sent_ns) {
  if (r.status != NFS3_OK) return Fail(StatusErrno(r.status));
  if (r.resok.obj && r.resok.obj_attributes) {
    return core.Intern(*r.resok.obj, *r.resok.obj_attributes, sent_ns);
  }
  return core.Lookup(dir, name);  // the server left out handle or attributes
}

Result<InodePtr> ClientCore::Create(const InodePtr& dir, const std::string& name, uint32_t mode,
                                    bool exclusive, bool truncate) {
  CREATE3args a;
  a.where = {dir->fh(), {name}};
  a.how.mode = exclusive ? GUARDED : UNCHECKED;
  a.how.obj_attributes.mode = mode & 07777;
  if (truncate) a.how.obj_attributes.size = 0;
  auto token = BeginCall(dir, Kind::kModify);
  auto r = channel_->CallSync<CREATE3res>(nfsproc3::CREATE, a);
  if (!r) {
    EndCall(dir, token, std::nullopt, std::nullopt);
    return std::unexpected(r.error());
  }
  EndDirCall(dir, token, r->status == NFS3_OK ? r->resok.dir_wcc : r->resfail.wcc);
  auto ino = FinishCreate(*this, dir, name, *r, token.sent_ns);
  if (ino && truncate) {
    // An existing file was truncated by the server: our pages of it are stale.
    (*ino)->pages.Truncate(0);
    (*ino)->ResetWriteEnd(0);
  }
  return ino;
}

Result<InodePtr> ClientCore::Mkdir(const InodePtr& dir, const std::string& name, uint32_t mode) {
  MKDIR3args a;
  a.where = {dir->fh(), {name}};
  a.attributes.mode = mode & 07777;
  auto token = BeginCall(dir, Kind::kModify);
  auto r = channel_->CallSync<MKDIR3res>(nfsproc3::MKDIR, a);
  if (!r) {
    EndCall(dir, token, std::nullopt, std::nullopt);
    return std::unexpected(r.error());
  }
  EndDirCall(dir, token, r->status == NFS3_OK ? r->resok.dir_wcc : r->resfail.wcc);
  return FinishCreate(*this, dir, name, *r, token.sent_ns);
}

Result<InodePtr> ClientCore::Symlink(const InodePtr& dir, const std::string& name,
                                     const std::string& target) {
  SYMLINK3args a;
  a.where = {dir->fh(), {name}};
  a.symlink_attributes.mode = 0777;
  a.symlink_data.value = target;
  auto token = BeginCall(dir, Kind::kModify);
  auto r = channel_->CallSync<SYMLINK3res>(nfsproc3::SYMLINK, a);
  if (!r) {
    EndCall(dir, token, std::nullopt, std::nullopt);
    return std::unexpected(r.error());
  }
  EndDirCall(dir, token, r->status == NFS3_OK ? r->resok.dir_wcc : r->resfail.wcc);
  return FinishCreate(*this, dir, name, *r, token.sent_ns);
}

Result<InodePtr> ClientCore::Mknod(const InodePtr& dir, const std::string& name, FileType type,
                                   uint32_t mode, uint32_t major, uint32_t minor) {
  MKNOD3args a;
  a.where = {dir->fh(), {name}};
  a.type = static_cast<ftype3>(type);
  a.attributes.mode = mode & 07777;
  a.spec = {major, minor};
  auto token = BeginCall(dir, Kind::kModify);
  auto r = channel_->CallSync<MKNOD3res>(nfsproc3::MKNOD, a);
  if (!r) {
    EndCall(dir, token, std::nullopt, std::nullopt);
    return std::unexpected(r.error());
  }
  EndDirCall(dir, token, r->status == NFS3_OK ? r->resok.dir_wcc : r->resfail.wcc);
  return FinishCreate(*this, dir, name, *r, token.sent_ns);
}

Result<void> ClientCore::Remove(const InodePtr& dir, const std::string& name) {
  auto token = BeginCall(dir, Kind::kModify);
  auto r = channel_->CallSync<REMOVE3res>(nfsproc3::REMOVE, REMOVE3args{{dir->fh(), {name}}});
  if (!r) {
    EndCall(dir, token, std::nullopt, std::nullopt);
    return std::unexpected(r.error());
  }
  EndDirCall(dir, token, r->status == NFS3_OK ? r->resok.wcc : r->resfail.wcc);
  if (r->status != NFS3_OK) return Fail(StatusErrno(r->status));
  return {};
}

Result<void> ClientCore::Rmdir(const InodePtr& dir, const std::string& name) {
  auto token = BeginCall(dir, Kind::kModify);
  auto r = channel_->CallSync<RMDIR3res>(nfsproc3::RMDIR, RMDIR3args{{dir->fh(), {name}}});
  if (!r) {
    EndCall(dir, token, std::nullopt, std::nullopt);
    return std::unexpected(r.error());
  }
  EndDirCall(dir, token, r->status == NFS3_OK ? r->resok.wcc : r->resfail.wcc);
  if (r->status != NFS3_OK) return Fail(StatusErrno(r->status));
  return {};
}

Result<void> ClientCore::Rename(const InodePtr& from_dir, const std::string& from,
                                const InodePtr& to_dir, const std::string& to) {
  auto t1 = BeginCall(from_dir, Kind::kModify);
  ConsistencyTracker::Token t2;
  bool two = from_dir != to_dir;
  if (two) t2 = BeginCall(to_dir, Kind::kModify);
  RENAME3args a{{from_dir->fh(), {from}}, {to_dir->fh(), {to}}};
  auto r = channel_->CallSync<RENAME3res>(nfsproc3::RENAME, a);
  if (!r) {
    EndCall(from_dir, t1, std::nullopt, std::nullopt);
    if (two) EndCall(to_dir, t2, std::nullopt, std::nullopt);
    return std::unexpected(r.error());
  }
  const RENAME3wcc& w = r->status == NFS3_OK ? r->resok : r->resfail;
  EndDirCall(from_dir, t1, w.fromdir_wcc);
  if (two) EndDirCall(to_dir, t2, w.todir_wcc);
  if (r->status != NFS3_OK) return Fail(StatusErrno(r->status));
  return {};
}

Result<void> ClientCore::Link(const InodePtr& file, const InodePtr& dir, const std::string& name) {
  auto tf = BeginCall(file, Kind::kModify);
  auto td = BeginCall(dir, Kind::kModify);
  auto r = channel_->CallSync<LINK3res>(nfsproc3::LINK, LINK3args{file->fh(), {dir->fh(), {name}}});
  if (!r) {
    EndCall(file, tf, std::nullopt, std::nullopt);
    EndCall(dir, td, std::nullopt, std::nullopt);
    return std::unexpected(r.error());
  }
  const LINK3wcc& w = r->status == NFS3_OK ? r->resok : r->resfail;
  // LINK reports the file's attributes after, but none from before: its ctime
  // moved by our doing, which the tracker learns as an explained post-op state.
  EndCall(file, tf, std::nullopt, w.file_attributes);
  EndDirCall(dir, td, w.linkdir_wcc);
  if (r->status != NFS3_OK) return Fail(StatusErrno(r->status));
  return {};
}

Result<std::string> ClientCore::Readlink(const InodePtr& ino) {
  auto token = BeginCall(ino, Kind::kObserve);
  auto r = channel_->CallSync<READLINK3res>(nfsproc3::READLINK, READLINK3args{ino->fh()});
  if (!r) {
    EndCall(ino, token, std::nullopt, std::nullopt);
    return std::unexpected(r.error());
  }
  EndCall(ino, token, std::nullopt,
          r->status == NFS3_OK ? r->resok.symlink_attributes : r->resfail.obj_attributes);
  if (r->status != NFS3_OK) return Fail(StatusErrno(r->status));
  return std::move(r->resok.data.value);
}

Result<std::vector<DirEntry>> ClientCore::ReadDir(const InodePtr& dir) {
  std::vector<DirEntry> out;
  uint64_t cookie = 0;
  cookieverf3 verf{};
  for (int restarts = 0;;) {
    READDIRPLUS3args a{dir->fh(), cookie, verf, 64 * 1024, 256 * 1024};
    auto token = BeginCall(dir, Kind::kObserve);
    auto r = channel_->CallSync<READDIRPLUS3res>(nfsproc3::READDIRPLUS, a);
    if (!r) {
      EndCall(dir, token, std::nullopt, std::nullopt);
      return std::unexpected(r.error());
    }
    if (r->status == NFS3ERR_BAD_COOKIE && restarts++ < 3) {
      // The directory changed under our cookie: start over, as a fresh listing.
      EndCall(dir, token, std::nullopt, r->resfail.obj_attributes);
      out.clear();
      cookie = 0;
      verf = {};
      continue;
    }
    if (r->status != NFS3_OK) {
      EndCall(dir, token, std::nullopt, r->resfail.obj_attributes);
      return Fail(StatusErrno(r->status));
    }
    EndCall(dir, token, std::nullopt, r->resok.dir_attributes);
    for (auto& e : r->resok.entries) {
      DirEntry d;
      d.name = std::move(e.name.value);
      d.fileid = e.fileid;
      if (e.name_attributes) d.attr = ToStat(*e.name_attributes);
      if (e.name_handle && e.name_attributes && d.name != "." && d.name != "..") {
        InodePtr child = Intern(*e.name_handle, *e.name_attributes, token.sent_ns);
        if (child->type() == NF3REG && d.attr) d.attr->size = child->Size();
      }
      cookie = e.cookie;
      out.push_back(std::move(d));
    }
    verf = r->resok.cookieverf;
    if (r->resok.eof) return out;
    if (r->resok.entries.empty()) return Fail(EIO);  // no progress and no end: a broken server
  }
}

Result<FsStat> ClientCore::StatFs() {
  auto r = channel_->CallSync<FSSTAT3res>(nfsproc3::FSSTAT, FSSTAT3args{root_->fh()});
  if (!r) return std::unexpected(r.error());
  if (r->status != NFS3_OK) return Fail(StatusErrno(r->status));
  const auto& s = r->resok;
  return FsStat{s.tbytes, s.fbytes, s.abytes, s.tfiles, s.ffiles, s.afiles};
}

}  // namespace nfsx::client
