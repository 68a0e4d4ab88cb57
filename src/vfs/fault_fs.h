// FaultInjectingFs: a Filesystem decorator that makes chosen operations fail.
//
// Server tests wrap a real backend in it to check how the protocol layer copes with storage
// errors, in the spirit of leveldb's fault_injection_test: arm a fault ("the next Sync fails
// with EIO"), run the procedure, check the reply (e.g. that COMMIT rotates the write verifier).
//
// Semantics of an injected fault: the call returns the armed errno *instead of* reaching the
// wrapped filesystem, so it has no effect there. The one exception is OpenFile::Close, which
// still closes the wrapped file (a failed close(2) releases the descriptor too) and then
// reports the armed error.
//
// Nodes are the wrapped filesystem's own nodes, passed through unchanged in both directions,
// so handles and nodes may be used with either filesystem interchangeably.
//
// Thread-safe: faults may be armed and cleared while other threads use the filesystem. When
// no fault is armed for an operation, the only overhead is two relaxed atomic operations.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>

#include "vfs/unsynced_journal.h"
#include "vfs/vfs.h"

namespace nfsx::vfs {

// The operations a fault can be armed for: every Filesystem and OpenFile call that can fail.
enum class FaultOp : uint8_t {
  kDecodeHandle,
  kGetAttr,  // Filesystem::GetAttr and OpenFile::GetAttr
  kSetAttr,
  kLookup,
  kParent,
  kReadLink,
  kOpen,
  kCreate,
  kMkdir,
  kSymlink,
  kMknod,
  kRemove,
  kRmdir,
  kRename,
  kLink,
  kReadDir,
  kStatFs,
  kSyncDir,
  kRead,  // OpenFile::Read
  kWrite,
  kSync,
  kClose,
};
inline constexpr size_t kNumFaultOps = static_cast<size_t>(FaultOp::kClose) + 1;

class FaultInjectingFs final : public Filesystem {
 public:
  // A fault that stays armed until ClearFaults().
  static constexpr uint64_t kEveryCall = UINT64_MAX;

  // Wraps and owns `base`.
  explicit FaultInjectingFs(std::unique_ptr<Filesystem> base);
  // Wraps `base`, which must outlive this object and every OpenFile it returns.
  explicit FaultInjectingFs(Filesystem& base);
  ~FaultInjectingFs() override;

  // The next `count` calls of `op`, on any file, fail with `error`.
  void FailNext(FaultOp op, int error, uint64_t count = 1);

  // The next `count` calls of `op` on the file `fileid` fail with `error`. Which file a call
  // is "on": the open file for OpenFile calls; the decoded file for DecodeHandle; otherwise
  // the Node argument: the directory for Lookup, Create, Mkdir, Remove, Rmdir, ReadDir...,
  // either directory for Rename, the file or the directory for Link.
  void FailOnFile(FaultOp op, uint64_t fileid, int error, uint64_t count = kEveryCall);

  // Disarms every fault (counters are kept).
  void ClearFaults();

  // From now on, mtime/ctime/atime that GetAttr reports are cut down to multiples of
  // `ns` (0: as the wrapped filesystem keeps them): a filesystem whose clock ticks
  // coarsely, as ext4 before Linux 6.13 (one jiffy) or FAT (two seconds).
  void SetTimeGranularity(uint64_t ns);

  // From now on, OpenFile::Write writes at most `bytes` of what it is given and says
  // so (0: no limit): the short writes pwrite(2) may make, which NFS passes on as a
  // WRITE reply's count.
  void LimitWrites(size_t bytes);
  // From now on, OpenFile::Read reads at most `bytes` (0: no limit), short of the
  // end of file: a backend breaking the contract that reads are short only at the
  // end, which READ passes on as a short reply without eof (a server may send one).
  void LimitReads(size_t bytes);

