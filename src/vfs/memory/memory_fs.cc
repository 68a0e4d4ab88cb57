#include "vfs/memory/memory_fs.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace nfsx::vfs {
namespace {

// File data lives in blocks of this size, allocated on first write, so sparse files cost only
// what was written and a 1 GiB write touches no more than it has to.
constexpr uint64_t kBlockSize = 64 * 1024;
// Far beyond anything a test writes; keeps offset + length and block arithmetic from
// overflowing.
constexpr uint64_t kMaxFileSize = uint64_t{1} << 62;
constexpr uint64_t kCapacityBytes = uint64_t{1} << 40;  // 1 TiB
constexpr uint64_t kCapacityFiles = uint64_t{1} << 32;
constexpr uint64_t kFsid = 0x6e667378'6d656d31;  // "nfsxmem1"

// Readdir cookies of "." and ".."; real entries are numbered from kFirstEntrySeq on.
constexpr uint64_t kDotCookie = 1;
constexpr uint64_t kDotDotCookie = 2;
constexpr uint64_t kFirstEntrySeq = 3;
// Entries copied per lock acquisition in ReadDir (emit runs without the lock).
constexpr size_t kReadDirBatch = 128;
// A nominal per-entry directory size, so a directory's size moves with its contents.
constexpr uint64_t kDirEntrySize = 32;

constexpr size_t kHandleSize = 16;  // inode number, generation; little-endian

constexpr uint64_t kRootIno = 1;

// Timestamps come from one process-wide clock that never returns the same value twice:
// NFS clients detect changes by comparing mtime/ctime, and two writes within the system
// clock's resolution would otherwise look like one.
Timespec Now() {
  static std::atomic<int64_t> last_ns{0};
  const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  int64_t prev = last_ns.load(std::memory_order_relaxed);
  int64_t next = 0;
  do {
    next = std::max(now, prev + 1);
  } while (!last_ns.compare_exchange_weak(prev, next, std::memory_order_relaxed));
  return Timespec{next / 1'000'000'000, static_cast<uint32_t>(next % 1'000'000'000)};
}

// Storage accounting shared by the filesystem and every inode; inodes can outlive the
// filesystem through open files, so they hold it by shared_ptr.
struct Space {
  std::atomic<uint64_t> used{0};

  bool Reserve(uint64_t bytes) {
    uint64_t cur = used.load(std::memory_order_relaxed);
    do {
      if (bytes > kCapacityBytes - cur) return false;
    } while (!used.compare_exchange_weak(cur, cur + bytes, std::memory_order_relaxed));
    return true;
  }
  void Release(uint64_t bytes) { used.fetch_sub(bytes, std::memory_order_relaxed); }
};

struct Block {
  std::array<std::byte, kBlockSize> bytes{};  // zero-filled: unwritten parts read as zeros
};

struct Inode;

struct Dirent {
  std::string name;
  std::shared_ptr<Inode> inode;
};

// One file of any type. Locking (see MemoryFs::mu_ for the lock order):
//  - `mu` guards the attributes and the data. Reads of data share it, so concurrent
//    readers of one file do not serialise.
//  - `nlink` is written only with both MemoryFs::mu_ (exclusive) and `mu` held, so it may be
//    read under either. nlink == 0 means removed: Node operations then fail with ESTALE.
//  - The directory fields (parent, entries) are guarded by MemoryFs::mu_ alone.
// A struct because MemoryFs manipulates it directly; nothing outside this file sees it.
struct Inode final : Node, std::enable_shared_from_this<Inode> {
  Inode(uint64_t ino_in, uint64_t gen_in, FileType kind_in, std::shared_ptr<Space> space_in)
      : ino(ino_in), gen(gen_in), kind(kind_in), space(std::move(space_in)) {}
  ~Inode() override { space->Release(blocks.size() * kBlockSize); }

  FileType type() const override { return kind; }

