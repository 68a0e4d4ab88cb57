// ClientCore: the write path and write-back.
//
// Buffered writes dirty pages; write-back coalesces dirty pages into WRITEs of
// wsize, sends them UNSTABLE with many in flight, and keeps each WRITE's bytes
// and verifier (an UnstableExtent) until a COMMIT with the same verifier covers
// it. After a COMMIT only extents whose verifier differs are sent again, so
// with a server that did not restart every byte crosses the wire once, and
// with one that did, nothing acknowledged is lost (seeds 003, 004).
#include <chrono>
#include <thread>

#include "base/interruption.h"
#include "base/logging.h"
#include "base/set_id_bits.h"
#include "client/client_core.h"
#include "proto/nfsstat.h"

namespace nfsx::client {

using namespace nfs3;
using Kind = ConsistencyTracker::Kind;
using Run = std::pair<uint64_t, std::shared_ptr<PooledBytes>>;

namespace {
// Write-back carries the identity of the file's last writer (acting_as.h), whichever
// thread sends it.
class AsLastWriter {
 public:
  explicit AsLastWriter(Inode& ino) {
    std::lock_guard lock(ino.wb_mu);
    who_ = ino.writer;
    if (who_) as_.emplace(*who_);
  }

 private:
  std::optional<rpc::Credential> who_;
  std::optional<ActingAs> as_;
};

}  // namespace

Result<size_t> ClientCore::Write(const InodePtr& ino, uint64_t offset,
                                 std::span<const std::byte> data, WriteMode mode) {
  if (data.empty()) return 0;
  if (mode == WriteMode::kDirect) return WriteDirect(ino, offset, data);
  ino->write_seq.fetch_add(1);
  for (int attempt = 0;; ++attempt) {
    uint64_t newly = 0;
    int64_t conflict = ino->pages.Write(offset, data, &newly);
    if (newly) {
      ino->dirty_bytes.fetch_add(newly);
      dirty_total_.fetch_add(static_cast<int64_t>(newly));
    }
    {
      std::lock_guard lock(ino->wb_mu);
      uint64_t first = offset / kPageSize, last = (offset + data.size() - 1) / kPageSize;
      if (conflict >= 0) last = static_cast<uint64_t>(conflict);
      for (uint64_t p = first; p <= last; ++p) ino->dirty_pages.insert(p);
      ino->NoteWriterLocked();
    }
    if (conflict < 0) break;
    // A page holds dirty bytes the new ones do not touch: send them first.
    if (auto f = Flush(ino, false); !f) return std::unexpected(f.error());
    if (attempt > 3) return Fail(EIO);
  }
  ino->NoteWriteEnd(offset + data.size());
  if (mode == WriteMode::kBuffered && WriteDropsSetIds(*ino)) {
    // The server clears the bits when the write reaches it; send it now, so that the
    // writer's next stat shows what the server did rather than the old mode.
    if (auto f = Flush(ino, false); !f) return std::unexpected(f.error());
  }
  if (mode == WriteMode::kSync || options_.noac) {
    auto fl = LockFlush(*ino);
    WaitForCommitAhead(*ino);
    if (auto s = SendDirty(ino, FILE_SYNC); !s) return std::unexpected(s.error());
    if (auto c = CommitAndVerify(ino); !c) return std::unexpected(c.error());
    return data.size();
  }
  if (ino->dirty_bytes.load() >= wsize_) KickWriteback(ino);
  if (dirty_total_.load() > static_cast<int64_t>(options_.dirty_bytes)) {
    // Too much unsent data: the writer pays for sending its own.
    if (auto f = Flush(ino, false); !f) return std::unexpected(f.error());
  }
  MaybeEvict();
  return data.size();
}

bool ClientCore::WriteDropsSetIds(Inode& ino) {
  if (ActingAs::Or(channel_->cred()).uid == 0) return false;
  std::lock_guard lock(ino.mu);
  return SetIdBitsClearedByWrite(ino.tracker.attr().mode) != 0;
}

Result<void> ClientCore::Flush(const InodePtr& ino, bool commit, bool keep_error) {
  if (!InterruptScope::Active()) return FlushNow(ino, commit, keep_error);
  // A caller that may be interrupted (a FUSE request: its process may get a
  // signal) waits for a flush that runs to its end on a pool thread, however long
  // the server takes: interrupting write-back half-way would leave data neither
  // in the cache nor on the server. The caller may stop waiting (EINTR); the
  // data stays dirty or unstable until written, and an error is kept for the
  // next fsync/close.
  struct Done {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
  };
  auto d = std::make_shared<Done>();
  flush_pool_->Submit([this, ino, commit, d] {
    (void)FlushNow(ino, commit, /*keep_error=*/true);
    std::lock_guard lock(d->mu);
    d->done = true;
    d->cv.notify_all();
  });
  {
    std::unique_lock lock(d->mu);
    if (!WaitUnlessInterrupted(lock, d->cv, [&] { return d->done; })) return Fail(EINTR);
  }
  std::lock_guard lock(ino->wb_mu);
  int err = ino->wb_error;
  if (err && commit && !keep_error) ino->wb_error = 0;  // reported once, as fsync(2) does
  if (err && (commit || keep_error)) return Fail(err);
  return {};
}

Result<void> ClientCore::FlushNow(const InodePtr& ino, bool commit, bool keep_error) {
  auto fl = LockFlush(*ino);
  auto sent = SendDirty(ino, UNSTABLE);
  bool over = false;
  {
    std::lock_guard lock(ino->wb_mu);
    over = ino->unstable_bytes > options_.uncommitted_bytes;
  }
  Result<void> committed;
  if (commit || over) {
    committed = CommitAndVerify(ino);
  } else if (sent) {
    MaybeCommitAhead(ino);
  }
  int err = 0;
  {
    // Under flush_mu still: an fsync of another descriptor cannot slip in between
    // and miss the error.
    std::lock_guard lock(ino->wb_mu);
    if (keep_error) {
      int failed = !sent ? sent.error().code : !committed ? committed.error().code : 0;
      if (failed && !ino->wb_error) ino->wb_error = failed;
    } else if (commit && ino->wb_error) {
      err = ino->wb_error;  // reported once, as fsync(2) does
      ino->wb_error = 0;
    }
  }
  if (!sent) return sent;
  if (!committed) return committed;
  if (err) return Fail(err);
  return {};
}

Result<void> ClientCore::SendDirty(const InodePtr& ino, stable_how stable) {
  AsLastWriter as(*ino);
  for (int round = 0; round < 64; ++round) {
    std::vector<uint64_t> indexes;
    {
      std::lock_guard lock(ino->wb_mu);
      if (ino->dirty_pages.empty()) break;
      indexes.assign(ino->dirty_pages.begin(), ino->dirty_pages.end());
      ino->dirty_pages.clear();
    }
    // Snapshot the dirty bytes; coalesce pages that meet into runs of at most wsize.
    struct Piece {
      uint64_t index;
      uint32_t version;
    };
    std::vector<Run> runs;
    std::vector<std::vector<Piece>> pieces;
    uint64_t run_end = UINT64_MAX;
    // pages_in_row[i]: how many consecutive page indexes start at indexes[i], so that a
    // run's buffer is allocated once at the size it will likely reach.
    std::vector<uint32_t> pages_in_row(indexes.size(), 1);
    for (size_t i = indexes.size(); i-- > 1;) {
      if (indexes[i - 1] + 1 == indexes[i]) pages_in_row[i - 1] = pages_in_row[i] + 1;
    }
    // A run that ended far short of the block taken for it (pages dirty in part, or a
    // row broken by a partial page) gives the block back for an exact copy: pooled
    // blocks stay resident, and scattered dirty pages would otherwise hold a block each.
    auto trim_last_run = [&runs] {
      if (runs.empty()) return;
      auto& buf = runs.back().second;
      if (buf->capacity() > BufferPool::kMinBlock && buf->size() <= buf->capacity() / 2) {
        buf = std::make_shared<PooledBytes>(std::span<const std::byte>(*buf));
      }
    };
    size_t at = 0;
    ino->pages.ForEachDirty(indexes, [&](uint64_t index, const Page& p) {
      while (indexes[at] != index) ++at;
      uint64_t b = index * kPageSize + p.dirty_begin, e = index * kPageSize + p.dirty_end;
      bool joins = !runs.empty() && run_end == b &&
                   runs.back().second->size() + (e - b) <=
                       std::min<size_t>(wsize_, runs.back().second->capacity());
      if (!joins) {
        trim_last_run();
        runs.emplace_back(b, std::make_shared<PooledBytes>(
                                 std::min<uint64_t>(wsize_, pages_in_row[at] * kPageSize)));
        pieces.emplace_back();
      }
      runs.back().second->Append(
          std::span(p.data() + p.dirty_begin, size_t{p.dirty_end} - p.dirty_begin));
      pieces.back().push_back({index, p.version});
      run_end = p.dirty_end == kPageSize ? e : UINT64_MAX;  // a run continues only at a page edge
    });
    trim_last_run();
    if (runs.empty()) break;
    // Each run, once written, cleans its pages unless they were written again meanwhile.
    auto clean = [this, ino, pieces](size_t i) {
      uint64_t cleaned = 0;
      for (const Piece& pc : pieces[i]) cleaned += ino->pages.MarkClean(pc.index, pc.version);
      ino->dirty_bytes.fetch_sub(std::min<uint64_t>(cleaned, ino->dirty_bytes.load()));
      dirty_total_.fetch_sub(static_cast<int64_t>(cleaned));
    };
    if (auto r = SendExtents(ino, std::move(runs), stable, false, clean); !r) {
      // The bytes are lost to the server; the error goes to the next fsync/close.
      for (size_t i = 0; i < pieces.size(); ++i) clean(i);
      std::lock_guard lock(ino->wb_mu);
      if (!ino->wb_error) ino->wb_error = r.error().code;
      return r;
    }
  }
  if (ino->dirty_bytes.load() == 0) {
    std::lock_guard lock(ino->wb_mu);
    if (ino->dirty_pages.empty()) ino->ResetWriteEnd(0);
  }
  return {};
}

Result<void> ClientCore::SendExtents(const InodePtr& ino, std::vector<Run> runs, stable_how stable,
                                     bool resend, std::function<void(size_t)> on_written) {
  // Cut runs into WRITEs of at most wsize.
  std::vector<std::pair<Run, size_t>> writes;  // (piece, index of its run)
  for (size_t i = 0; i < runs.size(); ++i) {
    auto& [off, buf] = runs[i];
    if (buf->size() <= wsize_) {
      writes.push_back({runs[i], i});
      continue;
    }
    for (size_t p = 0; p < buf->size(); p += wsize_) {
      size_t n = std::min<size_t>(wsize_, buf->size() - p);
      auto part = std::make_shared<PooledBytes>(std::span(buf->data() + p, n));
      writes.push_back({{off + p, part}, i});
    }
  }
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    int in_flight = 0;
    int error = 0;
    std::vector<int> parts_left;  // per run
    // What short WRITEs left unwritten, to send again (with their run's index).
    std::vector<std::pair<Run, size_t>> rest;
  };
  auto st = std::make_shared<State>();
  st->parts_left.assign(runs.size(), 0);
  for (auto& w : writes) ++st->parts_left[w.second];
  const int max_in_flight = std::max(1, options_.max_writes_in_flight);
  auto send_one = [&](const Run& run, size_t ri) {
    auto [offset, buf] = run;
    WRITE3args a;
    a.file = ino->fh();
    a.offset = offset;
    a.count = static_cast<uint32_t>(buf->size());
    a.stable = stable;
    a.data = xdr::Opaque{std::span<const std::byte>(*buf), buf};
    channel_->AddWriteBytes(buf->size());
    if (resend) channel_->AddResentBytes(buf->size());
    auto token = BeginCall(ino, Kind::kModify);
    uint64_t failures_at_send = SyncFailures(*ino);
    channel_->Call<WRITE3res>(nfsproc3::WRITE, a,
                              [this, ino, token, st, offset, buf, stable, ri, on_written,
                               failures_at_send](Result<WRITE3res> r) {
                                auto [err, rest] = EndWriteCall(ino, token, Run{offset, buf},
                                                                stable, failures_at_send, r);
                                bool run_done = false;
                                {
                                  std::lock_guard lock(st->mu);
                                  if (err && !st->error) st->error = err;
                                  if (rest) {
                                    st->rest.emplace_back(std::move(*rest), ri);
                                  } else {
                                    run_done = --st->parts_left[ri] == 0;
                                  }
                                }
                                if (run_done && !err && on_written) on_written(ri);
                                std::lock_guard lock(st->mu);
                                --st->in_flight;
                                st->cv.notify_all();
                              });
  };
  while (!writes.empty()) {
    for (auto& [run, run_index] : writes) {
      {
        std::unique_lock lock(st->mu);
        st->cv.wait(lock, [&] { return st->in_flight < max_in_flight; });
        if (st->error) break;
        ++st->in_flight;
      }
      send_one(run, run_index);
    }
    std::unique_lock lock(st->mu);
    st->cv.wait(lock, [&] { return st->in_flight == 0; });
    if (st->error) return Fail(st->error);
    writes = std::move(st->rest);
    st->rest.clear();
  }
  return {};
}

