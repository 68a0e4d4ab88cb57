// ClientCore: O_DIRECT reads and writes that hold no thread while in flight, for the
// public async API. One thread can keep as many in flight as it starts (libnfs's
// nfs_pread_async/nfs_pwrite_async); the blocking forms keep their own paths, whose
// calls the calling thread receives itself (one thread switch less per call).
//
// A WRITE started here records its reply exactly as write-back's do (EndWriteCall), and
// counts itself in Inode::async_writes instead of holding flush_mu: a flush, COMMIT or
// truncation, which takes flush_mu exclusively, first waits for those to end, and none
// starts while one holds it (StartWriteDirect only tries the lock).
#include "client/client_core.h"
#include "proto/nfsstat.h"

namespace nfsx::client {

using namespace nfs3;
using Kind = ConsistencyTracker::Kind;
using Run = std::pair<uint64_t, std::shared_ptr<PooledBytes>>;

bool ClientCore::StartReadDirect(const InodePtr& ino, uint64_t offset, std::span<std::byte> out,
                                 IoDone& done) {
  // Our own unsent writes must be visible to a direct read: sending them may wait.
  if (out.empty() || out.size() > rsize_ || ino->dirty_bytes.load() > 0) return false;
  auto token = BeginCall(ino, Kind::kObserve);
  channel_->ReadAsyncRetrying(
      ino->fh(), offset, out,
      [this, ino, token, done = std::move(done)](Result<READ3res> r) mutable {
        if (int err = EndReadCall(ino, token, r)) return done(Fail(err));
        size_t n = r->resok.data.bytes.size();
        channel_->AddReadBytes(n);
        done(n);
      });
  return true;
}

struct ClientCore::AsyncWrite {
  InodePtr ino;
  uint64_t offset;
  size_t size;
  // The writer's identity, for a short WRITE's rest sent from a reader thread.
  rpc::Credential who;
  IoDone done;
};

bool ClientCore::StartWriteDirect(const InodePtr& ino, uint64_t offset,
                                  std::span<const std::byte> data, IoDone& done) {
  if (data.empty() || data.size() > wsize_) return false;
  // Held only while this starts: a flush or COMMIT holding it exclusively may be waiting
  // for the server.
  std::shared_lock fl(ino->flush_mu, std::try_to_lock);
  if (!fl.owns_lock()) return false;
  {
    std::lock_guard lock(ino->wb_mu);
    // Cached dirty data goes first, so that the direct write lands after it; over the
    // bound, the writer pays for a COMMIT (WriteDirect).
    if (!ino->dirty_pages.empty() ||
        ino->unstable_bytes + ino->async_write_bytes + data.size() > options_.uncommitted_bytes) {
      return false;
    }
    ino->NoteWriterLocked();
    ++ino->async_writes;
    ino->async_write_bytes += data.size();
  }
  ino->write_seq.fetch_add(1);
  // Counted in async_writes now, which holds off flushes; `done` may run on this thread
  // (a connection that cannot send) and start another write.
  fl.unlock();
  auto w = std::make_shared<AsyncWrite>(
      AsyncWrite{ino, offset, data.size(), ActingAs::Or(channel_->cred()), std::move(done)});
  SendAsyncWrite(w, {offset, std::make_shared<PooledBytes>(data)});
  return true;
}

void ClientCore::SendAsyncWrite(const std::shared_ptr<AsyncWrite>& w, Run piece) {
  WRITE3args a;
  a.file = w->ino->fh();
  a.offset = piece.first;
  a.count = static_cast<uint32_t>(piece.second->size());
  a.stable = UNSTABLE;
  a.data = xdr::Opaque{std::span<const std::byte>(*piece.second), piece.second};
  channel_->AddWriteBytes(piece.second->size());
  auto token = BeginCall(w->ino, Kind::kModify);
  uint64_t failures_at_send = SyncFailures(*w->ino);
  ActingAs as(w->who);
  channel_->Call<WRITE3res>(
      nfsproc3::WRITE, a, [this, w, token, piece, failures_at_send](Result<WRITE3res> r) {
        const InodePtr& ino = w->ino;
        auto [err, rest] = EndWriteCall(ino, token, piece, UNSTABLE, failures_at_send, r);
        if (!err && rest) return SendAsyncWrite(w, std::move(*rest));
        if (!err) {
          ino->pages.DropChangedRange(w->offset, w->offset + w->size);
          ino->NoteWriteEnd(w->offset + w->size);
          // Counted in async_writes still: no flush_mu holder's COMMIT runs beside it.
          MaybeCommitAhead(ino);
        }
        {
          std::lock_guard lock(ino->wb_mu);
          --ino->async_writes;
          ino->async_write_bytes -= w->size;
        }
        ino->wb_cv.notify_all();
        // Last: `done` may start the next one, or end the caller's wait for the file.
        if (err) return w->done(Fail(err));
        w->done(w->size);
      });
}

}  // namespace nfsx::client