  // Callers hold `mu` (shared is enough).
  Attr Snapshot() const {
    Attr a;
    a.type = kind;
    a.mode = mode;
    a.nlink = nlink;
    a.uid = uid;
    a.gid = gid;
    a.size = size;
    a.used = kind == FileType::kRegular ? blocks.size() * kBlockSize
                                        : (kind == FileType::kDirectory ? size : 0);
    a.rdev_major = rdev_major;
    a.rdev_minor = rdev_minor;
    a.fileid = ino;
    a.atime = atime;
    a.mtime = mtime;
    a.ctime = ctime;
    return a;
  }

  // Callers hold `mu` shared.
  size_t ReadData(uint64_t offset, std::span<std::byte> out) const {
    if (offset >= size) return 0;
    const size_t n = static_cast<size_t>(std::min<uint64_t>(out.size(), size - offset));
    size_t done = 0;
    while (done < n) {
      const uint64_t pos = offset + done;
      const uint64_t in_block = pos % kBlockSize;
      const size_t chunk = static_cast<size_t>(std::min<uint64_t>(kBlockSize - in_block, n - done));
      auto it = blocks.find(pos / kBlockSize);
      if (it == blocks.end()) {
        std::memset(out.data() + done, 0, chunk);
      } else {
        std::memcpy(out.data() + done, it->second->bytes.data() + in_block, chunk);
      }
      done += chunk;
    }
    return n;
  }

  // Callers hold `mu` exclusively. Either writes everything or nothing.
  Result<size_t> WriteData(uint64_t offset, std::span<const std::byte> data) {
    if (offset > kMaxFileSize || data.size() > kMaxFileSize - offset) return Fail(EFBIG);
    if (data.empty()) return 0;
    const uint64_t first = offset / kBlockSize;
    const uint64_t last = (offset + data.size() - 1) / kBlockSize;
    uint64_t missing = 0;
    for (uint64_t b = first; b <= last; ++b) missing += blocks.contains(b) ? 0 : 1;
    if (!space->Reserve(missing * kBlockSize)) return Fail(ENOSPC);
    size_t done = 0;
    while (done < data.size()) {
      const uint64_t pos = offset + done;
      const uint64_t in_block = pos % kBlockSize;
      const size_t chunk =
          static_cast<size_t>(std::min<uint64_t>(kBlockSize - in_block, data.size() - done));
      std::unique_ptr<Block>& block = blocks[pos / kBlockSize];
      if (block == nullptr) block = std::make_unique<Block>();
      std::memcpy(block->bytes.data() + in_block, data.data() + done, chunk);
      done += chunk;
    }
    size = std::max<uint64_t>(size, offset + data.size());
    mtime = ctime = Now();
    return data.size();
  }

  // Callers hold `mu` exclusively. Keeps the invariant that bytes past `size` in the last
  // block are zero, so extending the file again reads zeros there.
  void Truncate(uint64_t new_size) {
    if (new_size < size) {
      const uint64_t keep = (new_size + kBlockSize - 1) / kBlockSize;
      auto it = blocks.lower_bound(keep);
      const uint64_t freed = static_cast<uint64_t>(std::distance(it, blocks.end()));
      blocks.erase(it, blocks.end());
      space->Release(freed * kBlockSize);
      if (new_size % kBlockSize != 0) {
        auto tail = blocks.find(new_size / kBlockSize);
        if (tail != blocks.end()) {
          const uint64_t from = new_size % kBlockSize;
          std::memset(tail->second->bytes.data() + from, 0, kBlockSize - from);
        }
      }
    }
    size = new_size;
  }

  const uint64_t ino;
  const uint64_t gen;
  const FileType kind;
  const std::shared_ptr<Space> space;

  mutable std::shared_mutex mu;
  uint32_t mode = 0;
  uint32_t uid = 0;
  uint32_t gid = 0;
  uint32_t nlink = 0;
  uint32_t rdev_major = 0;
  uint32_t rdev_minor = 0;
  uint64_t size = 0;
  Timespec atime, mtime, ctime;
  std::map<uint64_t, std::unique_ptr<Block>> blocks;  // block index -> data
  std::string target;  // symlinks; set before the inode is published, then immutable