ClientCore::WriteReply ClientCore::EndWriteCall(const InodePtr& ino,
                                                const ConsistencyTracker::Token& token,
                                                const Run& sent, stable_how stable,
                                                uint64_t failures_at_send,
                                                const Result<WRITE3res>& r) {
  const auto& [offset, buf] = sent;
  WriteReply out;
  if (!r) {
    out.error = r.error().code;
    EndCall(ino, token, std::nullopt, std::nullopt);
  } else if (r->status != NFS3_OK) {
    out.error = ErrnoFromNfsStat(r->status);
    EndCall(ino, token, r->resfail.wcc.before, r->resfail.wcc.after);
  } else {
    EndCall(ino, token, r->resok.file_wcc.before, r->resok.file_wcc.after);
    size_t written = std::min<size_t>(r->resok.count, buf->size());
    // A short write (the server's pwrite stopped early): the rest is sent
    // again, as Linux does; a WRITE that wrote nothing is an error.
    if (written == 0) {
      out.error = EIO;
    } else if (written < buf->size()) {
      out.rest = Run{offset + written, std::make_shared<PooledBytes>(std::span(
                                           buf->data() + written, buf->size() - written))};
    }
    // The verifier of every WRITE is recorded with its range, whatever the
    // stability asked for; only FILE_SYNC data needs no COMMIT (seed 003).
    bool stable_enough =
        r->resok.committed == FILE_SYNC || (stable == DATA_SYNC && r->resok.committed == DATA_SYNC);
    std::lock_guard lock(ino->wb_mu);
    if (!out.error && !stable_enough) {
      UnstableExtent e{buf, 0, written, r->resok.verf};
      // Landed before a sync that failed meanwhile: it may be what that lost.
      e.resend = ino->sync_failures != failures_at_send;
      ino->AddUnstable(offset, std::move(e));
    } else if (!out.error) {
      ino->TrimUnstable(offset, offset + written);  // newer and already stable
      // No extent is kept to overlay a READ the server answered before this WRITE
      // landed: if the page is evicted before that READ's reply is processed, the reply
      // must not make it again with the bytes from before (as after a COMMIT).
      ino->write_seq.fetch_add(1);
    }
  }
  // A stable WRITE whose sync failed (or may have: no reply) may be the sync told
  // of a write-back error that lost the file's earlier UNSTABLE data.
  if (stable != UNSTABLE && (!r || r->status == NFS3ERR_IO)) {
    std::lock_guard lock(ino->wb_mu);
    ino->NoteSyncFailureLocked();
  }
  return out;
}

