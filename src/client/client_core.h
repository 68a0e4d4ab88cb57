// ClientCore: the inode-level engine of the client. The path-based public API
// (client_impl.cc) and the FUSE mount both sit on it.
//
// Every call that carries attributes of a file goes through the file's
// ConsistencyTracker, so the client never drops its cache because of its own
// writes and still notices other clients' changes. Data goes through the page
// cache and write-back (UNSTABLE WRITEs, many in flight, then COMMIT with the
// verifier of every WRITE checked), except O_DIRECT and O_APPEND writes, which
// bypass the cache.
//
// Thread-safe.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "client/channel.h"
#include "client/inode.h"
#include "client/url.h"
#include "nfsx/client.h"
#include "rpc/worker_pool.h"

namespace nfsx::client {

// Per open file: sequential read detection for read-ahead.
struct ReadAhead {
  std::atomic<uint64_t> next_offset{0};
  std::atomic<uint64_t> window{0};
  std::atomic<uint64_t> prefetched_until{0};
};

enum class WriteMode : uint8_t { kBuffered, kSync, kDirect };

class ClientCore {
 public:
  // Connects and mounts: the longest prefix of url.path the server exports;
  // *rest gets the remainder (to resolve with LOOKUPs).
  static Result<std::unique_ptr<ClientCore>> Mount(const NfsUrl& url, std::string* rest,
                                                   std::string* error);
  // Joins the background write-back, then Shutdown()s, before any member goes.
  ~ClientCore();

  // Fails every call in flight with ESHUTDOWN, and every later one at once:
  // threads waiting in a call (a Read's Fetch, a Flush) wake with that error.
  // On return no completion is running; the ones that were pending have run on
  // this thread, with every member still alive. Sends nothing: an owner that
  // must not lose dirty data flushes first (SyncAll). Idempotent.
  void Shutdown();

  const InodePtr& root() const { return root_; }
  const ClientOptions& options() const { return options_; }
  uint32_t rsize() const { return rsize_; }
  uint32_t wsize() const { return wsize_; }
  Channel& channel() { return *channel_; }
  WireStats stats() const { return channel_->stats(); }

  // Called when the client drops a file's cached data because somebody else
  // changed it (the FUSE mount tells the kernel). May run on any thread.
  void set_on_invalidate(std::function<void(const InodePtr&)> f) { on_invalidate_ = std::move(f); }

  // ---- attributes ----
  // Attributes as the application sees them (size includes unflushed writes).
  // Revalidates with GETATTR when the attribute cache expired or `force`.
  Result<Stat> GetAttr(const InodePtr& ino, bool force = false);
  Result<Stat> SetAttr(const InodePtr& ino, const SetAttrs& attrs);
  // ACCESS3 bits granted of `mask` (cached per uid while attributes hold).
  Result<uint32_t> Access(const InodePtr& ino, uint32_t mask);
  // Close-to-open: a fresh GETATTR; drops cached data if someone else changed it.
  Result<void> Revalidate(const InodePtr& ino);

  // ---- namespace ----
  Result<InodePtr> Lookup(const InodePtr& dir, const std::string& name);
  Result<InodePtr> Create(const InodePtr& dir, const std::string& name, uint32_t mode,
                          bool exclusive, bool truncate);
  Result<InodePtr> Mkdir(const InodePtr& dir, const std::string& name, uint32_t mode);
  Result<InodePtr> Symlink(const InodePtr& dir, const std::string& name, const std::string& target);
  Result<InodePtr> Mknod(const InodePtr& dir, const std::string& name, FileType type, uint32_t mode,
                         uint32_t major, uint32_t minor);
  Result<void> Remove(const InodePtr& dir, const std::string& name);
  Result<void> Rmdir(const InodePtr& dir, const std::string& name);
  Result<void> Rename(const InodePtr& from_dir, const std::string& from, const InodePtr& to_dir,
                      const std::string& to);
  Result<void> Link(const InodePtr& file, const InodePtr& dir, const std::string& name);
  Result<std::string> Readlink(const InodePtr& ino);
  // The whole directory, with attributes (READDIRPLUS, paged).
  Result<std::vector<DirEntry>> ReadDir(const InodePtr& dir);
  Result<FsStat> StatFs();

