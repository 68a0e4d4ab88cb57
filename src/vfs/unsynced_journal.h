// UnsyncedWriteJournal: makes a killed server lose what a crashed machine would lose.
//
// A server killed with SIGKILL loses nothing it wrote: the kernel's page cache keeps
// every pwrite, synced or not. So a crash test that kills the server cannot tell a
// client that resends its unstable writes after the verifier changed from one that
// does not. This journal closes that gap for tests: every write is recorded (file
// handle, range, a sequence number) before it reaches the file, every successful sync
// records that the file's earlier writes are durable, and on the next start Replay()
// overwrites each range that was never synced with a marker pattern, as a power cut
// would have left it: data the server acknowledged UNSTABLE and never committed is
// gone, and only a client that resends it gets it back. Data written stably, or
// committed, is untouched.
//
// A failed sync loses what it covered, as a write-back error does on Linux (the pages
// are marked clean, the disk keeps the old bytes, and fsync(2) tells the error once):
// those ranges stay lost through later successful syncs, until a newer write of the
// same bytes is synced.
//
// Only for tests (`nfsx serve --test-lose-unsynced-writes`): it costs a write(2) per
// WRITE. Namespace changes are not simulated (the directory fsyncs are not journaled).
// The file is rewritten compactly from memory when it grows past a bound, so its size
// stays proportional to the ranges not yet synced.
//
// Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "base/result.h"

namespace nfsx::vfs {

class Filesystem;

class UnsyncedWriteJournal {
 public:
  // The byte unsynced ranges are overwritten with at Replay(): a reader that sees it
  // got data that no acknowledged-durable write put there.
  static constexpr std::byte kLostByte{0xDB};

  struct Replayed {
    uint64_t ranges = 0;  // ranges overwritten
    uint64_t bytes = 0;
    uint64_t stale = 0;  // ranges of files that no longer exist
  };

  // Opens (creating) the journal at `path`. Call Replay() before the first write.
  static Result<std::unique_ptr<UnsyncedWriteJournal>> Open(const std::string& path);
  ~UnsyncedWriteJournal();
  UnsyncedWriteJournal(const UnsyncedWriteJournal&) = delete;
  UnsyncedWriteJournal& operator=(const UnsyncedWriteJournal&) = delete;

  // Overwrites, through `fs`, every range the journal holds as written and not synced
  // (the previous run's), then empties the journal.
  Result<Replayed> Replay(Filesystem& fs);

  // Before writing [offset, offset + length) of the file with backend handle `handle`.
  // Returns the write's sequence number.
  uint64_t Wrote(std::span<const std::byte> handle, uint64_t offset, uint64_t length);
  // The sequence number the next write will get: a sync that starts now covers the
  // writes numbered below it.
  uint64_t Next() const;
  // After a successful sync of the file begun when Next() was `before`: its writes
  // numbered below that are durable.
  void Synced(std::span<const std::byte> handle, uint64_t before);
  // After a failed sync of the file begun when Next() was `before`: its unsynced writes
  // numbered below that are lost, whatever later syncs do, until written again.
  void WriteBackFailed(std::span<const std::byte> handle, uint64_t before);
  // After the file was cut to `size`: what its ranges held past it is gone (a file
  // grown again has a hole there, or newer writes).
  void Truncated(std::span<const std::byte> handle, uint64_t size);

  // Ranges recorded and not yet synced (for tests).
  size_t unsynced_ranges() const;

 private:
  struct Range {
    uint64_t seq;
    uint64_t offset;
    uint64_t length;
    bool lost = false;  // by a failed sync: later syncs do not make it durable
  };
  using Unsynced = std::map<std::string, std::vector<Range>>;  // by handle bytes
  // What a record of `kind` with `value` does to a file's ranges: 'S' a successful sync
  // begun before write `value`, 'F' a failed one, 'T' a cut to size `value`. The live
  // state and Parse share it, so a replay sees what the run saw.
  static void Apply(char kind, std::vector<Range>& ranges, uint64_t value);
  static void ApplySynced(std::vector<Range>& ranges, uint64_t before);
  static void ApplyFailed(std::vector<Range>& ranges, uint64_t before);
  static void ApplyTruncated(std::vector<Range>& ranges, uint64_t size);
  // Applies a record of `kind` to the file's ranges and appends it to the journal.
  void Record(std::span<const std::byte> handle, char kind, uint64_t value);

  UnsyncedWriteJournal(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  static Unsynced Parse(std::string_view text);
  // REQUIRES: mu_. Appends one record; rewrites the file when it has grown too large.
  void AppendLocked(const std::string& record);
  void CompactLocked();

  const std::string path_;
  mutable std::mutex mu_;
  int fd_;                   // GUARDED_BY(mu_)
  uint64_t next_seq_ = 1;    // GUARDED_BY(mu_)
  uint64_t file_bytes_ = 0;  // GUARDED_BY(mu_)
  Unsynced unsynced_;        // GUARDED_BY(mu_)
};

}  // namespace nfsx::vfs
