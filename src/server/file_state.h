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
#include <optional>
#include <string>
#include <thread>
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
  // through this server. It also tells the time overlay that a change is under
  // way, so that observations racing it are taken again (Core::Attr).
  // Not reentrant: a thread never holds two on one file.
  class Modification {
   public:
    explicit Modification(FileState& file);
    ~Modification();
    Modification(const Modification&) = delete;
    Modification& operator=(const Modification&) = delete;

   private:
    FileState& file_;
    std::lock_guard<std::mutex> lock_;
  };
  // Whether the calling thread holds a Modification of any file.
  static bool ThisThreadModifies();
  // Whether the calling thread holds a Modification of this file.
  bool ModifiedByThisThread() const {
    return modifier_.load(std::memory_order_relaxed) == std::this_thread::get_id();
  }
  // Excludes modifications without counting as one (an observation's last resort).
  std::mutex& op_mutex() { return op_mu_; }

  TimeOverlay& times() { return times_; }

  // Open descriptors, managed by OpenFileCache.
  struct Opens {
    std::mutex mu;
    std::shared_ptr<vfs::OpenFile> read_only;   // GUARDED_BY(mu)
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
  std::atomic<std::thread::id> modifier_{};
  TimeOverlay times_;
  Opens opens_;
};
using FileStatePtr = std::shared_ptr<FileState>;

// Thread-safe, sharded LRU. Entries in use (referenced outside the table) are
// never evicted; the table may then exceed its capacity briefly.
//
// An evicted entry whose time overlay shows times ahead of the filesystem's
// leaves that state behind, and a new entry for the same handle starts from it,
// so that times shown to clients never go backwards. At most max(capacity, 1024)
// such states are kept (beyond that the oldest is forgotten: docs/wcc.md says what a
// client sees then).
class FileTable {
 public:
  explicit FileTable(size_t capacity);

  FileStatePtr Find(std::string_view fh);
  // Inserts `state` unless an entry for the same handle exists; returns the entry.
  FileStatePtr Insert(FileStatePtr state);
  void Erase(std::string_view fh);
  size_t size() const;
  // Overlay states kept for evicted entries, and how many were taken up again.
  size_t carried() const;
  uint64_t restored() const { return restored_.load(std::memory_order_relaxed); }

 private:
  static constexpr size_t kShards = 16;
  static constexpr size_t kMinCarriedPerShard = 64;
  struct Carried {
    std::string key;
    TimeOverlay::State times;
  };
  struct Shard {
    std::mutex mu;
    std::list<FileStatePtr> lru;  // most recent first
    std::unordered_map<std::string_view, std::list<FileStatePtr>::iterator> map;
    std::list<Carried> carried;  // most recent first
    std::unordered_map<std::string_view, std::list<Carried>::iterator> carried_map;
  };
  Shard& ShardFor(std::string_view fh);
  void EvictLocked(Shard& shard);
  void CarryLocked(Shard& shard, const FileState& state, const TimeOverlay::State& times);
  std::optional<TimeOverlay::State> TakeCarriedLocked(Shard& shard, std::string_view key);
  // Adds up count(shard) over the shards, each under its lock.
  template <class Count>
  size_t Sum(Count count) const;

  size_t per_shard_capacity_;
  std::array<Shard, kShards> shards_;
  std::atomic<uint64_t> restored_{0};
};

}  // namespace nfsx::server