uint64_t ClientCore::SyncFailures(Inode& ino) {
  std::lock_guard lock(ino.wb_mu);
  return ino.sync_failures;
}

std::unique_lock<std::shared_mutex> ClientCore::LockFlush(Inode& ino) {
  std::unique_lock fl(ino.flush_mu);
  // Not interruptible: ours to the end, as the flush that follows.
  std::unique_lock lock(ino.wb_mu);
  if (ino.async_writes > 0) ++ino.waits_for_async_writes;
  ino.wb_cv.wait(lock, [&] { return ino.async_writes == 0; });
  return fl;
}

bool ClientCore::WaitForAsyncWrites(Inode& ino) {
  std::unique_lock lock(ino.wb_mu);
  if (ino.async_writes > 0) ++ino.waits_for_async_writes;
  return WaitUnlessInterrupted(lock, ino.wb_cv, [&] { return ino.async_writes == 0; });
}

void ClientCore::EndCommitCall(const InodePtr& ino, const ConsistencyTracker::Token& token,
                               const Result<COMMIT3res>& r) {
  if (!r) {
    EndCall(ino, token, std::nullopt, std::nullopt);
    return;
  }
  const wcc_data& wcc = r->status == NFS3_OK ? r->resok.file_wcc : r->resfail.wcc;
  EndCall(ino, token, std::nullopt, wcc.after);
}