  // Directories only; guarded by MemoryFs::mu_.
  std::weak_ptr<Inode> parent;  // weak: the parent owns us through `entries`
  // Entries by insertion number, which is also the readdir cookie: a cookie then names a
  // position that survives insertions and removals of other entries.
  std::map<uint64_t, Dirent> entries;
  std::map<std::string, uint64_t, std::less<>> by_name;  // name -> key in `entries`
  uint64_t next_seq = kFirstEntrySeq;
};

Inode& AsInode(Node& node) { return static_cast<Inode&>(node); }
const Inode& AsInode(const Node& node) { return static_cast<const Inode&>(node); }

class MemoryOpenFile final : public OpenFile {
 public:
  MemoryOpenFile(std::shared_ptr<Inode> inode, bool writable)
      : inode_(std::move(inode)), writable_(writable) {}

  Result<size_t> Read(uint64_t offset, std::span<std::byte> out) override {
    if (closed_.load(std::memory_order_relaxed)) return Fail(EBADF);
    std::shared_lock lock(inode_->mu);
    return inode_->ReadData(offset, out);
  }

  Result<size_t> Write(uint64_t offset, std::span<const std::byte> data) override {
    if (closed_.load(std::memory_order_relaxed) || !writable_) return Fail(EBADF);
    std::unique_lock lock(inode_->mu);
    return inode_->WriteData(offset, data);
  }

  Result<void> Sync(bool) override {
    if (closed_.load(std::memory_order_relaxed)) return Fail(EBADF);
    return {};
  }

  // Works after the file was removed, like fstat(2) on an open descriptor (nlink is then 0).
  Result<Attr> GetAttr() override {
    if (closed_.load(std::memory_order_relaxed)) return Fail(EBADF);
    std::shared_lock lock(inode_->mu);
    return inode_->Snapshot();
  }

  Result<void> Close() override {
    if (closed_.exchange(true)) return Fail(EBADF);
    return {};
  }

  bool writable() const override { return writable_; }

 private:
  const std::shared_ptr<Inode> inode_;
  const bool writable_;
  std::atomic<bool> closed_{false};
};

class MemoryFs final : public Filesystem {
 public:
  MemoryFs() : space_(std::make_shared<Space>()) {
    root_ = std::make_shared<Inode>(kRootIno, next_gen_++, FileType::kDirectory, space_);
    root_->mode = 0755;
    root_->nlink = 2;
    root_->size = 2 * kDirEntrySize;
    root_->atime = root_->mtime = root_->ctime = Now();
    root_->parent = root_;
    inodes_.emplace(kRootIno, root_);
  }

  ~MemoryFs() override {
    // Directories own their children and children point back weakly, so dropping the table
    // and the root frees the tree. Clearing entries first keeps the recursion shallow.
    std::unique_lock lock(mu_);
    for (auto& [ino, inode] : inodes_) inode->entries.clear();
  }

  NodePtr Root() override { return root_; }
  uint64_t fsid() const override { return kFsid; }
  bool persistent() const override { return false; }

  size_t EncodeHandle(const Node& node, std::span<std::byte, kMaxBackendHandle> out) override {
    static_assert(kHandleSize <= kMaxBackendHandle);
    const Inode& inode = AsInode(node);
    PutLe64(inode.ino, out.subspan(0, 8));
    PutLe64(inode.gen, out.subspan(8, 8));
    return kHandleSize;
  }

  Result<NodePtr> DecodeHandle(std::span<const std::byte> handle) override {
    if (handle.size() != kHandleSize) return Fail(EBADF);
    const uint64_t ino = GetLe64(handle.subspan(0, 8));
    const uint64_t gen = GetLe64(handle.subspan(8, 8));
    // Neither is ever 0 in a handle we made.
    if (ino == 0 || gen == 0) return Fail(EBADF);
    std::shared_lock lock(mu_);
    auto it = inodes_.find(ino);
    // A different generation is a later file that reused the inode number.
    if (it == inodes_.end() || it->second->gen != gen) return Fail(ESTALE);
    return it->second;
  }

  Result<Attr> GetAttr(Node& node) override {
    Inode& inode = AsInode(node);
    std::shared_lock lock(inode.mu);
    if (inode.nlink == 0) return Fail(ESTALE);
    return inode.Snapshot();
  }