  // ---- data ----
  Result<size_t> Read(const InodePtr& ino, uint64_t offset, std::span<std::byte> out, bool direct,
                      ReadAhead* ra);
  Result<size_t> Write(const InodePtr& ino, uint64_t offset, std::span<const std::byte> data,
                       WriteMode mode);
  // O_APPEND: at the server's end of file, as one FILE_SYNC WRITE (seed 001).
  // Returns the offset the data landed at.
  Result<uint64_t> Append(const InodePtr& ino, std::span<const std::byte> data);
  // Sends dirty data; with `commit`, also COMMITs and resends whatever the
  // server may have lost, until every byte is committed under its verifier.
  // With `keep_error` (RELEASE, which has no caller to tell: pages of a shared
  // mapping written back after close), a write-back error stays recorded for the
  // next fsync/close of the file instead of being reported once here.
  // From a thread that may be interrupted (InterruptScope), the flush runs on a
  // pool thread to its end and only the wait for it ends with EINTR.
  Result<void> Flush(const InodePtr& ino, bool commit, bool keep_error = false);
  Result<void> Truncate(const InodePtr& ino, uint64_t size);
  // Flushes and commits every file with unwritten or uncommitted data.
  Result<void> SyncAll();

  // ---- asynchronous O_DIRECT reads and writes (the public async API) ----
  using IoDone = std::move_only_function<void(Result<size_t>)>;
  // Start one READ or one UNSTABLE WRITE that holds no thread and no lock while it is
  // in flight, and return true: `done` runs once, on a connection's reader thread (or
  // on this one, before the return), and must not wait for another call. Return false
  // with `done` untouched and nothing started when the I/O could not start without
  // waiting: more than one rsize/wsize, the file's dirty pages to send first, a flush
  // or COMMIT of the file running, uncommitted data over its bound. The caller then
  // runs Read/Write, from a thread that may wait.
  // A read's `out` is the caller's again once `done` has run; a write's data is copied.
  // Neither waits for a call, so they may be started from inside a `done`.
  bool StartReadDirect(const InodePtr& ino, uint64_t offset, std::span<std::byte> out,
                       IoDone& done);
  bool StartWriteDirect(const InodePtr& ino, uint64_t offset, std::span<const std::byte> data,
                        IoDone& done);

  // The inode for a handle and its attributes (the inode table), from a reply
  // to a call sent at `sent_ns` (steady clock).
  InodePtr Intern(const nfs3::nfs_fh3& fh, const nfs3::fattr3& attr, int64_t sent_ns);
  static Stat ToStat(const nfs3::fattr3& f);

 private:
  ClientCore() = default;

  // Attribute bookkeeping around a call that carries attributes of `ino`.
  ConsistencyTracker::Token BeginCall(const InodePtr& ino, ConsistencyTracker::Kind kind);
  void EndCall(const InodePtr& ino, const ConsistencyTracker::Token& token,
               const nfs3::pre_op_attr& pre, const nfs3::post_op_attr& post);
  // EndCall for a COMMIT: the attributes its reply carries, whatever its status.
  void EndCommitCall(const InodePtr& ino, const ConsistencyTracker::Token& token,
                     const Result<nfs3::COMMIT3res>& r);
  void EndDirCall(const InodePtr& dir, const ConsistencyTracker::Token& token,
                  const nfs3::wcc_data& wcc);
  // EndCall for a READ: 0 for NFS3_OK, else the errno of its failure.
  int EndReadCall(const InodePtr& ino, const ConsistencyTracker::Token& token,
                  const Result<nfs3::READ3res>& r);
  // What a WRITE's reply did, recorded: its range kept as an UnstableExtent (or, stable
  // already, trimmed from those kept), a failed stable WRITE noted as a failed sync.
  struct WriteReply {
    int error = 0;
    // What a short WRITE left unwritten, to send again.
    std::optional<std::pair<uint64_t, std::shared_ptr<PooledBytes>>> rest;
  };
  WriteReply EndWriteCall(const InodePtr& ino, const ConsistencyTracker::Token& token,
                          const std::pair<uint64_t, std::shared_ptr<PooledBytes>>& sent,
                          nfs3::stable_how stable, uint64_t failures_at_send,
                          const Result<nfs3::WRITE3res>& r);
  // Inode::sync_failures now: a WRITE sent at this count and answered at another is kept
  // marked for a resend.
  static uint64_t SyncFailures(Inode& ino);
  // flush_mu exclusively, once the file's asynchronous direct writes have ended: every
  // flush, COMMIT, FILE_SYNC write and truncation of a file holds it (see Inode::flush_mu).
  static std::unique_lock<std::shared_mutex> LockFlush(Inode& ino);
  // With flush_mu held exclusively: waits for the asynchronous direct writes that
  // started before it was taken. False if this thread was interrupted meanwhile.
  static bool WaitForAsyncWrites(Inode& ino);
  // An asynchronous direct WRITE (StartWriteDirect) and its `done`; `piece` is all of it,
  // or what a short WRITE of it left.
  struct AsyncWrite;
  void SendAsyncWrite(const std::shared_ptr<AsyncWrite>& w,
                      std::pair<uint64_t, std::shared_ptr<PooledBytes>> piece);
  // After EndCall marked the data stale (Inode::MarkDataStale): counts it and tells
  // on_invalidate_, outside the inode's lock.
  void InvalidateData(const InodePtr& ino);
  // The slow path of a read: revalidate attributes, drop stale pages.
  Result<void> PrepareRead(const InodePtr& ino);

