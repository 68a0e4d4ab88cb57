// Core: the state every NFS and MOUNT procedure works with, and the steps they
// share: resolving a file handle for a caller, reading attributes, making
// handles for new files.
//
// Thread-safe. Procedures never touch sockets (they see an rpc::CallContext)
// and never call POSIX directly (they go through vfs::Filesystem).
#pragma once

#include <expected>
#include <memory>
#include <string>
#include <vector>

#include "proto/nfs3_types.h"
#include "rpc/program.h"
#include "server/access.h"
#include "server/client_names.h"
#include "server/export_config.h"
#include "server/export_runtime.h"
#include "server/file_handle.h"
#include "server/file_state.h"
#include "server/open_file_cache.h"
#include "server/write_verifier.h"

namespace nfsx::server {

struct CoreOptions {
  uint32_t rtmax = 1u << 20;  // largest READ we answer in full
  uint32_t wtmax = 1u << 20;  // largest WRITE we advertise
  uint32_t dtpref = 64u << 10;
  // Largest READDIR/READDIRPLUS reply, whatever count/maxcount the client asks for
  // (as knfsd caps it at its largest payload): the work and memory of one call stay
  // bounded, and the client pages on with cookies.
  uint32_t dtmax = 1u << 20;
  size_t file_table_capacity = 16384;
  OpenFileCacheOptions open_files;
  // How client names for host-name export rules are found; empty: SystemResolver().
  NameResolver resolver;
  ClientNamesOptions client_names;
};

// Who is asking, on which export, with which rights.
struct Caller {
  ExportRuntime* exp = nullptr;
  const ExportOptions* options = nullptr;
  Identity who;
  bool read_only() const { return options->read_only; }
};

struct Resolved {
  FileStatePtr file;
  Caller caller;
};

class Core {
 public:
  // `table` (the export configuration) must outlive the Core.
  Core(const HandleKey& key, const ExportTable* table, CoreOptions options);
  ~Core();

  // REQUIRES: before serving; `config` outlives the Core.
  Result<void> AddExport(const Export& config, std::unique_ptr<vfs::Filesystem> fs);

  // Resolves a handle for this call: MAC, export, client address, source port,
  // credential squashing. Errors are the status to answer.
  std::expected<Resolved, nfs3::nfsstat3> Resolve(const nfs3::nfs_fh3& fh,
                                                  const rpc::CallContext& ctx);
  // The caller's rights on an export, or the status to refuse with.
  std::expected<Caller, nfs3::nfsstat3> CallerFor(ExportRuntime& exp, const rpc::CallContext& ctx);

  // The table entry (and handle) for a node a backend just returned.
  FileStatePtr Intern(ExportRuntime& exp, vfs::NodePtr node);

  // Attributes as clients see them, of a file the caller is not modifying:
  // taken while no modification of it through this server is under way, so
  // they are exactly the state some modification's post-op attributes showed
  // (or a third party's). ESTALE when the file is gone (nlink 0).
  // A thread that holds a Modification of another file never waits for this one's
  // (lock order): if the file stays busy, *settled (when given) is set false and
  // the attributes carry the latest times shown, not to be sent to clients.
  Result<vfs::Attr> Attr(FileState& file, bool* settled = nullptr);
  // The same inside the caller's FileState::Modification of `file`: pre-op
  // attributes (kNone) and post-op ones. `changes` (TimeOverlay::Change) names
  // what the operation modified. REQUIRES: a Modification of `file` held.
  Result<vfs::Attr> AttrLocked(FileState& file, uint8_t changes = TimeOverlay::kNone);
  nfs3::fattr3 ToFattr3(const vfs::Attr& attr, const ExportRuntime& exp) const;
  // Best effort: absent when the attributes cannot be read.
  nfs3::post_op_attr PostOpAttr(FileState& file);
  // REQUIRES: a Modification of `file` held.
  nfs3::post_op_attr PostOpAttrLocked(FileState& file, uint8_t changes = TimeOverlay::kNone);
  static nfs3::pre_op_attr PreOpAttr(const Result<vfs::Attr>& attr);

  // After REMOVE, RMDIR or a RENAME over it: if the file has no name left, closes
  // our descriptors (its space is freed now, not when the open-file cache gets
  // round to it) and forgets its state. Null does nothing. Asks the backend for
  // the link count directly: Core::Attr may not wait for the file while the
  // caller holds its directory.
  void ForgetIfGone(const FileStatePtr& file);

  // Syncs `open`, a descriptor of `file`, and returns the verifier that the sync's success
  // vouches for: every write made before it under an older verifier may have been lost
  // by a sync that failed meanwhile. A failed sync rotates the file's verifier.
  Result<nfs3::writeverf3> SyncData(FileState& file, vfs::OpenFile& open, bool data_only);

  // Makes a completed metadata change durable (the `sync` export option, as
  // knfsd's commit_metadata): fsync of a directory or of a regular file.
  Result<void> SyncMetadata(const FileStatePtr& file);

  ExportRuntime* FindExport(uint16_t id);
  const std::vector<std::unique_ptr<ExportRuntime>>& exports() const { return exports_; }

  const HandleCodec& codec() const { return codec_; }
  WriteVerifiers& verifiers() { return verifiers_; }
  OpenFileCache& open_files() { return open_files_; }
  FileTable& files() { return files_; }
  const CoreOptions& options() const { return options_; }
  ClientNames& client_names() { return client_names_; }
  // Whether a call from `peer` would wait for DNS in CallerFor() (an export names
  // hosts and the peer's name is not cached): such calls run on worker threads.
  bool NeedsNameLookup(const rpc::Peer& peer) const {
    return has_name_rules_ && !client_names_.Cached(reinterpret_cast<const sockaddr*>(&peer.addr));
  }

 private:
  void ResolveHostRules(ExportRuntime& rt);

  CoreOptions options_;
  const ExportTable* table_;
  HandleCodec codec_;
  // Declaration order matters: files_ holds descriptors whose release reports
  // to open_files_ and verifiers_, so it must go first.
  WriteVerifiers verifiers_;
  OpenFileCache open_files_;
  std::vector<std::unique_ptr<ExportRuntime>> exports_;
  FileTable files_;
  ClientNames client_names_;
  bool has_name_rules_ = false;  // set before serving
};

// errno from a backend failure -> the status to answer.
nfs3::nfsstat3 StatusOf(const Error& e);

// A name from the wire as a backend may take it, or the status to refuse with.
nfs3::nfsstat3 CheckName(const std::string& name);

// vfs <-> wire conversions.
vfs::SetAttr FromSattr3(const nfs3::sattr3& s);
nfs3::wcc_attr ToWccAttr(const vfs::Attr& attr);

}  // namespace nfsx::server
