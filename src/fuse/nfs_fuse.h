// NfsFuse: the FUSE low-level file system over ClientCore. It translates: the
// client library does the caching and the consistency work; this layer maps
// kernel node ids to client inodes, tells the kernel how long it may cache
// what the client returned, and tells it to drop what went stale.
//
// Kernel caching, as decided in docs/fuse.md:
//  - attributes: the kernel keeps them exactly as long as the client's
//    attribute cache would (acregmin..acregmax, noac = 0); names for acdirmin.
//  - data: the kernel page cache is used (mmap works); an open keeps it only if
//    the client saw no change by another client since the last open
//    (close-to-open), and such a change, whenever the client sees it, is sent
//    to the kernel as an invalidation by the Invalidator thread.
//  - writes: no kernel write-back cache by default (it would hide other
//    clients' size changes and handle O_APPEND at the kernel's idea of the end
//    of file); every write() reaches the client's own write-back cache.
//
// The request handlers run on libfuse's worker threads, many at once.
#pragma once

#include <sys/stat.h>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "client/client_core.h"
#include "fuse/caller_identity.h"
#include "fuse/control.h"
#include "fuse/fuse_api.h"
#include "fuse/invalidator.h"
#include "fuse/mount_options.h"
#include "fuse/node_table.h"

namespace nfsx::fuse {

class NfsFuse {
 public:
  // `root` is the directory mounted (the export root, or a directory below it).
  NfsFuse(std::unique_ptr<client::ClientCore> core, client::InodePtr root, MountOptions options,
          std::string source);
  ~NfsFuse();

  static const fuse_lowlevel_ops& Ops();

  // Starts sending kernel notifications (once the session is mounted).
  void Start(fuse_session* se);
  // Ends the mount once its request loop is over: stops the notifications, then
  // runs `unmount` (fuse_session_unmount, which closes the session's fd: a
  // notification still being sent could go to a reused descriptor), then
  // Shutdown()s. Returns Shutdown()'s result.
  Result<void> Unmount(const std::function<void()>& unmount);
  // Stops the notification thread (see Invalidator::Stop). Idempotent.
  void StopNotifications() { invalidator_.Stop(); }
  bool notifying() const { return invalidator_.sending(); }
  // Flushes and commits everything, removes hidden names of unlinked open files
  // and stops the notification thread. Idempotent; the result of the first call.
  Result<void> Shutdown();

  client::ClientCore& core() { return *core_; }
  // Null unless requests carry their caller's identity (MountOptions::caller_identity).
  CallerIdentity* callers() { return callers_ ? &*callers_ : nullptr; }
  NodeTable& table() { return table_; }

  // ---- requests (one per FUSE operation; each replies exactly once) ----
  void Init(fuse_conn_info* conn);
  void Lookup(fuse_req_t req, fuse_ino_t parent, const char* name);
  void Forget(fuse_ino_t ino, uint64_t nlookup);
  void GetAttr(fuse_req_t req, fuse_ino_t ino);
  void SetAttr(fuse_req_t req, fuse_ino_t ino, const struct stat* attr, int to_set);
  void Access(fuse_req_t req, fuse_ino_t ino, int mask);
  void StatFs(fuse_req_t req);
  void GetXattr(fuse_req_t req, fuse_ino_t ino, const char* name, size_t size);
  void ListXattr(fuse_req_t req, size_t size);

  void Readlink(fuse_req_t req, fuse_ino_t ino);
  void Mknod(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode, dev_t rdev);
  void Mkdir(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode);
  void Symlink(fuse_req_t req, const char* target, fuse_ino_t parent, const char* name);
  void Link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t parent, const char* name);
  void Unlink(fuse_req_t req, fuse_ino_t parent, const char* name);
  void Rmdir(fuse_req_t req, fuse_ino_t parent, const char* name);
  void Rename(fuse_req_t req, fuse_ino_t parent, const char* name, fuse_ino_t newparent,
              const char* newname, unsigned flags);