Result<void> ClientCore::CommitAndVerify(const InodePtr& ino) {
  AsLastWriter as(*ino);
  for (int round = 0; round < 8; ++round) {
    {
      // (No background COMMIT starts meanwhile: both hold flush_mu.)
      std::unique_lock lock(ino->wb_mu);
      WaitForCommitAheadLocked(*ino, lock);
      if (ino->unstable.empty()) return {};
    }
    // COMMIT changes nothing a client caches: an observation of the state after it.
    // (As a modification without pre-op attributes, Ganesha's, it would make
    // whatever state it shows ours, another client's write included.)
    auto token = BeginCall(ino, Kind::kObserve);
    auto r = channel_->CallSync<COMMIT3res>(nfsproc3::COMMIT, COMMIT3args{ino->fh(), 0, 0});
    EndCommitCall(ino, token, r);
    if (!r || r->status != NFS3_OK) {
      // Failed, or unknown (a soft timeout): it may have run and lost data on the server.
      std::lock_guard lock(ino->wb_mu);
      ino->NoteSyncFailureLocked();
    }
    if (!r) return std::unexpected(r.error());
    if (r->status != NFS3_OK) return Fail(ErrnoFromNfsStat(r->status));
    // Everything written under the COMMIT's verifier is on disk, unless an earlier
    // COMMIT covering it failed. The rest was acknowledged by a server instance that
    // is gone (or saw a write-back error): send it again. Extents never overlap, so order does not
    // matter. They stay recorded until the resend's replies replace them: meanwhile a READ must
    // still see them over what the server lost, and if the resend fails, the next fsync must still
    // find them.
    std::vector<Run> again;
    {
      std::lock_guard lock(ino->wb_mu);
      ino->write_seq.fetch_add(1);  // as in MaybeCommitAhead: no overlay for late READs
      for (auto it = ino->unstable.begin(); it != ino->unstable.end();) {
        const UnstableExtent& e = it->second;
        if (e.verf == r->resok.verf && !e.resend) {
          ino->unstable_bytes -= e.len;
          it = ino->unstable.erase(it);
          continue;
        }
        again.emplace_back(
            it->first, std::make_shared<PooledBytes>(std::span(e.data->data() + e.begin, e.len)));
        ++it;
      }
    }
    if (again.empty()) return {};
    log::Info("client: resending {} writes of file {} (a verifier changed, or a COMMIT failed)",
              again.size(), ino->fileid());
    auto sent = SendExtents(ino, std::move(again), UNSTABLE, true);
    // A READ the server answered before the resend landed carries what it had lost, and
    // its reply may be processed after the next round's COMMIT forgot the extents that
    // would overlay it (another connection): it may no longer create pages.
    ino->write_seq.fetch_add(1);
    if (!sent) return sent;
  }
  return Fail(EIO);  // the server keeps changing its verifier
}