  Result<void> SetAttr(Node& node, const vfs::SetAttr& attr) override {
    Inode& inode = AsInode(node);
    std::unique_lock lock(inode.mu);
    if (inode.nlink == 0) return Fail(ESTALE);
    if (attr.size) {
      if (inode.kind == FileType::kDirectory) return Fail(EISDIR);
      if (inode.kind != FileType::kRegular) return Fail(EINVAL);
      if (*attr.size > kMaxFileSize) return Fail(EFBIG);
    }
    const Timespec now = Now();
    bool changed = false;
    if (attr.mode) {
      inode.mode = *attr.mode & 07777;
      changed = true;
    }
    if (attr.uid) {
      inode.uid = *attr.uid;
      changed = true;
    }
    if (attr.gid) {
      inode.gid = *attr.gid;
      changed = true;
    }
    if (attr.size) {
      // Like truncate(2) on Linux: mtime changes even when the size does not.
      inode.Truncate(*attr.size);
      inode.mtime = now;
      changed = true;
    }
    if (attr.atime_how != vfs::SetAttr::Time::kKeep) {
      inode.atime = attr.atime_how == vfs::SetAttr::Time::kGiven ? attr.atime : now;
      changed = true;
    }
    if (attr.mtime_how != vfs::SetAttr::Time::kKeep) {
      inode.mtime = attr.mtime_how == vfs::SetAttr::Time::kGiven ? attr.mtime : now;
      changed = true;
    }
    if (changed) inode.ctime = now;
    return {};
  }

  Result<NodePtr> Lookup(Node& dir_node, std::string_view name) override {
    std::shared_lock lock(mu_);
    auto dir = LiveDir(dir_node);
    if (!dir) return std::unexpected(dir.error());
    std::shared_ptr<Inode> child = Child(**dir, name);
    if (child == nullptr) return Fail(ENOENT);
    return child;
  }

  Result<NodePtr> Parent(Node& dir_node) override {
    std::shared_lock lock(mu_);
    auto dir = LiveDir(dir_node);
    if (!dir) return std::unexpected(dir.error());
    std::shared_ptr<Inode> parent = (*dir)->parent.lock();
    if (parent == nullptr) return Fail(ESTALE);
    return parent;
  }

  Result<std::string> ReadLink(Node& node) override {
    Inode& inode = AsInode(node);
    if (inode.kind != FileType::kSymlink) return Fail(EINVAL);
    std::shared_lock lock(inode.mu);
    if (inode.nlink == 0) return Fail(ESTALE);
    return inode.target;
  }

  Result<std::unique_ptr<OpenFile>> Open(Node& node, bool writable) override {
    Inode& inode = AsInode(node);
    if (inode.kind == FileType::kDirectory) return Fail(EISDIR);
    if (inode.kind != FileType::kRegular) return Fail(EINVAL);
    std::shared_lock lock(inode.mu);
    if (inode.nlink == 0) return Fail(ESTALE);
    return std::make_unique<MemoryOpenFile>(inode.shared_from_this(), writable);
  }

  Result<NodePtr> Create(Node& dir_node, std::string_view name, uint32_t mode, Owner owner,
                         bool exclusive) override {
    std::unique_lock lock(mu_);
    auto dir = LiveDir(dir_node);
    if (!dir) return std::unexpected(dir.error());
    if (std::shared_ptr<Inode> existing = Child(**dir, name)) {
      if (exclusive) return Fail(EEXIST);
      if (existing->kind == FileType::kDirectory) return Fail(EISDIR);
      if (existing->kind != FileType::kRegular) return Fail(EEXIST);
      return existing;
    }
    return AddNew(**dir, name, FileType::kRegular, mode, owner);
  }

  Result<NodePtr> Mkdir(Node& dir_node, std::string_view name, uint32_t mode,
                        Owner owner) override {
    std::unique_lock lock(mu_);
    auto dir = LiveDir(dir_node);
    if (!dir) return std::unexpected(dir.error());
    if (Child(**dir, name) != nullptr) return Fail(EEXIST);
    return AddNew(**dir, name, FileType::kDirectory, mode, owner);
  }

