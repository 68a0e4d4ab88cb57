// FileState: what the server keeps about a file that clients are using, and
// FileTable: the bounded map from file handle to FileState.
//
// Resolving a handle that is in the table costs one hash lookup: no MAC check
// (it was checked when the entry was made), no reopen of the file (the
// 004_*.txt seed: re-verifying the handle on every WRITE cost nfsd ~20 µs).
#pragma once

#include <atomic>
#include <chrono>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "proto/nfs3_types.h"
#include "server/time_overlay.h"
#include "vfs/vfs.h"

namespace nfsx::server {

struct ExportRuntime;

class FileState {
 public:
  FileState(ExportRuntime* exp, vfs::NodePtr node, const nfs3::nfs_fh3& fh)
      : exp_(exp), node_(std::move(node)), fh_(fh) {}

  ExportRuntime& exp() const { return *exp_; }
  vfs::Node& node() const { return *node_; }
  const vfs::NodePtr& node_ptr() const { return node_; }
  const nfs3::nfs_fh3& fh() const { return fh_; }
  std::string_view key() const {
    return {reinterpret_cast<const char*>(fh_.data.data()), fh_.size};
  }

  // Held by every operation that modifies the file (or, for a directory, its
  // entries) from before its pre-op attributes to after its post-op attributes,
  // so that each wcc interval is exact with respect to every other operation
  // through this server.
  std::mutex& op_mutex() { return op_mu_; }

  TimeOverlay& times() { return times_; }

  // Open descriptors, managed by OpenFileCache.
  struct Opens {
    std::mutex mu;
    std::shared_ptr<vfs::OpenFile> read_only;  // GUARDED_BY(mu)
    std::shared_ptr<vfs::OpenFile> read_write;  // GUARDED_BY(mu)
    std::atomic<int64_t> last_use_ns{0};
    std::atomic<bool> listed{false};  // in the cache's list
  };
  Opens& opens() { return opens_; }

 private:
  ExportRuntime* exp_;
  vfs::NodePtr node_;
  nfs3::nfs_fh3 fh_;
  std::mutex op_mu_;
  TimeOverlay times_;
  Opens opens_;
};
using FileStatePtr = std::shared_ptr<FileState>;

// Thread-safe, sharded LRU. Entries in use (referenced outside the table) are
// never evicted; the table may then exceed its capacity briefly.
class FileTable {
 public:
  explicit FileTable(size_t capacity);

  FileStatePtr Find(std::string_view fh);
  // Inserts `state` unless an entry for the same handle exists; returns the entry.
  FileStatePtr Insert(FileStatePtr state);
  void Erase(std::string_view fh);
  size_t size() const;

 private:
  static constexpr size_t kShards = 16;
  struct Shard {
    std::mutex mu;
    std::list<FileStatePtr> lru;  // most recent first
    std::unordered_map<std::string_view, std::list<FileStatePtr>::iterator> map;
  };
  Shard& ShardFor(std::string_view fh);
  void EvictLocked(Shard& shard);

  size_t per_shard_capacity_;
  std::array<Shard, kShards> shards_;
};

}  // namespace nfsx::server
