// One job of nfsx-libnfs-load: a libnfs context (one TCP connection), one file handle, and
// up to --depth requests in flight on it, driven by its own poll() loop.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "tools/libnfs-load/histogram.h"
#include "tools/libnfs-load/options.h"
#include "tools/libnfs-load/session.h"
#include "tools/libnfs-load/track.h"

struct nfs_context;
struct nfsfh;

namespace nfsx::load {

struct OpStats {
  uint64_t ops = 0;
  uint64_t bytes = 0;
  Histogram latency_ns;

  void Merge(const OpStats& o) {
    ops += o.ops;
    bytes += o.bytes;
    latency_ns.Merge(o.latency_ns);
  }
};

struct PhaseResult {
  Mode mode = Mode::kWrite;
  OpStats read;
  OpStats write;
  uint64_t mismatches = 0;
  uint64_t errors = 0;
  double seconds = 0;     // first request sent to last reply in, COMMIT included
  int64_t fsync_ns = -1;  // COMMIT at the end of the phase; -1 if none was sent
};

// What all jobs of a run share. Thread safe.
class Run {
 public:
  explicit Run(const Options& options) : options_(options) {}

  const Options& options() const { return options_; }

  // Any job's I/O error ends the run: the others stop sending and drain.
  bool stopping() const { return stop_.load(std::memory_order_relaxed); }
  void Stop() { stop_.store(true, std::memory_order_relaxed); }

  // Prints the first --max-reports mismatches (the count is kept by the caller).
  void ReportMismatch(int job, const std::string& file, uint64_t offset, const std::string& what);
  void ReportError(int job, const std::string& what);

 private:
  const Options& options_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  int printed_ = 0;  // GUARDED_BY(mu_)
};

struct FileInfo {
  bool existed = false;  // false: created (or truncated) empty by Prepare
  uint64_t size = 0;
};

class Job {
 public:
  Job(int index, Run* run);
  ~Job();
  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;

  int index() const { return index_; }

  // Creates the context, applies the URL's options and mounts its path. Call Connect, Prepare
  // and Open from one thread at a time: libnfs 4.0 keeps the reserved source port cursor and
  // the xid salt in unlocked globals.
  bool Connect(std::string* error);
  // Makes `name` ready in the mounted directory: truncates or creates it with `create`,
  // creates it when missing and `writes`; fails when it is missing and only to be read.
  bool Prepare(const std::string& name, bool create, bool writes, FileInfo* info,
               std::string* error);
  // Opens the file `track` describes, read-write if `writable`.
  bool Open(FileTrack* track, bool writable, std::string* error);

  // Runs one phase in the calling thread, until the pass is done or time is up (or the run
  // stops), then drains and, for writes with --fsync, sends a COMMIT.
  PhaseResult RunPhase(Mode mode, int phase_index);

  // verify mode: the file's size as the server reports it, against what was written.
  // Returns an empty string when it matches.
  std::string CheckSize();

  // Closes the file (libnfs COMMITs it if it has unstable writes) and unmounts.
  bool Close(std::string* error);

 private:
  struct Slot;
  enum class Issue { kSent, kBusy, kDone };

  Issue IssueOne(Mode mode);
  bool PickBlock(Mode mode, uint64_t* block, uint64_t* content);
  bool SendWrite(Slot* slot);
  bool SendRead(Slot* slot, bool full);
  void Finish(Slot* slot, int status, const void* data);
  void Fail(const std::string& what);
  bool PollOnce(int timeout_ms);
  bool Fsync();

  static void OnReply(int status, nfs_context* nfs, void* data, void* private_data);
  static void OnFsync(int status, nfs_context* nfs, void* data, void* private_data);

  const int index_;
  Run* const run_;
  const Options& opts_;
  std::unique_ptr<Session> session_;
  nfs_context* nfs_ = nullptr;  // session_->nfs(), for brevity
  nfsfh* fh_ = nullptr;
  FileTrack* track_ = nullptr;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::vector<Slot*> free_;
  std::mt19937_64 rng_;

  // Phase state.
  PhaseResult result_;
  uint64_t cursor_ = 0;  // sequential: next index within this job's share of blocks
  uint64_t issued_ = 0;
  int in_flight_ = 0;
  bool dead_ = false;  // the context failed; no reply will come any more
  bool fsync_done_ = false;
  int fsync_status_ = 0;
  std::chrono::steady_clock::time_point deadline_;
};

}  // namespace nfsx::load
