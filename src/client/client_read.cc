// ClientCore: the read path. Cached reads check validity with one atomic load
// and take no inode lock (seed 002); misses fetch pages with READs of rsize, many
// in flight, and read ahead when access is sequential.
#include <latch>

#include "base/interruption.h"
#include "base/logging.h"
#include "client/client_core.h"
#include "proto/nfsstat.h"

namespace nfsx::client {

using namespace nfs3;
using Kind = ConsistencyTracker::Kind;

namespace {
// How far from the end of the previous read a read may start and still continue
// a sequential stream.
constexpr uint64_t kReadAheadSlack = 1 << 20;
// READs one direct read keeps in flight: a 16 MiB read at the default rsize in
// one round trip, with the replies' memory bounded by the caller's buffer.
constexpr int kDirectReadWindow = 16;

// The runs of whole pages of `r` that hold bytes of [r.begin, end) not cached.
std::vector<ReadsInFlight::Range> MissingRuns(Inode& ino, ReadsInFlight::Range r, uint64_t end) {
  std::vector<ReadsInFlight::Range> runs;
  for (uint64_t b = r.begin; b < r.end; b += kPageSize) {
    uint64_t e = std::min({b + kPageSize, r.end, end});
    bool missing = e > b && ino.pages.FirstMissing(b, e) >= 0;
    if (!missing) continue;
    if (!runs.empty() && runs.back().end == b) {
      runs.back().end = std::min(b + kPageSize, r.end);
    } else {
      runs.push_back({b, std::min(b + kPageSize, r.end)});
    }
  }
  return runs;
}
}  // namespace

int ClientCore::EndReadCall(const InodePtr& ino, const ConsistencyTracker::Token& token,
                            const Result<READ3res>& r) {
  if (!r) {
    EndCall(ino, token, std::nullopt, std::nullopt);
    return r.error().code;
  }
  if (r->status != NFS3_OK) {
    EndCall(ino, token, std::nullopt, r->resfail.obj_attributes);
    return ErrnoFromNfsStat(r->status);
  }
  EndCall(ino, token, std::nullopt, r->resok.file_attributes);
  return 0;
}

Result<void> ClientCore::PrepareRead(const InodePtr& ino) {
  std::unique_lock lock(ino->mu);
  // Re-check under the lock: another reader may have done the work already.
  if (!ino->AttrFresh(SteadyNowNs())) {
    lock.unlock();
    if (auto r = Revalidate(ino); !r) return r;
    lock.lock();
  }
  if (ino->validity() & kInvalidData) {
    ino->pages.InvalidateClean();  // a new generation: READs in flight cannot fill
    ino->ClearInvalid(kInvalidData);
  }
  return {};
}

Result<size_t> ClientCore::Read(const InodePtr& ino, uint64_t offset, std::span<std::byte> out,
                                bool direct, ReadAhead* ra) {
  if (direct) return ReadDirect(ino, offset, out);
  // The fast path: an acquire load of the validity word and of the attribute
  // deadline; no lock unless one of them says the cache needs attention.
  if ((ino->validity() & kInvalidData) || !ino->AttrFresh(SteadyNowNs())) {
    if (auto r = PrepareRead(ino); !r) return std::unexpected(r.error());
  }
  uint64_t size = ino->Size();
  if (offset >= size || out.empty()) return 0;
  size_t n = static_cast<size_t>(std::min<uint64_t>(out.size(), size - offset));
  std::span<std::byte> want = out.first(n);

  uint64_t ahead = 0;
  if (ra) {
    // A stream counts as sequential when each read starts near where the last one
    // ended: a FUSE mount's threads deliver the kernel's read-ahead blocks a little
    // out of order, and an exact match would reset the window on every swap.
    uint64_t next = ra->next_offset.load(std::memory_order_relaxed);
    uint64_t w = ra->window.load(std::memory_order_relaxed);
    uint64_t slack = std::max<uint64_t>(w, kReadAheadSlack);
    bool sequential = offset + slack >= next && offset <= next + slack && (next > 0 || offset == 0);
    w = sequential ? std::clamp<uint64_t>(w * 2, 128 * 1024, options_.readahead_bytes) : 0;
    ra->window.store(w, std::memory_order_relaxed);
    ra->next_offset.store(std::max(offset + n, sequential ? next : 0), std::memory_order_relaxed);
    ahead = w;
  }
  for (int attempt = 0; attempt < 4; ++attempt) {
    if (ino->pages.ReadCached(offset, want)) {
      if (ra && ahead > 0) {
        // Keep the next window coming while the application reads this one.
        uint64_t end = offset + n;
        uint64_t until = ra->prefetched_until.load(std::memory_order_relaxed);
        if (until < end + ahead / 2 && end < size) {
          ra->prefetched_until.store(end + ahead, std::memory_order_relaxed);
          if (ino->pages.FirstMissing(end, std::min(size, end + ahead)) >= 0) {
            (void)Fetch(ino, end, 0, ahead);
          }
        }
      }
      return n;
    }
    if (auto f = Fetch(ino, offset, n, ahead); !f) return std::unexpected(f.error());
    if (ra && ahead) ra->prefetched_until.store(offset + n + ahead, std::memory_order_relaxed);
  }
  // The pages keep being dropped under us (invalidations, memory pressure, or
  // our own concurrent writes): read around the cache instead.
  return ReadDirect(ino, offset, want);
}

Result<void> ClientCore::Fetch(const InodePtr& ino, uint64_t offset, uint64_t len, uint64_t ahead) {
  uint64_t size = ino->Size();
  uint64_t first = offset / kPageSize;
  uint64_t need_end = offset + len;  // bytes the caller waits for
  uint64_t end = std::min(size, std::max(need_end, offset + ahead));
  uint64_t last = end == 0 ? 0 : (end - 1) / kPageSize;
  if (end <= offset && len == 0) return {};

  // Runs of missing pages, less what READs already under way are fetching, each cut
  // into READs of rsize.
  struct Chunk {
    ReadsInFlight::Range range;
    bool needed;
  };
  std::vector<Chunk> chunks;
  bool others_fetching = false;
  uint64_t run_start = UINT64_MAX;
  auto flush_run = [&](uint64_t stop_page) {
    if (run_start == UINT64_MAX) return;
    for (const auto& r : ino->reads_in_flight.Claim(run_start * kPageSize, stop_page * kPageSize,
                                                    rsize_, &others_fetching)) {
      // A READ that ended between our look at the pages and the claim has filled
      // some of them already (it fills before it finishes): fetch only what is
      // still missing, or a block is read twice. Once claimed, no other READ can
      // fill these pages, so this second look is exact.
      std::vector<ReadsInFlight::Range> missing = MissingRuns(*ino, r, end);
      if (missing.size() == 1 && missing[0].begin == r.begin && missing[0].end == r.end) {
        chunks.push_back({r, r.begin < need_end});
        continue;
      }
      if (missing.empty()) {
        ino->reads_in_flight.Finish(r);
      } else {
        ino->reads_in_flight.Narrow(r, missing);
      }
      for (const auto& m : missing) chunks.push_back({m, m.begin < need_end});
    }
    run_start = UINT64_MAX;
  };
  for (uint64_t page = first; page <= last; ++page) {
    uint64_t b = std::max(offset, page * kPageSize), e = std::min(end, (page + 1) * kPageSize);
    bool missing = e > b && ino->pages.FirstMissing(b, e) >= 0;
    if (missing && run_start == UINT64_MAX) run_start = page;
    if (!missing) flush_run(page);
  }
  flush_run(last + 1);
  // Bytes the caller needs that other READs are fetching: wait for those too.
  auto wait_for_others = [&]() -> Result<void> {
    if (others_fetching && need_end > offset && !ino->reads_in_flight.Wait(offset, need_end)) {
      return Fail(EINTR);
    }
    return {};
  };
  if (chunks.empty()) return wait_for_others();

  struct Wait {
    std::mutex mu;
    std::condition_variable cv;
    int pending = 0;
    int error = 0;
  };
  auto wait = std::make_shared<Wait>();
  for (const Chunk& c : chunks) {
    if (c.needed) ++wait->pending;
  }
  for (const Chunk& c : chunks) {
    FillTicket ticket{ino->pages.generation(), &ino->write_seq, ino->write_seq.load()};
    auto token = BeginCall(ino, Kind::kObserve);
    uint64_t c_offset = c.range.begin;
    auto c_count = static_cast<uint32_t>(c.range.end - c.range.begin);
    channel_->Call<READ3res>(
        nfsproc3::READ, READ3args{ino->fh(), c_offset, c_count},
        [this, ino, c, ticket, token, wait](Result<READ3res> r) {
          int err = EndReadCall(ino, token, r);
          if (!err) {
            auto data = r->resok.data.bytes;
            channel_->AddReadBytes(data.size());
            // Fill re-checks the ticket under the locks that invalidation takes:
            // data read before our cache was dropped is stale, and data read before
            // one of our own writes may only fill pages that exist.
            uint64_t begin = c.range.begin;
            uint64_t file_size = r->resok.eof ? begin + data.size() : ino->Size();
            // Bytes we wrote and the server has not made stable win over what it
            // answered: it may have lost them in a restart (they go out again at the
            // next COMMIT), and a reader must never see older bytes than we wrote.
            std::optional<std::vector<std::byte>> ours = ino->WithUnstable(begin, data);
            if (ours) data = *ours;
            ino->pages.Fill(begin, data, std::max(file_size, begin + data.size()), ticket);
          }
          ino->reads_in_flight.Finish(c.range);
          if (!c.needed) return;
          std::lock_guard lock(wait->mu);
          if (err && !wait->error) wait->error = err;
          if (--wait->pending == 0) wait->cv.notify_all();
        });
  }
  std::unique_lock lock(wait->mu);
  // The READs sent go on if this caller gives up (a signal); their callbacks own `wait`.
  if (!WaitUnlessInterrupted(lock, wait->cv, [&] { return wait->pending == 0; })) {
    return Fail(EINTR);
  }
  lock.unlock();
  MaybeEvict();
  if (wait->error) return Fail(wait->error);
  return wait_for_others();
}

Result<size_t> ClientCore::ReadDirect(const InodePtr& ino, uint64_t offset,
                                      std::span<std::byte> out) {
  // Our own unsent writes must be visible to a direct read.
  if (ino->dirty_bytes.load() > 0) {
    if (auto f = Flush(ino, false); !f) return std::unexpected(f.error());
  }
  size_t done = 0;
  if (out.size() > rsize_) {
    bool at_end = false;
    auto r = ReadDirectPipelined(ino, offset, out, &at_end);
    if (!r) return r;
    done = *r;
    if (at_end) return done;
  }
  // One READ at a time: a read of one rsize (the calling thread receives its
  // reply, with no handoff), or what a pipelined read could not place.
  while (done < out.size()) {
    uint32_t count = static_cast<uint32_t>(std::min<uint64_t>(rsize_, out.size() - done));
    auto token = BeginCall(ino, Kind::kObserve);
    // The data lands in the caller's buffer straight from the socket.
    auto r = channel_->ReadSync(ino->fh(), offset + done, out.subspan(done, count));
    if (int err = EndReadCall(ino, token, r)) return Fail(err);
    size_t n = r->resok.data.bytes.size();
    channel_->AddReadBytes(n);
    done += n;
    if (r->resok.eof || n == 0) break;
  }
  return done;
}

Result<size_t> ClientCore::ReadDirectPipelined(const InodePtr& ino, uint64_t offset,
                                               std::span<std::byte> out, bool* at_end) {
  struct Chunk {
    int error = 0;
    bool jukebox = false;
    bool eof = false;
    size_t bytes = 0;
  };
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    std::vector<Chunk> chunks;  // GUARDED_BY(mu)
    int in_flight = 0;          // GUARDED_BY(mu)
    // A reply ended the run of whole chunks: the READs after it would be wasted.
    bool stop = false;  // GUARDED_BY(mu)
  };
  const size_t count = (out.size() + rsize_ - 1) / rsize_;
  auto chunk = [&](size_t i) {
    return out.subspan(i * rsize_, std::min<size_t>(rsize_, out.size() - i * rsize_));
  };
  // The callbacks own the state: one may still be notifying when we return.
  auto st = std::make_shared<State>();
  st->chunks.resize(count);
  std::vector<Channel::SentRead> sent(count);  // this thread's alone
  size_t next = 0;
  std::unique_lock lock(st->mu);
  auto can_send = [&] { return next < count && !st->stop && st->in_flight < kDirectReadWindow; };
  for (;;) {
    while (can_send()) {
      size_t i = next++;
      ++st->in_flight;
      // A callback may run before ReadAsync returns (a connection shut down).
      lock.unlock();
      std::span<std::byte> dest = chunk(i);
      auto token = BeginCall(ino, Kind::kObserve);
      sent[i] =
          channel_->ReadAsync(ino->fh(), offset + i * rsize_, dest,
                              [this, ino, token, st, i, asked = dest.size()](Result<READ3res> r) {
                                Chunk c;
                                c.error = EndReadCall(ino, token, r);
                                c.jukebox = r && r->status == NFS3ERR_JUKEBOX;
                                if (c.jukebox) c.error = 0;
                                if (!c.error && !c.jukebox) {
                                  c.bytes = r->resok.data.bytes.size();
                                  c.eof = r->resok.eof;
                                  channel_->AddReadBytes(c.bytes);
                                }
                                std::lock_guard guard(st->mu);
                                if (c.error || c.jukebox || c.eof || c.bytes < asked)
                                  st->stop = true;
                                st->chunks[i] = c;
                                --st->in_flight;
                                st->cv.notify_all();
                              });
      lock.lock();
    }
    if (st->in_flight == 0) break;  // and nothing more to send: can_send() is false
    if (!WaitUnlessInterrupted(lock, st->cv, [&] { return st->in_flight == 0 || can_send(); })) {
      // Whoever asked is gone, and `out` goes with them: no READ may land in it
      // after we return.
      lock.unlock();
      for (size_t i = 0; i < next; ++i) Channel::Cancel(sent[i], EINTR);
      lock.lock();
      st->cv.wait(lock, [&] { return st->in_flight == 0; });
      return Fail(EINTR);
    }
  }
  // The front of `out` that is exactly what one READ at a time would have read.
  size_t done = 0;
  *at_end = false;
  for (size_t i = 0; i < next; ++i) {
    const Chunk& c = st->chunks[i];
    if (c.jukebox) break;  // read again one at a time, which waits it out
    if (c.error) return Fail(c.error);
    done += c.bytes;
    if (c.eof || c.bytes == 0) {
      *at_end = true;
      break;
    }
    if (c.bytes < chunk(i).size()) break;  // short: what follows landed out of place
  }
  return done;
}

void ClientCore::MaybeEvict() {
  if (!budget_->over()) return;
  std::vector<InodePtr> all;
  {
    std::lock_guard lock(inodes_mu_);
    all.reserve(inodes_.size());
    for (auto& [k, ino] : inodes_) all.push_back(ino);
  }
  size_t excess = static_cast<size_t>(budget_->used()) - budget_->limit() + budget_->limit() / 16;
  for (auto& ino : all) {
    if (excess == 0 || !budget_->over()) break;
    size_t freed = ino->pages.Evict(excess);
    excess -= std::min(excess, freed);
  }
}

}  // namespace nfsx::client
