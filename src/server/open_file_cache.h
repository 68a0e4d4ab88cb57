// OpenFileCache: READ, WRITE and COMMIT reuse an open descriptor per file and
// access mode instead of opening and closing the file on every call (the
// 004_*.txt seed measures what that costs knfsd).
//
// Bounded by a count of open descriptors and an idle timeout. A writable
// descriptor is synced before it is closed, and any error from that sync or
// from close() rotates the file's write verifier, so clients resend data that
// may have been lost. Descriptors are reference-counted: one being used by a
// READ while it is evicted is closed when that READ finishes.
//
// Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <vector>

#include "base/result.h"
#include "server/file_state.h"
#include "server/write_verifier.h"

namespace nfsx::server {

struct OpenFileCacheOptions {
  size_t max_open = 1024;
  std::chrono::seconds idle_timeout{30};
};

class OpenFileCache {
 public:
  OpenFileCache(WriteVerifiers* verifiers, OpenFileCacheOptions options);
  ~OpenFileCache();

  // A descriptor for `state`, writable if asked (a writable one also serves reads).
  Result<std::shared_ptr<vfs::OpenFile>> Get(const FileStatePtr& state, bool writable);

  // Closes this file's descriptors (after it was removed, so its space is freed).
  void Release(FileState& state);
  // Closes descriptors idle past the timeout, and the least recently used beyond
  // the count limit. Call periodically.
  void Sweep();
  // Closes everything (shutdown): writable descriptors are synced first.
  void CloseAll();

  size_t open_count() const { return open_.load(); }
  uint64_t opens() const { return opens_total_.load(); }

 private:
  std::shared_ptr<vfs::OpenFile> Wrap(std::unique_ptr<vfs::OpenFile> file, const FileState& state);
  void List(const FileStatePtr& state);

  WriteVerifiers* verifiers_;
  OpenFileCacheOptions options_;
  std::atomic<size_t> open_{0};
  std::atomic<uint64_t> opens_total_{0};
  std::mutex mu_;
  std::vector<std::weak_ptr<FileState>> listed_;  // GUARDED_BY(mu_)
};

}  // namespace nfsx::server