  // Fetches the missing pages of [offset, offset+len) plus `ahead` bytes of
  // read-ahead; waits only for the part that was asked for.
  Result<void> Fetch(const InodePtr& ino, uint64_t offset, uint64_t len, uint64_t ahead);
  // Reads into `out` around the cache, the data landing there from the socket.
  Result<size_t> ReadDirect(const InodePtr& ino, uint64_t offset, std::span<std::byte> out);
  // ReadDirect's READs of rsize for all of `out`, many in flight: the bytes read
  // whole from the front of `out`, and `*at_end` when the file ends within them.
  // After a short reply or NFS3ERR_JUKEBOX the rest is the caller's to read.
  Result<size_t> ReadDirectPipelined(const InodePtr& ino, uint64_t offset, std::span<std::byte> out,
                                     bool* at_end);
  Result<size_t> WriteDirect(const InodePtr& ino, uint64_t offset, std::span<const std::byte> data);

  // Write-back. REQUIRES: ino->flush_mu held (shared suffices to send new direct data).
  // Whether a write by the current identity makes the server clear setuid/setgid
  // (a user's write to such a file; see server/access.h ModeAfterDataChange).
  bool WriteDropsSetIds(Inode& ino);
  Result<void> SendDirty(const InodePtr& ino, nfs3::stable_how stable);
  Result<void> CommitAndVerify(const InodePtr& ino);
  // Once commit_ahead_bytes more were written UNSTABLE, a COMMIT in the background.
  // REQUIRES: flush_mu held (shared or not).
  void MaybeCommitAhead(const InodePtr& ino);
  // Returns once no background COMMIT of the file is out. Syncs of one file from this
  // client never run together on the server (a COMMIT, a FILE_SYNC WRITE): fsync(2)
  // reports a write-back error to one caller per open file, and the other, succeeding,
  // may answer with the verifier from before the error rotated it.
  void WaitForCommitAhead(Inode& ino);
  void WaitForCommitAheadLocked(Inode& ino, std::unique_lock<std::mutex>& wb_lock);
  // Sends `data` at `offset` as WRITEs of at most wsize, many in flight, and
  // records each reply's verifier as an UnstableExtent (unless FILE_SYNC came back).
  Result<void> SendExtents(const InodePtr& ino,
                           std::vector<std::pair<uint64_t, std::shared_ptr<PooledBytes>>> runs,
                           nfs3::stable_how stable, bool resend,
                           std::function<void(size_t)> on_written = nullptr);
  void KickWriteback(const InodePtr& ino);
  // Flush() on the calling thread, to the end.
  Result<void> FlushNow(const InodePtr& ino, bool commit, bool keep_error);
  void BackgroundLoop();
  void MaybeEvict();

  ClientOptions options_;
  // Before every holder of an InodePtr, so it is destroyed after them: each
  // Inode's pages give their bytes back to it.
  std::unique_ptr<CacheBudget> budget_;
  std::unique_ptr<Channel> channel_;
  uint32_t rsize_ = 1 << 20, wsize_ = 1 << 20;
  InodePtr root_;
  std::atomic<int64_t> dirty_total_{0};
  std::function<void(const InodePtr&)> on_invalidate_;

  // Idle inodes beyond this many are forgotten (with their cached pages).
  static constexpr size_t kMaxIdleInodes = 16384;
  // REQUIRES: inodes_mu_ held.
  void EvictIdleInodesLocked();
  std::mutex inodes_mu_;
  std::unordered_map<std::string, InodePtr> inodes_;  // GUARDED_BY(inodes_mu_)

  // Background write-back of files whose dirty data reached a full WRITE.
  std::mutex bg_mu_;
  std::condition_variable bg_cv_;
  std::vector<InodePtr> bg_queue_;  // GUARDED_BY(bg_mu_)
  bool bg_stop_ = false;
  std::vector<std::thread> bg_threads_;
  // Flushes for callers that may be interrupted (see Flush). Declared after what
  // flushing uses, so that it is drained and joined first.
  std::unique_ptr<rpc::WorkerPool> flush_pool_ = std::make_unique<rpc::WorkerPool>(4);
};

}  // namespace nfsx::client
