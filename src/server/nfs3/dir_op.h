// DirOp: the frame shared by procedures that change a directory's entries
// (CREATE, MKDIR, SYMLINK, MKNOD, REMOVE, RMDIR, LINK): resolve the directory,
// check the name and the caller's rights, hold the directory's op lock, and
// produce exact wcc_data for it.
#pragma once

#include <mutex>
#include <optional>

#include "server/nfs3/procedures.h"

namespace nfsx::server::nfs3proc {

class DirOp {
 public:
  // Resolves and locks `dir`; status() says whether the caller may go on to
  // change the entry `name` in it (write and search permission, rw export).
  DirOp(Core& core, const nfs_fh3& dir, const std::string& name, const Ctx& ctx);

  nfsstat3 status() const { return status_; }
  FileState& dir() { return *dir_; }
  const FileStatePtr& dir_ptr() { return dir_; }
  ExportRuntime& exp() { return dir_->exp(); }
  vfs::Filesystem& fs() { return *dir_->exp().fs; }
  const Caller& caller() const { return caller_; }
  const vfs::Attr& dir_attr() const { return *pre_; }
  Core& core() { return core_; }

  // The owner of a new entry: the caller, with the directory's group when the
  // directory is setgid (BSD group semantics, as Linux).
  vfs::Owner NewOwner() const;

  // Makes the change durable if the export is `sync`; returns the status to answer.
  nfsstat3 Sync();

  // wcc_data of the directory. `changed` says whether its entries changed.
  wcc_data Wcc(bool changed);

 private:
  Core& core_;
  FileStatePtr dir_;
  Caller caller_;
  std::optional<FileState::Modification> modification_;
  Result<vfs::Attr> pre_ = Fail(EIO);
  nfsstat3 status_ = NFS3_OK;
};

}  // namespace nfsx::server::nfs3proc
