// NodeTable: the inodes the kernel knows, by FUSE node id, with their lookup
// counts (FUSE's reference counts: every entry reply adds one, FORGET removes).
//
// Node ids are the server's fileids, so `ls -i` shows what the server has and a
// file keeps its number for the life of the mount. Every name of a file maps
// to the one client Inode (the client interns by file handle), hence to one
// node: both names of a hard link show the same st_ino and the same nlink. The
// ids 0 and 1 (FUSE_ROOT_ID), the export root's fileid, and a fileid already
// taken by another handle (an export spanning file systems, or a fileid reused
// while the kernel still holds the old file) get a synthetic id instead.
//
// Thread-safe.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "client/inode.h"
#include "nfsx/result.h"

namespace nfsx::fuse {

struct Node {
  Node(uint64_t id, uint64_t st_ino, uint64_t gen, client::InodePtr i)
      : nodeid(id), ino_number(st_ino), generation(gen), ino(std::move(i)) {}

  const uint64_t nodeid;
  const uint64_t ino_number;  // st_ino: the nodeid, except the root's (its fileid)
  const uint64_t generation;
  const client::InodePtr ino;

  // Open file handles (NodeTable::Opened/Closed); an unlinked file that is still
  // open is kept under a hidden name until the last one closes (as the Linux NFS
  // client does).
  std::atomic<int> opens{0};
  // Bumped each time the client finds someone else changed the file; an open
  // keeps the kernel's page cache only if nothing happened since the last open.
  std::atomic<uint64_t> foreign_changes{0};
  std::atomic<uint64_t> changes_at_open{0};

  // Names (directory, name) the file was hidden under when its last link was
  // removed while open; removed at the last close.
  std::mutex hidden_mu;
  std::vector<std::pair<client::InodePtr, std::string>> hidden;  // GUARDED_BY(hidden_mu)
  std::atomic<bool> unlinked{false};  // stat shows one link fewer, as for a local file
};
using NodePtr = std::shared_ptr<Node>;

class NodeTable {
 public:
  // The name cache's default size (MountOptions::max_names).
  static constexpr size_t kDefaultMaxNames = size_t{1} << 20;

  // `max_names`: past this many names the name cache starts over.
  explicit NodeTable(client::InodePtr root, size_t max_names = kDefaultMaxNames);

  // The node the kernel refers to, or null (the kernel never sends an id it was
  // not given, but a stale one after an error path is answered with ESTALE).
  NodePtr Get(uint64_t nodeid) const;
  // The node for `ino`, its lookup count raised by one: call it right before an
  // entry reply, and Forget(id, 1) if the reply fails.
  NodePtr Ref(const client::InodePtr& ino);
  // The node for `ino` if the kernel knows it (no reference taken).
  NodePtr Find(const client::Inode* ino) const;
  // The st_ino that `ino` has or would get (readdir d_ino without a lookup).
  uint64_t PeekIno(const client::InodePtr& ino) const;
  // Drops `n` lookups; the node goes at zero (the root never does).
  void Forget(uint64_t nodeid, uint64_t n);

  // What the kernel's dentries point at: (dir node, name) -> node id, 0 for a
  // negative entry. Used to find the file an unlink or rename replaces; a stale
  // answer costs a LOOKUP, never a wrong result. It only saves LOOKUPs: past
  // max_names names it starts over rather than grow without bound on a mount
  // that walks millions of files, so a name the kernel still has may be unknown.
  void NoteName(uint64_t parent, const std::string& name, uint64_t child);
  uint64_t FindName(uint64_t parent, const std::string& name) const;
  void DropName(uint64_t parent, const std::string& name);
  // Names cached under `parent` (to invalidate the kernel's dentries when someone
  // else changed the directory).
  std::vector<std::string> NamesUnder(uint64_t parent) const;

  // ---- open files, and removals racing them ----
  //
  // An unlink or a rename over a name looks at whether the file it would delete is
  // open (then it hides the file instead), and only then asks the server. An open of
  // that file that the kernel sends meanwhile must not be answered as if the file
  // stayed (the kernel does not serialize the two). So:
  //  - a removal holds a ticket (BeginRemoval) from before it reads any open count
  //    until the server has answered it (EndRemoval);
  //  - an open takes a RemovalWatch as it starts, is counted open (Opened), and then
  //    calls AwaitRemovals: a removal whose ticket came later sees its count and
  //    hides the file; one whose ticket came earlier may have missed it, so the open
  //    waits for it to end and is told to check that its file is still there.
  // The tickets and the counts are sequentially consistent: of a ticket taken and a
  // count raised at about the same time, at least one side sees the other.

  // Counts an open file handle of `node`, and in open_files().
  void Opened(Node& node);
  // Uncounts one; true if it was the node's last.
  bool Closed(Node& node);
  // File handles open through the mount: at 0 no file can need hiding.
  uint64_t open_files() const { return open_files_.load(); }

  uint64_t BeginRemoval();
  void EndRemoval(uint64_t ticket);
  struct RemovalWatch {
    uint64_t ended = 0;
    uint64_t begun = 0;
  };
  RemovalWatch WatchRemovals() const;
  // Waits for the removals that began before this call; true if any of them ran
  // after `since` was taken (the file being opened may be gone). EINTR if the
  // request is interrupted while waiting.
  Result<bool> AwaitRemovals(const RemovalWatch& since);

  // Holds a removal ticket for its lifetime.
  class Removal {
   public:
    explicit Removal(NodeTable& t) : table_(t), ticket_(t.BeginRemoval()) {}
    ~Removal() { table_.EndRemoval(ticket_); }
    Removal(const Removal&) = delete;
    Removal& operator=(const Removal&) = delete;

   private:
    NodeTable& table_;
    const uint64_t ticket_;
  };

  size_t size() const;

 private:
  uint64_t PickId(uint64_t fileid);  // REQUIRES: mu_ held

  mutable std::mutex mu_;
  struct Entry {
    NodePtr node;
    uint64_t nlookup = 0;
  };
  std::unordered_map<uint64_t, Entry> nodes_;                    // GUARDED_BY(mu_)
  std::unordered_map<const client::Inode*, uint64_t> by_inode_;  // GUARDED_BY(mu_)
  // GUARDED_BY(mu_): per directory node, name -> node id.
  std::unordered_map<uint64_t, std::unordered_map<std::string, uint64_t>> names_;
  size_t name_count_ = 0;  // GUARDED_BY(mu_)
  const size_t max_names_;
  uint64_t root_fileid_;
  uint64_t next_synthetic_ = uint64_t{1} << 62;  // GUARDED_BY(mu_)
  uint64_t next_generation_ = 1;                 // GUARDED_BY(mu_)

  std::atomic<uint64_t> open_files_{0};
  std::mutex removal_mu_;
  std::condition_variable removal_cv_;
  std::atomic<uint64_t> removals_begun_{0};  // written under removal_mu_; the last ticket
  std::atomic<uint64_t> removals_ended_{0};  // written under removal_mu_
  std::set<uint64_t> removals_running_;      // GUARDED_BY(removal_mu_): their tickets
};

}  // namespace nfsx::fuse
