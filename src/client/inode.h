// Inode: what the client keeps about one file of the server: its handle,
// attributes (with the consistency tracker), cached pages, and write-back state.
//
// Validity of cached data is one atomic word (seed 002). Readers check it with
// an acquire load and no lock; whoever marks data invalid ORs bits in with
// release semantics (never a plain store, which would drop bits another thread
// set); only the slow path, under the inode's lock, clears bits.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <shared_mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/buffer_pool.h"
#include "client/consistency.h"
#include "client/page_cache.h"
#include "client/reads_in_flight.h"
#include "proto/nfs3_types.h"
#include "rpc/message.h"

namespace nfsx::client {

enum Invalid : uint32_t {
  kInvalidData = 1u << 0,    // cached pages may be stale: drop them before use
  kInvalidAttr = 1u << 1,    // cached attributes must be fetched again
  kInvalidAccess = 1u << 2,  // cached ACCESS answers are stale
};

// Bytes written UNSTABLE and not yet covered by a COMMIT with the same
// verifier. They are kept so that they can be sent again if the server
// restarted (seed 003: the verifier of every WRITE reply is recorded, direct
// writes included). Extents of one file never overlap: newer bytes replace the
// older ones they cover, so a resend can never put old data over new.
struct UnstableExtent {
  std::shared_ptr<const PooledBytes> data;
  size_t begin = 0;  // the extent is data[begin, begin + len)
  size_t len = 0;
  nfs3::writeverf3 verf{};
  // A COMMIT covering it failed: the server may have lost it whatever verifier it shows
  // later (NFS-Ganesha's does not change on a write-back error), so it is sent again
  // before a COMMIT may forget it.
  bool resend = false;
};

class Inode {
 public:
  Inode(const nfs3::nfs_fh3& fh, const nfs3::fattr3& attr, CacheBudget* budget);

  const nfs3::nfs_fh3& fh() const { return fh_; }
  std::string_view key() const {
    return {reinterpret_cast<const char*>(fh_.data.data()), fh_.size};
  }
  uint64_t fileid() const { return fileid_; }
  nfs3::ftype3 type() const { return type_; }

  // ---- validity (lock-free fast path) ----
  uint32_t validity() const { return validity_.load(std::memory_order_acquire); }
  void SetInvalid(uint32_t bits) { validity_.fetch_or(bits, std::memory_order_release); }
  // REQUIRES: mu held (only the slow path clears).
  void ClearInvalid(uint32_t bits) { validity_.fetch_and(~bits, std::memory_order_release); }
  // Somebody else changed the file: cached data and ACCESS answers are stale, and
  // READs in flight must not fill pages any more. REQUIRES: mu held, in the same
  // critical section that stored the attributes showing the change.
  void MarkDataStale() {
    SetInvalid(kInvalidData | kInvalidAccess);
    pages.NewGeneration();
  }
  // Attributes are fresh until this steady-clock time (ns).
  bool AttrFresh(int64_t now_ns) const {
    return now_ns < attr_expiry_ns_.load(std::memory_order_acquire) && !(validity() & kInvalidAttr);
  }

  // ---- attributes, under mu ----
  std::mutex mu;
  ConsistencyTracker tracker;  // GUARDED_BY(mu)
  // Starts the attribute cache timer after attributes arrived in the reply to a
  // call sent at `sent_ns`. The timer runs from the sending, not the arrival (as
  // Linux's read_cache_jiffies): the reply shows the file as it was at some time
  // after the sending, and with noac a read that began before a slow reply
  // arrived must not take that reply as fresh. REQUIRES: mu held.
  void RefreshTimer(bool changed, double min_s, double max_s, int64_t sent_ns);
  // Attributes are stale now; replies to calls sent before this cannot make them
  // fresh again (they may predate whatever made them stale). REQUIRES: mu not held.
  void ExpireAttr();

  // Copies what lock-free readers need of tracker.attr() (the server's size)
  // into atomics. Call after every change of the tracker's state. REQUIRES: mu held.
  void PublishAttr();
  // The server's size as the tracker last knew it. Lock-free: the read path calls
  // this on every read, and many threads reading one file must not queue on mu.
  uint64_t ServerSize() const { return server_size_.load(std::memory_order_acquire); }
  // Size as the application sees it: the server's, or further if we wrote
  // beyond it and have not told the server yet. Lock-free.
  uint64_t Size() const;
  void NoteWriteEnd(uint64_t end);
  void ResetWriteEnd(uint64_t to) { write_end_.store(to); }

  // ACCESS answers by IdentityKey, valid until attributes change. GUARDED_BY(mu).
  std::unordered_map<uint64_t, uint32_t> access;

  // ---- data ----
  PageSet pages;
  ReadsInFlight reads_in_flight;
  // Bumped by every local write before it touches the pages: a READ sent before
  // may fill only existing pages (see FillTicket). Invalidations bump
  // pages.generation() instead.
  std::atomic<uint64_t> write_seq{0};