  Result<NodePtr> Symlink(Node& dir_node, std::string_view name, std::string_view target,
                          Owner owner) override {
    std::unique_lock lock(mu_);
    auto dir = LiveDir(dir_node);
    if (!dir) return std::unexpected(dir.error());
    if (Child(**dir, name) != nullptr) return Fail(EEXIST);
    return AddNew(**dir, name, FileType::kSymlink, 0777, owner, target);
  }

  Result<NodePtr> Mknod(Node& dir_node, std::string_view name, FileType type, uint32_t mode,
                        uint32_t major, uint32_t minor, Owner owner) override {
    const bool device = type == FileType::kCharDevice || type == FileType::kBlockDevice;
    if (!device && type != FileType::kSocket && type != FileType::kFifo) return Fail(EINVAL);
    std::unique_lock lock(mu_);
    auto dir = LiveDir(dir_node);
    if (!dir) return std::unexpected(dir.error());
    if (Child(**dir, name) != nullptr) return Fail(EEXIST);
    // mknod(2) ignores the device number of fifos and sockets.
    return AddNew(**dir, name, type, mode, owner, {}, device ? major : 0, device ? minor : 0);
  }

  Result<void> Remove(Node& dir_node, std::string_view name) override {
    std::unique_lock lock(mu_);
    auto dir = LiveDir(dir_node);
    if (!dir) return std::unexpected(dir.error());
    std::shared_ptr<Inode> victim = Child(**dir, name);
    if (victim == nullptr) return Fail(ENOENT);
    if (victim->kind == FileType::kDirectory) return Fail(EISDIR);
    RemoveEntry(**dir, name);
    DropLink(*victim);
    return {};
  }

  Result<void> Rmdir(Node& dir_node, std::string_view name) override {
    std::unique_lock lock(mu_);
    auto dir = LiveDir(dir_node);
    if (!dir) return std::unexpected(dir.error());
    std::shared_ptr<Inode> victim = Child(**dir, name);
    if (victim == nullptr) return Fail(ENOENT);
    if (victim->kind != FileType::kDirectory) return Fail(ENOTDIR);
    if (!victim->entries.empty()) return Fail(ENOTEMPTY);
    RemoveEntry(**dir, name);
    RemoveDirectory(**dir, *victim);
    return {};
  }

  Result<void> Rename(Node& from_node, std::string_view from_name, Node& to_node,
                      std::string_view to_name) override {
    std::unique_lock lock(mu_);
    auto from = LiveDir(from_node);
    if (!from) return std::unexpected(from.error());
    auto to = LiveDir(to_node);
    if (!to) return std::unexpected(to.error());
    Inode& from_dir = **from;
    Inode& to_dir = **to;
    std::shared_ptr<Inode> src = Child(from_dir, from_name);
    if (src == nullptr) return Fail(ENOENT);
    std::shared_ptr<Inode> dst = Child(to_dir, to_name);
    // rename(2): two links to the same file (or the same name twice) is a successful no-op.
    if (dst == src) return {};
    const bool src_is_dir = src->kind == FileType::kDirectory;
    if (src_is_dir) {
      // Moving a directory below itself would detach a cycle from the tree. (The raw parent
      // pointers stay valid: live directories are held by inodes_.)
      for (Inode* p = &to_dir;; p = p->parent.lock().get()) {
        if (p == src.get()) return Fail(EINVAL);
        if (p == nullptr || p == root_.get()) break;
      }
    }
    if (dst != nullptr) {
      const bool dst_is_dir = dst->kind == FileType::kDirectory;
      if (src_is_dir && !dst_is_dir) return Fail(ENOTDIR);
      if (!src_is_dir && dst_is_dir) return Fail(EISDIR);
      if (dst_is_dir && !dst->entries.empty()) return Fail(ENOTEMPTY);
      RemoveEntry(to_dir, to_name);
      if (dst_is_dir) {
        RemoveDirectory(to_dir, *dst);
      } else {
        DropLink(*dst);
      }
    }
    RemoveEntry(from_dir, from_name);
    AddEntry(to_dir, to_name, src);
    if (src_is_dir && &from_dir != &to_dir) {
      AdjustLinks(from_dir, -1);
      AdjustLinks(to_dir, +1);
      src->parent = to_dir.shared_from_this();
    }
    std::unique_lock src_lock(src->mu);
    src->ctime = Now();
    return {};
  }

