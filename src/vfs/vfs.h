// The storage boundary: everything the NFS procedures do to files goes through
// a Filesystem. Two implementations: LocalFs (a POSIX directory tree) and
// MemoryFs (all in memory, for tests and benchmarks).
//
// Contracts common to every backend:
//  - Names passed in are single path components: never empty, never "." or
//    "..", never containing '/' or NUL. The server checks this before calling
//    (see ValidName()); backends may assume it.
//  - Backends do no permission checking: the server decides who may do what
//    (server/access.cc) and calls the backend as a privileged user. Ownership
//    of new objects is passed explicitly.
//  - Errors are errno values (ENOENT, EEXIST, ENOTEMPTY, ESTALE, ...).
//  - Every Filesystem and Node is safe for concurrent use. The server already
//    serialises modifications of one file, but reads and writes of different
//    files, and reads of a file being written, run concurrently.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "base/result.h"

namespace nfsx::vfs {

enum class FileType : uint8_t {
  kRegular = 1,
  kDirectory = 2,
  kBlockDevice = 3,
  kCharDevice = 4,
  kSymlink = 5,
  kSocket = 6,
  kFifo = 7,
};

struct Timespec {
  int64_t sec = 0;
  uint32_t nsec = 0;
  friend auto operator<=>(const Timespec&, const Timespec&) = default;
};

struct Attr {
  FileType type = FileType::kRegular;
  uint32_t mode = 0;  // permission bits only (07777)
  uint32_t nlink = 0;
  uint32_t uid = 0;
  uint32_t gid = 0;
  uint64_t size = 0;
  uint64_t used = 0;  // bytes of storage in use
  uint32_t rdev_major = 0;
  uint32_t rdev_minor = 0;
  uint64_t fileid = 0;  // unique within the filesystem (inode number)
  Timespec atime, mtime, ctime;
};

struct SetAttr {
  enum class Time : uint8_t { kKeep, kServerNow, kGiven };
  std::optional<uint32_t> mode;
  std::optional<uint32_t> uid;
  std::optional<uint32_t> gid;
  std::optional<uint64_t> size;
  Time atime_how = Time::kKeep;
  Time mtime_how = Time::kKeep;
  Timespec atime, mtime;
};

// Who owns a new object.
struct Owner {
  uint32_t uid = 0;
  uint32_t gid = 0;
};

struct FsStat {
  uint64_t total_bytes = 0, free_bytes = 0, avail_bytes = 0;
  uint64_t total_files = 0, free_files = 0, avail_files = 0;
};

// One directory entry. `cookie` is where the listing resumes *after* this entry.
struct DirEntry {
  std::string_view name;
  uint64_t fileid = 0;
  uint64_t cookie = 0;
};

// Largest backend handle; the server's file handle adds a header and a MAC
// around it and must stay within NFSv3's 64 bytes.
inline constexpr size_t kMaxBackendHandle = 40;

// A reference to one file. Holding a Node keeps no lock; the file may be
// removed meanwhile, and operations on it then fail with ESTALE.
class Node {
 public:
  virtual ~Node() = default;
  virtual FileType type() const = 0;
};
using NodePtr = std::shared_ptr<Node>;

// An open file for data access. The server keeps these in its open-file cache
// so that READ/WRITE/COMMIT do not reopen the file on every call.
class OpenFile {
 public:
  virtual ~OpenFile() = default;
  // Short reads happen only at end of file.
  virtual Result<size_t> Read(uint64_t offset, std::span<std::byte> out) = 0;
  // Read, but only if it need not wait for the device (the data is in the page
  // cache): otherwise EAGAIN and nothing read. For callers that must not block, such
  // as a server's event loop, which then hands the read to a thread that may.
  // A backend that cannot tell must say EAGAIN; one that never waits reads.
  virtual Result<size_t> ReadIfCached(uint64_t offset, std::span<std::byte> out) {
    return Read(offset, out);
  }
  virtual Result<size_t> Write(uint64_t offset, std::span<const std::byte> data) = 0;
  // Flushes written data to stable storage (fdatasync when data_only, else fsync).
  // An error means data written through ANY descriptor of this file may be lost.
  virtual Result<void> Sync(bool data_only) = 0;
  // Attributes through the open file (cheaper than a lookup).
  virtual Result<Attr> GetAttr() = 0;
  // Releases the file, reporting a deferred write-back error if there was one.
  virtual Result<void> Close() = 0;
  virtual bool writable() const = 0;
};

class Filesystem {
 public:
  virtual ~Filesystem() = default;