  // ---- write-back, under wb_mu ----
  std::mutex wb_mu;
  std::set<uint64_t> dirty_pages;               // GUARDED_BY(wb_mu): page indexes
  std::map<uint64_t, UnstableExtent> unstable;  // GUARDED_BY(wb_mu): by offset
  uint64_t unstable_bytes = 0;                  // GUARDED_BY(wb_mu)
  // A background COMMIT is out (ClientCore::MaybeCommitAhead); wb_cv tells when it
  // ends. GUARDED_BY(wb_mu).
  bool commit_ahead_in_flight = false;
  // Syncs of the file that failed or whose outcome is unknown (a COMMIT, a stable WRITE):
  // each may have lost every UNSTABLE write before it, so it marks all kept extents for
  // a resend, and a WRITE sent before it and answered after is recorded marked too.
  uint64_t sync_failures = 0;  // GUARDED_BY(wb_mu)
  // REQUIRES: wb_mu. A sync of the file failed, or may have.
  void NoteSyncFailureLocked() {
    ++sync_failures;
    for (auto& [offset, e] : unstable) e.resend = true;
  }
  // Bytes ever recorded unstable, and that count when the last background COMMIT was
  // sent: the next goes out commit_ahead_bytes later, not at every write while extents
  // a COMMIT could not forget (another verifier) are kept. GUARDED_BY(wb_mu).
  uint64_t unstable_added = 0;
  uint64_t unstable_added_at_commit_ahead = 0;
  // REQUIRES: wb_mu. Records [offset, offset+e.len), replacing older bytes there.
  void AddUnstable(uint64_t offset, UnstableExtent e);
  // REQUIRES: wb_mu. Forgets unstable bytes in [from, to).
  void TrimUnstable(uint64_t from, uint64_t to);
  // `data` (bytes from `offset` on, as a READ returned them) with the unstable bytes
  // that fall in its range copied over it, or nothing if none do. A READ answered by a
  // server that lost them (it restarted before our COMMIT) must not show older bytes
  // than we wrote: until a COMMIT makes them stable or resends them, ours are the
  // file's (takes wb_mu; one lookup, and a copy only when they overlap).
  std::optional<std::vector<std::byte>> WithUnstable(uint64_t offset,
                                                     std::span<const std::byte> data);
  // The identity of the last buffered write made under an ActingAs guard: write-back
  // of the file's dirty pages carries it. GUARDED_BY(wb_mu).
  std::optional<rpc::Credential> writer;
  // REQUIRES: wb_mu. The calling thread's identity (ActingAs) becomes the file's last
  // writer, so that write-back and resends (from any thread) carry it.
  void NoteWriterLocked();
  // O_DIRECT writes of the asynchronous API out now, and their bytes (ClientCore::
  // StartWriteDirect). They hold no lock while in flight: whoever takes flush_mu
  // exclusively waits on wb_cv for them to end before it sends or commits anything.
  int async_writes = 0;                 // GUARDED_BY(wb_mu)
  uint64_t async_write_bytes = 0;       // GUARDED_BY(wb_mu)
  uint64_t waits_for_async_writes = 0;  // GUARDED_BY(wb_mu): times one had to wait (tests)
  int wb_error = 0;                     // GUARDED_BY(wb_mu): reported by the next fsync/close
  // With wb_mu: commit_ahead_in_flight cleared, async_writes lowered.
  std::condition_variable wb_cv;
  // One flusher at a time: sends are ordered, so a resend never overtakes newer data.
  // O_DIRECT writes hold it shared: they run in parallel with each other, but never
  // while a COMMIT's verifier check (which forgets the extents it covered and resends
  // the rest) is running.
  std::shared_mutex flush_mu;
  std::atomic<uint64_t> dirty_bytes{0};
  // Serialises O_APPEND writes of this client so each lands at the end.
  std::mutex append_mu;

  // Open File objects; the inode stays cached while any is open.
  std::atomic<int> opens{0};

 private:
  nfs3::nfs_fh3 fh_;
  uint64_t fileid_;
  nfs3::ftype3 type_;
  std::atomic<uint32_t> validity_{0};
  std::atomic<int64_t> attr_expiry_ns_{0};
  std::atomic<int64_t> expired_at_ns_{0};  // the last ExpireAttr; stored under mu
  int64_t lease_sent_ns_ = 0;              // GUARDED_BY(mu): the call that set the expiry
  // tracker.attr().size, stored under mu by PublishAttr, read without it.
  std::atomic<uint64_t> server_size_{0};
  double attr_timeout_s_ = 0;  // GUARDED_BY(mu)
  std::atomic<uint64_t> write_end_{0};
};
using InodePtr = std::shared_ptr<Inode>;

int64_t SteadyNowNs();

}  // namespace nfsx::client