  Result<void> Link(Node& file_node, Node& dir_node, std::string_view name) override {
    std::unique_lock lock(mu_);
    auto dir = LiveDir(dir_node);
    if (!dir) return std::unexpected(dir.error());
    Inode& file = AsInode(file_node);
    if (file.kind == FileType::kDirectory) return Fail(EPERM);
    if (file.nlink == 0) return Fail(ESTALE);
    if (Child(**dir, name) != nullptr) return Fail(EEXIST);
    AddEntry(**dir, name, file.shared_from_this());
    std::unique_lock file_lock(file.mu);
    ++file.nlink;
    file.ctime = Now();
    return {};
  }

  Result<bool> ReadDir(Node& dir_node, uint64_t cookie,
                       const std::function<bool(const DirEntry&)>& emit) override {
    struct Pending {
      std::string name;
      uint64_t fileid;
      uint64_t cookie;
    };
    std::vector<Pending> batch;
    // Copy a batch under the lock, then emit without it, so emit may take its time (or even
    // call back into the filesystem) without blocking namespace changes.
    while (true) {
      batch.clear();
      bool at_end = false;
      {
        std::shared_lock lock(mu_);
        auto dir = LiveDir(dir_node);
        if (!dir) return std::unexpected(dir.error());
        Inode& d = **dir;
        if (cookie < kDotCookie) batch.push_back({".", d.ino, kDotCookie});
        if (cookie < kDotDotCookie) {
          std::shared_ptr<Inode> parent = d.parent.lock();
          batch.push_back({"..", parent != nullptr ? parent->ino : d.ino, kDotDotCookie});
        }
        auto it = d.entries.upper_bound(std::max(cookie, kDotDotCookie));
        for (; it != d.entries.end() && batch.size() < kReadDirBatch; ++it) {
          batch.push_back({it->second.name, it->second.inode->ino, it->first});
        }
        at_end = it == d.entries.end();
      }
      for (const Pending& p : batch) {
        if (!emit(DirEntry{p.name, p.fileid, p.cookie})) return false;
      }
      if (at_end) return true;
      cookie = batch.back().cookie;
    }
  }

  Result<FsStat> StatFs(Node&) override {
    FsStat st;
    st.total_bytes = kCapacityBytes;
    st.free_bytes = st.avail_bytes = kCapacityBytes - space_->used.load(std::memory_order_relaxed);
    st.total_files = kCapacityFiles;
    std::shared_lock lock(mu_);
    st.free_files = st.avail_files = kCapacityFiles - inodes_.size();
    return st;
  }

  Result<void> SyncDir(Node& dir_node) override {
    std::shared_lock lock(mu_);
    auto dir = LiveDir(dir_node);
    if (!dir) return std::unexpected(dir.error());
    return {};
  }

 private:
  static void PutLe64(uint64_t v, std::span<std::byte> out) {
    for (size_t i = 0; i < 8; ++i) out[i] = static_cast<std::byte>(v >> (8 * i));
  }
  static uint64_t GetLe64(std::span<const std::byte> in) {
    uint64_t v = 0;
    for (size_t i = 0; i < 8; ++i) v |= static_cast<uint64_t>(in[i]) << (8 * i);
    return v;
  }

  // The following require mu_ (exclusive for those that modify).

  static Result<Inode*> LiveDir(Node& node) {
    Inode& inode = AsInode(node);
    if (inode.kind != FileType::kDirectory) return Fail(ENOTDIR);
    if (inode.nlink == 0) return Fail(ESTALE);
    return &inode;
  }

