#include "tools/libnfs-load/job.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <nfsc/libnfs.h>

#include <cerrno>
#include <cstring>

#include "tools/libnfs-load/block.h"
#include "tools/libnfs-load/verify.h"

namespace nfsx::load {

using Clock = std::chrono::steady_clock;

struct Job::Slot {
  Job* job = nullptr;
  std::unique_ptr<std::byte[]> buf;
  bool is_write = false;
  bool full = false;  // read: compare the payload too
  uint64_t block = 0;
  uint64_t content = 0;    // write: the generation sent; read: what the block should hold
  uint64_t known_end = 0;  // read: file size known when sent
  Clock::time_point start;
};

void Run::ReportMismatch(int job, const std::string& file, uint64_t offset,
                         const std::string& what) {
  std::lock_guard lock(mu_);
  if (printed_ < options_.max_reports) {
    fmt::print(stderr, "MISMATCH job {} {} offset {}: {}\n", job, file, offset, what);
  } else if (printed_ == options_.max_reports) {
    fmt::print(stderr, "MISMATCH ... further mismatches are counted, not printed\n");
  }
  ++printed_;
}

void Run::ReportError(int job, const std::string& what) {
  std::lock_guard lock(mu_);
  fmt::print(stderr, "ERROR job {}: {}\n", job, what);
}

Job::Job(int index, Run* run)
    : index_(index),
      run_(run),
      opts_(run->options()),
      rng_(opts_.seed * 0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(index)) {
  for (int i = 0; i < opts_.depth; ++i) {
    auto s = std::make_unique<Slot>();
    s->job = this;
    s->buf = std::make_unique<std::byte[]>(opts_.block_size);
    free_.push_back(s.get());
    slots_.push_back(std::move(s));
  }
}

Job::~Job() {
  // Destroying the context cancels what is still queued and calls those callbacks, which
  // touch the slots: keep them alive until it is gone, and let them know not to count.
  dead_ = true;
  session_.reset();
}

bool Job::Close(std::string* error) {
  if (!nfs_ || dead_) return true;
  bool ok = true;
  // A file with unstable writes gets a COMMIT from nfs_close.
  if (fh_ && nfs_close(nfs_, fh_) != 0) {
    *error = fmt::format("close: {}", nfs_get_error(nfs_));
    ok = false;
  }
  fh_ = nullptr;
  session_->Unmount();
  return ok;
}

bool Job::Connect(std::string* error) {
  session_ = Session::Connect(opts_.url, opts_.timeout_ms, error);
  if (!session_) return false;
  nfs_ = session_->nfs();
  return true;
}

bool Job::Prepare(const std::string& name, bool create, bool writes, FileInfo* info,
                  std::string* error) {
  std::string path = "/" + name;
  nfs_stat_64 st{};
  int rc = nfs_stat64(nfs_, path.c_str(), &st);
  if (rc == 0 && !create) {
    info->existed = true;
    info->size = st.nfs_size;
    return true;
  }
  if (rc != 0 && rc != -ENOENT) {
    *error = fmt::format("stat {}: {}", name, nfs_get_error(nfs_));
    return false;
  }
  if (rc == -ENOENT && !create && !writes) {
    *error = fmt::format("{} does not exist (write it first, or pass --create)", name);
    return false;
  }
  nfsfh* fh = nullptr;
  rc = nfs_open2(nfs_, path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644, &fh);
  if (rc != 0) {
    *error = fmt::format("create {}: {}", name, nfs_get_error(nfs_));
    return false;
  }
  nfs_close(nfs_, fh);
  info->existed = false;
  info->size = 0;
  return true;
}

bool Job::Open(FileTrack* track, bool writable, std::string* error) {
  track_ = track;
  std::string path = "/" + track->name();
  if (nfs_open(nfs_, path.c_str(), writable ? O_RDWR : O_RDONLY, &fh_) != 0) {
    *error = fmt::format("open {}: {}", track->name(), nfs_get_error(nfs_));
    fh_ = nullptr;
    return false;
  }
  return true;
}

void Job::Fail(const std::string& what) {
  if (result_.errors++ == 0) run_->ReportError(index_, what);
  run_->Stop();
}

bool Job::PickBlock(Mode mode, uint64_t* block, uint64_t* content) {
  uint64_t n = track_->blocks();
  if (IsRandom(mode)) {
    // In a shared file another job may hold the block; try a few others before waiting.
    for (int attempt = 0; attempt < 16; ++attempt) {
      uint64_t b = std::uniform_int_distribution<uint64_t>(0, n - 1)(rng_);
      if (track_->TryClaim(b, content)) {
        *block = b;
        return true;
      }
    }
    return false;
  }
  // Sequential: with --shared, job j takes blocks j, j+jobs, ... so that together the jobs
  // make one pass over the file.
  uint64_t stride = opts_.shared ? static_cast<uint64_t>(opts_.jobs) : 1;
  uint64_t first = opts_.shared ? static_cast<uint64_t>(index_) : 0;
  uint64_t b = first + cursor_ * stride;
  if (!track_->TryClaim(b, content)) return false;
  *block = b;
  ++cursor_;
  return true;
}

Job::Issue Job::IssueOne(Mode mode) {
  uint64_t n = track_->blocks();
  if (IsRandom(mode)) {
    if (Clock::now() >= deadline_) return Issue::kDone;
    if (opts_.max_ops && issued_ >= opts_.max_ops) return Issue::kDone;
  } else {
    uint64_t stride = opts_.shared ? static_cast<uint64_t>(opts_.jobs) : 1;
    uint64_t first = opts_.shared ? static_cast<uint64_t>(index_) : 0;
    if (first + cursor_ * stride >= n) return Issue::kDone;
  }
  uint64_t block = 0, content = 0;
  if (!PickBlock(mode, &block, &content)) return Issue::kBusy;

  bool write = mode == Mode::kWrite || mode == Mode::kRandWrite;
  if (mode == Mode::kRandRw) {
    write = std::uniform_real_distribution<double>(0.0, 1.0)(rng_) >= opts_.read_fraction;
  }
  Slot* slot = free_.back();
  free_.pop_back();
  slot->is_write = write;
  slot->full = mode == Mode::kVerify;
  slot->block = block;
  slot->content = content;
  bool sent = write ? SendWrite(slot) : SendRead(slot, slot->full);
  if (!sent) {
    track_->Release(block, content);
    free_.push_back(slot);
    return Issue::kDone;
  }
  ++in_flight_;
  ++issued_;
  return Issue::kSent;
}

bool Job::SendWrite(Slot* slot) {
  uint64_t offset = slot->block * opts_.block_size;
  slot->content = track_->NextGeneration();
  FillBlock({slot->buf.get(), opts_.block_size}, track_->file_id(), offset, slot->content,
            static_cast<uint32_t>(index_));
  slot->start = Clock::now();
  if (nfs_pwrite_async(nfs_, fh_, offset, opts_.block_size, slot->buf.get(), &Job::OnReply, slot) !=
      0) {
    // Nothing was sent; IssueOne puts the block's old content back.
    Fail(fmt::format("cannot send WRITE at {}: {}", offset, nfs_get_error(nfs_)));
    return false;
  }
  return true;
}

bool Job::SendRead(Slot* slot, bool full) {
  uint64_t offset = slot->block * opts_.block_size;
  slot->full = full;
  slot->known_end = track_->known_end();
  slot->start = Clock::now();
  if (nfs_pread_async(nfs_, fh_, offset, opts_.block_size, &Job::OnReply, slot) != 0) {
    Fail(fmt::format("cannot send READ at {}: {}", offset, nfs_get_error(nfs_)));
    return false;
  }
  return true;
}

void Job::OnReply(int status, nfs_context* /*nfs*/, void* data, void* private_data) {
  auto* slot = static_cast<Slot*>(private_data);
  slot->job->Finish(slot, status, data);
}

void Job::Finish(Slot* slot, int status, const void* data) {
  if (dead_) return;
  uint64_t latency = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - slot->start).count());
  uint64_t offset = slot->block * opts_.block_size;
  --in_flight_;
  free_.push_back(slot);
  const char* op = slot->is_write ? "WRITE" : "READ";
  if (status < 0) {
    // libnfs passes the error text as data; a WRITE may or may not have landed.
    const char* text = data ? static_cast<const char*>(data) : nfs_get_error(nfs_);
    track_->Release(slot->block, slot->is_write ? FileTrack::kUnknown : slot->content);
    Fail(fmt::format("{} {} at offset {} failed: {} ({})", op, track_->name(), offset, text,
                     std::strerror(-status)));
    return;
  }
  if (slot->is_write) {
    if (static_cast<uint64_t>(status) != opts_.block_size) {
      track_->Release(slot->block, FileTrack::kUnknown);
      Fail(fmt::format("WRITE {} at offset {}: {} of {} bytes written", track_->name(), offset,
                       status, opts_.block_size));
      return;
    }
    track_->NoteWriteEnd(offset + opts_.block_size);
    track_->Release(slot->block, slot->content);
    result_.write.ops++;
    result_.write.bytes += opts_.block_size;
    result_.write.latency_ns.Record(latency);
    return;
  }
  ReadExpectation want{track_->file_id(), offset,          opts_.block_size,
                       slot->content,     slot->known_end, slot->full};
  std::string problem =
      JudgeRead({static_cast<const std::byte*>(data), static_cast<size_t>(status)}, want);
  track_->Release(slot->block, slot->content);
  result_.read.ops++;
  result_.read.bytes += static_cast<uint64_t>(status);
  result_.read.latency_ns.Record(latency);
  if (!problem.empty()) {
    ++result_.mismatches;
    run_->ReportMismatch(index_, track_->name(), offset, problem);
  }
}