  void Create(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode, fuse_file_info* fi);
  void Open(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi);
  void Read(fuse_req_t req, size_t size, off_t off, fuse_file_info* fi);
  void WriteBuf(fuse_req_t req, fuse_bufvec* bufv, off_t off, fuse_file_info* fi);
  void Flush(fuse_req_t req, fuse_file_info* fi);
  void Release(fuse_req_t req, fuse_file_info* fi);
  void Fsync(fuse_req_t req, fuse_file_info* fi);

  void OpenDir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi);
  void ReadDir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi,
               bool plus);
  void ReleaseDir(fuse_req_t req, fuse_file_info* fi);

 private:
  struct FileHandle;
  struct DirHandle;

  // The node for a kernel id; replies ESTALE and returns null if unknown.
  NodePtr NodeOr(fuse_req_t req, fuse_ino_t ino);
  // Fills `e` for `ino` found under parent/name and takes a lookup reference for the
  // reply; on error replies with it and returns null.
  NodePtr EntryFor(fuse_req_t req, fuse_ino_t parent, const std::string& name,
                   const client::InodePtr& ino, fuse_entry_param* e);
  // Replies with the entry for `ino` found under parent/name (a new lookup reference).
  void ReplyEntry(fuse_req_t req, fuse_ino_t parent, const std::string& name,
                  const client::InodePtr& ino);
  void FillAttr(const Stat& s, const Node& node, struct stat* st) const;
  // Fills `buf` with d's entries from `off`; returns the bytes used. Lookups
  // handed to the kernel (READDIRPLUS) are appended to `refs`.
  size_t FillDirBuffer(fuse_req_t req, fuse_ino_t ino, const NodePtr& dir, const DirHandle& d,
                       off_t off, bool plus, std::span<char> buf, std::vector<uint64_t>* refs);
  // Seconds the kernel may keep what the client just returned.
  double AttrTimeout(const client::Inode& ino) const;
  double EntryTimeout() const;
  void OnForeignChange(const client::InodePtr& ino);

  // The setuid/setgid bits that a SETATTR to `new_mode` only clears on behalf of a
  // user's write or truncation (the server clears them then); 0 for a real chmod.
  uint32_t KillPrivBits(fuse_req_t req, const Node& node, uint32_t new_mode);
  // Drops the client's clean pages of a sequential read stream that lie well behind
  // `offset`: the kernel's page cache holds them.
  void DropBehind(FileHandle& h, uint64_t offset);
  // Open-file checks of close-to-open and ACCESS; EACCES etc. as errors.
  Result<void> CheckOpen(const client::InodePtr& ino, int flags);
  // The node the name cache has for parent/name, or null (unknown, negative).
  NodePtr Cached(fuse_ino_t parent, const std::string& name);
  // The file that removing dir/name would delete while it is open through this
  // mount (the name's last link), or null: such a file is hidden under a unique name
  // until its last close. `cached` is what Cached() says of the name. Call it holding a
  // NodeTable::Removal until the REMOVE or RENAME is answered. An error (the server
  // not answering, an interrupted wait) is passed on: guessing "not open" would
  // delete an open file's data.
  Result<NodePtr> ToHide(const NodePtr& dir, const std::string& name, const NodePtr& cached);
  Result<std::string> Hide(const NodePtr& dir, const std::string& name, const NodePtr& victim);
  void Unhide(const NodePtr& dir, const std::string& hidden_name, const std::string& name,
              const NodePtr& victim);
  void ForgetHidden(const NodePtr& node);
  // Uncounts an open handle of `node`; at its last, removes the names it was hidden under.
  void Close(const NodePtr& node);
  Result<void> Sync();
  std::string StatsText();

  std::unique_ptr<client::ClientCore> core_;
  MountOptions options_;
  std::string source_;
  NodeTable table_;
  Invalidator invalidator_;
  fuse_session* se_ = nullptr;
  uint32_t blksize_;
  std::optional<CallerIdentity> callers_;

  std::mutex hidden_mu_;
  std::set<NodePtr> hidden_;  // GUARDED_BY(hidden_mu_): nodes with hidden names
  std::atomic<uint64_t> hide_counter_{0};

  std::mutex shutdown_mu_;
  bool shut_down_ = false;        // GUARDED_BY(shutdown_mu_)
  Result<void> shutdown_result_;  // GUARDED_BY(shutdown_mu_)
};

}  // namespace nfsx::fuse