void ClientCore::WaitForCommitAheadLocked(Inode& ino, std::unique_lock<std::mutex>& wb_lock) {
  ino.wb_cv.wait(wb_lock, [&] { return !ino.commit_ahead_in_flight; });
}

void ClientCore::WaitForCommitAhead(Inode& ino) {
  std::unique_lock lock(ino.wb_mu);
  WaitForCommitAheadLocked(ino, lock);
}

void ClientCore::MaybeCommitAhead(const InodePtr& ino) {
  if (options_.commit_ahead_bytes == 0) return;
  // What the COMMIT covers: extents acknowledged before it is sent. One written later
  // may reach the server's disk after its fsync began, so it stays kept, even under the
  // same verifier. The copies hold the extents' buffers, so a block recycled by the pool
  // cannot make a newer extent look like one of these.
  std::vector<std::pair<uint64_t, UnstableExtent>> covered;
  {
    std::lock_guard lock(ino->wb_mu);
    if (ino->commit_ahead_in_flight ||
        ino->unstable_added - ino->unstable_added_at_commit_ahead < options_.commit_ahead_bytes) {
      return;
    }
    ino->commit_ahead_in_flight = true;
    ino->unstable_added_at_commit_ahead = ino->unstable_added;
    covered.assign(ino->unstable.begin(), ino->unstable.end());
  }
  AsLastWriter as(*ino);
  auto token = BeginCall(ino, Kind::kObserve);  // as CommitAndVerify's
  channel_->Call<COMMIT3res>(
      nfsproc3::COMMIT, COMMIT3args{ino->fh(), 0, 0},
      [this, ino, token, covered = std::move(covered)](Result<COMMIT3res> r) {
        EndCommitCall(ino, token, r);
        {
          std::lock_guard lock(ino->wb_mu);
          ino->commit_ahead_in_flight = false;
          if (r && r->status != NFS3_OK) {
            // The server could not make them stable: the next fsync/close reports it (its
            // own COMMIT may succeed, a server's fsync telling an error only once). What
            // is kept is resent when the server changed its verifier, as nfsx does.
            if (ino->wb_error == 0) ino->wb_error = ErrnoFromNfsStat(r->status);
            // Every extent, not only those it covered: one of those may have been split
            // since. The newer ones are resent for nothing, which is rare and harmless.
            ino->NoteSyncFailureLocked();
          } else if (!r) {
            ino->NoteSyncFailureLocked();  // unknown (a soft timeout): it may have failed
          } else {
            // A READ answered before an extent's WRITE and processed after it is
            // forgotten here would find nothing to overlay: it may no longer create pages.
            ino->write_seq.fetch_add(1);
            for (const auto& [off, e] : covered) {
              if (e.verf != r->resok.verf) continue;
              auto it = ino->unstable.find(off);
              // Replaced or split since (a newer write over part of it): kept whole.
              if (it == ino->unstable.end() || it->second.data != e.data ||
                  it->second.begin != e.begin || it->second.len != e.len || it->second.resend) {
                continue;
              }
              ino->unstable_bytes -= e.len;
              ino->unstable.erase(it);
            }
          }
          // A failure to send (a soft timeout, shutdown) leaves it all to the next fsync.
        }
        ino->wb_cv.notify_all();
        channel_->AddCommitAhead();
      });
}