  virtual NodePtr Root() = 0;
  // A stable identity of this filesystem, reported as fattr3.fsid.
  virtual uint64_t fsid() const = 0;
  // True when handles survive a restart of the server (LocalFs: yes).
  virtual bool persistent() const = 0;

  // Handles are opaque bytes (at most kMaxBackendHandle) that identify the file
  // for as long as it exists, across restarts when persistent().
  virtual size_t EncodeHandle(const Node& node, std::span<std::byte, kMaxBackendHandle> out) = 0;
  // ESTALE if the file no longer exists; EBADF if the bytes are not a handle.
  virtual Result<NodePtr> DecodeHandle(std::span<const std::byte> handle) = 0;

  virtual Result<Attr> GetAttr(Node& node) = 0;
  virtual Result<void> SetAttr(Node& node, const SetAttr& attr) = 0;

  // Does not follow a symlink in the last component.
  virtual Result<NodePtr> Lookup(Node& dir, std::string_view name) = 0;
  // The parent directory (".."). For the root, the root itself.
  virtual Result<NodePtr> Parent(Node& dir) = 0;
  virtual Result<std::string> ReadLink(Node& node) = 0;

  virtual Result<std::unique_ptr<OpenFile>> Open(Node& node, bool writable) = 0;

  // Creates a regular file. exclusive: EEXIST if the name exists; otherwise an
  // existing regular file is returned as is.
  virtual Result<NodePtr> Create(Node& dir, std::string_view name, uint32_t mode, Owner owner,
                                 bool exclusive) = 0;
  virtual Result<NodePtr> Mkdir(Node& dir, std::string_view name, uint32_t mode, Owner owner) = 0;
  virtual Result<NodePtr> Symlink(Node& dir, std::string_view name, std::string_view target,
                                  Owner owner) = 0;
  // type is kCharDevice, kBlockDevice, kSocket or kFifo.
  virtual Result<NodePtr> Mknod(Node& dir, std::string_view name, FileType type, uint32_t mode,
                                uint32_t major, uint32_t minor, Owner owner) = 0;
  // Removes a non-directory (EISDIR for a directory).
  virtual Result<void> Remove(Node& dir, std::string_view name) = 0;
  virtual Result<void> Rmdir(Node& dir, std::string_view name) = 0;
  // POSIX rename(2) semantics, including replacing an existing target.
  virtual Result<void> Rename(Node& from_dir, std::string_view from_name, Node& to_dir,
                              std::string_view to_name) = 0;
  virtual Result<void> Link(Node& file, Node& dir, std::string_view name) = 0;

  // Lists `dir` starting after `cookie` (0 = from the start), calling `emit` for
  // each entry including "." and "..", until it returns false or the directory
  // ends. Returns true at end of directory. Cookies stay valid across calls and
  // across entries being added or removed elsewhere in the directory.
  virtual Result<bool> ReadDir(Node& dir, uint64_t cookie,
                               const std::function<bool(const DirEntry&)>& emit) = 0;

  virtual Result<FsStat> StatFs(Node& node) = 0;
  // Makes completed namespace changes in `dir` durable (fsync of the directory).
  virtual Result<void> SyncDir(Node& dir) = 0;
};

// A single path component acceptable as a file name.
bool ValidName(std::string_view name);

}  // namespace nfsx::vfs