bool Job::PollOnce(int timeout_ms) {
  std::string error;
  if (!session_->PollOnce(timeout_ms, &error)) {
    Fail(error);
    dead_ = true;
    return false;
  }
  return true;
}

void Job::OnFsync(int status, nfs_context* /*nfs*/, void* /*data*/, void* private_data) {
  auto* job = static_cast<Job*>(private_data);
  job->fsync_done_ = true;
  job->fsync_status_ = status;
}

bool Job::Fsync() {
  fsync_done_ = false;
  auto start = Clock::now();
  if (nfs_fsync_async(nfs_, fh_, &Job::OnFsync, this) != 0) {
    Fail(fmt::format("cannot send COMMIT: {}", nfs_get_error(nfs_)));
    return false;
  }
  while (!fsync_done_) {
    if (!PollOnce(100)) return false;
  }
  if (fsync_status_ < 0) {
    Fail(fmt::format("COMMIT {} failed: {}", track_->name(), nfs_get_error(nfs_)));
    return false;
  }
  result_.fsync_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count();
  return true;
}

PhaseResult Job::RunPhase(Mode mode, int phase_index) {
  result_ = PhaseResult{};
  result_.mode = mode;
  cursor_ = 0;
  issued_ = 0;
  rng_.seed(opts_.seed * 0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(index_) * 7919 +
            static_cast<uint64_t>(phase_index));
  auto start = Clock::now();
  deadline_ = start + std::chrono::duration_cast<Clock::duration>(
                          std::chrono::duration<double>(opts_.seconds));
  bool exhausted = dead_;
  while (!dead_) {
    Issue last = Issue::kSent;
    while (!exhausted && !run_->stopping() && !free_.empty()) {
      last = IssueOne(mode);
      if (last == Issue::kDone) exhausted = true;
      if (last != Issue::kSent) break;
    }
    if ((exhausted || run_->stopping()) && in_flight_ == 0) break;
    // Nothing in flight and every candidate block held by another job: wait for them.
    int timeout = in_flight_ == 0 && last == Issue::kBusy ? 1 : 100;
    if (!PollOnce(timeout)) break;
  }
  if (opts_.fsync && Writes(mode) && !dead_ && result_.errors == 0 && !run_->stopping()) {
    Fsync();
  }
  result_.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return result_;
}

std::string Job::CheckSize() {
  nfs_stat_64 st{};
  if (nfs_fstat64(nfs_, fh_, &st) != 0) {
    Fail(fmt::format("fstat {}: {}", track_->name(), nfs_get_error(nfs_)));
    return {};
  }
  uint64_t end = track_->known_end();
  if (track_->FullyKnown()) {
    if (st.nfs_size != end) {
      return fmt::format("size is {} bytes, but the writes end at {}", st.nfs_size, end);
    }
  } else if (st.nfs_size < end) {
    return fmt::format("size is {} bytes, but at least {} were there", st.nfs_size, end);
  }
  return {};
}

}  // namespace nfsx::load