Result<size_t> ClientCore::WriteDirect(const InodePtr& ino, uint64_t offset,
                                       std::span<const std::byte> data) {
  bool dirty;
  {
    std::lock_guard lock(ino->wb_mu);
    dirty = !ino->dirty_pages.empty();
  }
  if (dirty) {
    // Cached dirty data of the file goes first, so the direct write lands after it.
    auto fl = LockFlush(*ino);
    if (auto s = SendDirty(ino, UNSTABLE); !s) return std::unexpected(s.error());
  }
  {
    // Its data is kept for a resend, which may run on another thread (a COMMIT after a
    // restart, from a flush pool or another user's close): it must go out as this writer.
    // After the dirty data above, which went out as its own writer.
    std::lock_guard lock(ino->wb_mu);
    ino->NoteWriterLocked();
  }
  {
    std::shared_lock fl(ino->flush_mu);  // many direct writers of one file at once
    ino->write_seq.fetch_add(1);
    auto buf = std::make_shared<PooledBytes>(data);
    auto sent = SendExtents(ino, {{offset, buf}}, UNSTABLE, false);
    // Failed part-way, some of its WRITEs may have landed: cached bytes of the range
    // are the server's no longer, whatever the outcome.
    ino->pages.DropChangedRange(offset, offset + data.size());
    if (!sent) return std::unexpected(sent.error());
    ino->NoteWriteEnd(offset + data.size());
    MaybeCommitAhead(ino);  // under flush_mu: never beside CommitAndVerify's COMMIT
  }
  bool over;
  {
    std::lock_guard lock(ino->wb_mu);
    over = ino->unstable_bytes > options_.uncommitted_bytes;
  }
  if (over) {
    auto fl = LockFlush(*ino);
    if (auto c = CommitAndVerify(ino); !c) return std::unexpected(c.error());
  }
  return data.size();
}