  // Reads as of a disk that does not answer: until ReleaseReads(), OpenFile::Read
  // waits and ReadIfCached says it would (EAGAIN). Counts the reads that waited.
  void HoldReads();
  void ReleaseReads();
  uint64_t reads_held() const;
  // Syncs as of a disk that does not finish them: until ReleaseSyncs(), the next `count`
  // calls of OpenFile::Sync wait (later ones do not), failing ones included (FailNext
  // decides first), and each covers only the writes made before it began (with a journal,
  // see LoseUnsyncedWritesAtRestart). Counts the syncs that waited.
  void HoldSyncs(uint64_t count = kEveryCall);
  void ReleaseSyncs();
  uint64_t syncs_held() const;
  // Writes as of a disk slow to answer: the next `count` calls of OpenFile::Write write
  // their data (a read sees it), then wait until ReleaseWrites(). Counts the writes held.
  void HoldWrites(uint64_t count = kEveryCall);
  void ReleaseWrites();
  uint64_t writes_held() const;

  // Simulates, for crash tests, the loss a power cut causes: overwrites what the journal
  // at `journal_path` holds as written and never synced (the previous run's; see
  // UnsyncedWriteJournal), then journals every write and sync from now on.
  // REQUIRES: before the first Open.
  Result<UnsyncedWriteJournal::Replayed> LoseUnsyncedWritesAtRestart(
      const std::string& journal_path);

  // How many calls of `op` were made, failed ones included.
  uint64_t calls(FaultOp op) const;
  // How many calls failed because of an armed fault.
  uint64_t faults_injected() const;

  Filesystem& base() { return *base_; }

  NodePtr Root() override;
  uint64_t fsid() const override;
  bool persistent() const override;
  size_t EncodeHandle(const Node& node, std::span<std::byte, kMaxBackendHandle> out) override;
  Result<NodePtr> DecodeHandle(std::span<const std::byte> handle) override;
  Result<Attr> GetAttr(Node& node) override;
  Result<void> SetAttr(Node& node, const vfs::SetAttr& attr) override;
  Result<NodePtr> Lookup(Node& dir, std::string_view name) override;
  Result<NodePtr> Parent(Node& dir) override;
  Result<std::string> ReadLink(Node& node) override;
  Result<std::unique_ptr<OpenFile>> Open(Node& node, bool writable) override;
  Result<NodePtr> Create(Node& dir, std::string_view name, uint32_t mode, Owner owner,
                         bool exclusive) override;
  Result<NodePtr> Mkdir(Node& dir, std::string_view name, uint32_t mode, Owner owner) override;
  Result<NodePtr> Symlink(Node& dir, std::string_view name, std::string_view target,
                          Owner owner) override;
  Result<NodePtr> Mknod(Node& dir, std::string_view name, FileType type, uint32_t mode,
                        uint32_t major, uint32_t minor, Owner owner) override;
  Result<void> Remove(Node& dir, std::string_view name) override;
  Result<void> Rmdir(Node& dir, std::string_view name) override;
  Result<void> Rename(Node& from_dir, std::string_view from_name, Node& to_dir,
                      std::string_view to_name) override;
  Result<void> Link(Node& file, Node& dir, std::string_view name) override;
  Result<bool> ReadDir(Node& dir, uint64_t cookie,
                       const std::function<bool(const DirEntry&)>& emit) override;
  Result<FsStat> StatFs(Node& node) override;
  Result<void> SyncDir(Node& dir) override;

  // The armed faults and counters; shared with the OpenFiles handed out, which may outlive
  // this object. Internal, public only so the .cc's OpenFile wrapper can name it.
  class Injector;

 private:
  // Counts a call of `op` on `nodes` and returns the errno to fail it with, if any.
  std::optional<int> Check(FaultOp op, std::initializer_list<Node*> nodes);

  std::unique_ptr<Filesystem> owned_;  // null when wrapping a reference
  Filesystem* const base_;
  const std::shared_ptr<Injector> injector_;
};

}  // namespace nfsx::vfs