  static std::shared_ptr<Inode> Child(const Inode& dir, std::string_view name) {
    auto it = dir.by_name.find(name);
    if (it == dir.by_name.end()) return nullptr;
    return dir.entries.at(it->second).inode;
  }

  std::shared_ptr<Inode> AddNew(Inode& dir, std::string_view name, FileType type, uint32_t mode,
                                Owner owner, std::string_view target = {}, uint32_t major = 0,
                                uint32_t minor = 0) {
    uint64_t ino = 0;
    if (!free_inos_.empty()) {
      // Reusing numbers, as disk filesystems do, keeps the generation check honest.
      ino = free_inos_.back();
      free_inos_.pop_back();
    } else {
      ino = next_ino_++;
    }
    auto inode = std::make_shared<Inode>(ino, next_gen_++, type, space_);
    inode->mode = mode & 07777;
    inode->uid = owner.uid;
    inode->gid = owner.gid;
    inode->rdev_major = major;
    inode->rdev_minor = minor;
    inode->target = std::string(target);
    inode->atime = inode->mtime = inode->ctime = Now();
    if (type == FileType::kDirectory) {
      inode->nlink = 2;
      inode->size = 2 * kDirEntrySize;
      inode->parent = dir.shared_from_this();
    } else {
      inode->nlink = 1;
      inode->size = type == FileType::kSymlink ? target.size() : 0;
    }
    inodes_.emplace(ino, inode);
    AddEntry(dir, name, inode);
    if (type == FileType::kDirectory) AdjustLinks(dir, +1);
    return inode;
  }

  // Inserts with a fresh cookie and stamps the directory as modified.
  static void AddEntry(Inode& dir, std::string_view name, std::shared_ptr<Inode> inode) {
    const uint64_t seq = dir.next_seq++;
    dir.by_name.emplace(std::string(name), seq);
    dir.entries.emplace(seq, Dirent{std::string(name), std::move(inode)});
    std::unique_lock lock(dir.mu);
    dir.size += kDirEntrySize;
    dir.mtime = dir.ctime = Now();
  }

  static void RemoveEntry(Inode& dir, std::string_view name) {
    auto it = dir.by_name.find(name);
    dir.entries.erase(it->second);
    dir.by_name.erase(it);
    std::unique_lock lock(dir.mu);
    dir.size -= kDirEntrySize;
    dir.mtime = dir.ctime = Now();
  }

  // Subdirectory count changes of `dir` (their ".." links).
  static void AdjustLinks(Inode& dir, int delta) {
    std::unique_lock lock(dir.mu);
    dir.nlink = static_cast<uint32_t>(static_cast<int64_t>(dir.nlink) + delta);
  }

  // One name of a non-directory is gone; at zero links the file is removed.
  void DropLink(Inode& inode) {
    {
      std::unique_lock lock(inode.mu);
      --inode.nlink;
      inode.ctime = Now();
      if (inode.nlink > 0) return;
    }
    Forget(inode);
  }

  // An empty directory's entry in `parent` is gone.
  void RemoveDirectory(Inode& parent, Inode& dir) {
    {
      std::unique_lock lock(dir.mu);
      dir.nlink = 0;
      dir.ctime = Now();
    }
    dir.parent.reset();
    AdjustLinks(parent, -1);
    Forget(dir);
  }

  void Forget(Inode& inode) {
    inodes_.erase(inode.ino);
    free_inos_.push_back(inode.ino);
  }

  const std::shared_ptr<Space> space_;
  std::shared_ptr<Inode> root_;

  // Guards the namespace: the inode table, directory contents and parents, and (with the
  // inode's own mutex) link counts. Lock order: mu_ before any Inode::mu, and at most one
  // Inode::mu at a time.
  std::shared_mutex mu_;
  std::unordered_map<uint64_t, std::shared_ptr<Inode>> inodes_;  // live inodes by number
  std::vector<uint64_t> free_inos_;
  uint64_t next_ino_ = kRootIno + 1;
  uint64_t next_gen_ = 1;
};

}  // namespace

std::unique_ptr<Filesystem> MakeMemoryFs() { return std::make_unique<MemoryFs>(); }

}  // namespace nfsx::vfs