Result<uint64_t> ClientCore::Append(const InodePtr& ino, std::span<const std::byte> data) {
  std::lock_guard append(ino->append_mu);
  if (ino->dirty_bytes.load() > 0) {
    if (auto f = Flush(ino, false); !f) return std::unexpected(f.error());
  }
  // The end of file from the last reply, when it is recent enough to trust;
  // a GETATTR only when the attribute cache says so (seed 001).
  if (!ino->AttrFresh(SteadyNowNs())) {
    if (auto r = Revalidate(ino); !r) return std::unexpected(r.error());
  }
  uint64_t offset = ino->Size();
  auto fl = LockFlush(*ino);
  WaitForCommitAhead(*ino);
  ino->write_seq.fetch_add(1);
  auto buf = std::make_shared<PooledBytes>(data);
  auto sent = SendExtents(ino, {{offset, buf}}, FILE_SYNC, false);
  // Pages of the appended range held zeros or nothing: drop them so no reader of
  // this client sees stale bytes where the append landed (some of it may have,
  // even when it failed).
  ino->pages.DropChangedRange(offset, offset + data.size());
  if (!sent) return std::unexpected(sent.error());
  ino->NoteWriteEnd(offset + data.size());
  return offset;
}

Result<void> ClientCore::Truncate(const InodePtr& ino, uint64_t size) {
  if (auto f = Flush(ino, false); !f) return f;
  // No write-back or resend may run from here until the trim below: a resend of bytes
  // past the new end landing after the SETATTR would grow the file back (an fsync's
  // COMMIT that found a changed verifier, between our flush and our SETATTR). A running
  // flush may wait for a server that is down: the caller must stay interruptible, so
  // the lock is polled rather than waited for (it is free but for such a race).
  std::unique_lock fl(ino->flush_mu, std::defer_lock);
  while (!fl.try_lock()) {
    if (InterruptScope::Interrupted()) return Fail(EINTR);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (!WaitForAsyncWrites(*ino)) return Fail(EINTR);
  auto token = BeginCall(ino, Kind::kModify);
  SETATTR3args a;
  a.object = ino->fh();
  a.new_attributes.size = size;
  auto r = channel_->CallSync<SETATTR3res>(nfsproc3::SETATTR, a);
  if (!r) {
    EndCall(ino, token, std::nullopt, std::nullopt);
    return std::unexpected(r.error());
  }
  const wcc_data& wcc = r->status == NFS3_OK ? r->resok.obj_wcc : r->resfail.obj_wcc;
  EndCall(ino, token, wcc.before, wcc.after);
  if (r->status != NFS3_OK) return Fail(ErrnoFromNfsStat(r->status));
  ino->write_seq.fetch_add(1);
  ino->pages.Truncate(size);
  ino->ResetWriteEnd(0);
  {
    // Uncommitted bytes past the new end must not come back by a resend.
    std::lock_guard lock(ino->wb_mu);
    ino->TrimUnstable(size, UINT64_MAX);
  }
  return {};
}

Result<void> ClientCore::SyncAll() {
  std::vector<InodePtr> all;
  {
    std::lock_guard lock(inodes_mu_);
    for (auto& [k, ino] : inodes_) all.push_back(ino);
  }
  Result<void> first;
  for (auto& ino : all) {
    bool busy;
    {
      std::lock_guard lock(ino->wb_mu);
      // An asynchronous WRITE in flight becomes unstable data when its reply comes.
      busy = !ino->dirty_pages.empty() || !ino->unstable.empty() || ino->async_writes > 0 ||
             ino->wb_error;
    }
    if (!busy) continue;
    auto r = Flush(ino, true);
    if (!r && first) first = r;
  }
  return first;
}

void ClientCore::KickWriteback(const InodePtr& ino) {
  std::lock_guard lock(bg_mu_);
  if (std::find(bg_queue_.begin(), bg_queue_.end(), ino) != bg_queue_.end()) return;
  bg_queue_.push_back(ino);
  bg_cv_.notify_one();
}

void ClientCore::BackgroundLoop() {
  for (;;) {
    InodePtr ino;
    {
      std::unique_lock lock(bg_mu_);
      bg_cv_.wait(lock, [&] { return bg_stop_ || !bg_queue_.empty(); });
      if (bg_queue_.empty()) return;
      ino = std::move(bg_queue_.front());
      bg_queue_.erase(bg_queue_.begin());
    }
    // Only full WRITEs go out in the background; fsync/close send the rest.
    if (ino->dirty_bytes.load() >= wsize_) (void)Flush(ino, false);
  }
}

}  // namespace nfsx::client
