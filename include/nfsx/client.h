// The nfsx NFSv3 client library.
//
//   auto client = nfsx::Client::Connect("nfs://server/export?version=3&mountport=20048");
//   auto file = (*client)->Open("dir/data.bin", O_RDWR | O_CREAT, 0644);
//   (*file)->Pwrite(bytes, 0);
//   (*file)->Close();   // flushes and commits: the data is on the server's disk
//
// Coherence: close-to-open like the Linux client (open revalidates, close
// flushes and commits), an attribute cache with acregmin/acregmax semantics, and
// a tracker that tells the client's own modifications from other clients' so
// that its cache is never thrown away because of its own writes, yet a change
// made elsewhere is noticed (docs/client_consistency.md).
//
// Durability: fsync() and close() return success only once every byte written is
// committed under a write verifier that matches the one its WRITE got; data lost
// in a server restart is resent, never silently dropped.
//
// Thread safety: a Client and its Files may be used from many threads at once.
// Blocking calls may be made from any thread except inside an async callback.
// Async callbacks run on the client's worker threads, except those of
// PreadAsync/PwriteAsync on an O_DIRECT file: those run on a connection's
// reader thread, so they must be short and must not call blocking API.
#pragma once

#include <fcntl.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "nfsx/options.h"
#include "nfsx/result.h"

namespace nfsx {

enum class FileType : uint8_t {
  kRegular = 1,
  kDirectory = 2,
  kBlockDevice = 3,
  kCharDevice = 4,
  kSymlink = 5,
  kSocket = 6,
  kFifo = 7,
};

struct Timestamp {
  int64_t sec = 0;
  uint32_t nsec = 0;
  friend auto operator<=>(const Timestamp&, const Timestamp&) = default;
};

struct Stat {
  FileType type = FileType::kRegular;
  uint32_t mode = 0;  // permission bits (07777)
  uint32_t nlink = 0;
  uint32_t uid = 0, gid = 0;
  uint64_t size = 0;
  uint64_t used = 0;
  uint32_t rdev_major = 0, rdev_minor = 0;
  uint64_t fsid = 0;
  uint64_t fileid = 0;  // the inode number on the server
  Timestamp atime, mtime, ctime;
};

struct DirEntry {
  std::string name;
  uint64_t fileid = 0;
  std::optional<Stat> attr;  // present when the server sent it (READDIRPLUS)
};

struct FsStat {
  uint64_t total_bytes = 0, free_bytes = 0, avail_bytes = 0;
  uint64_t total_files = 0, free_files = 0, avail_files = 0;
};

// Changes for SetAttr; unset fields stay as they are.
struct SetAttrs {
  std::optional<uint32_t> mode, uid, gid;
  std::optional<uint64_t> size;
  enum class Time : uint8_t { kKeep, kNow, kGiven };
  Time atime_how = Time::kKeep, mtime_how = Time::kKeep;
  Timestamp atime, mtime;
};

// What went over the wire, per NFSv3 procedure (index = procedure number).
struct WireStats {
  uint64_t rpc_calls = 0;
  uint64_t retransmits = 0;
  uint64_t reconnects = 0;
  uint64_t nfs_calls[22] = {};
  uint64_t write_bytes = 0;  // payload of WRITE calls
  uint64_t read_bytes = 0;   // payload of READ replies
  // READ payload read from the socket straight into its final place (no copy).
  uint64_t read_bytes_landed = 0;
  uint64_t resent_bytes = 0;   // WRITE payload sent again after a verifier mismatch
  uint64_t commits_ahead = 0;  // background COMMITs ended (commit_ahead_bytes)
  uint64_t invalidations = 0;  // data caches dropped because of someone else's change
};

// Formats stats like Linux `nfsstat -c` (client rpc stats, client nfs v3).
std::string FormatNfsstat(const WireStats& stats);

class File;

class Client {
 public:
  // nfs://host[:port]/export[/path][?version=3&nfsport=&mountport=&nconnect=&rsize=&wsize=
  //   &actimeo=&acregmin=&acregmax=&acdirmin=&acdirmax=&noac=1&nocto=1&uid=&gid=]
  // Mounts the longest prefix of the path that the server exports; the rest is
  // reachable as path_in_export().
  static Result<std::unique_ptr<Client>> Connect(std::string_view url,
                                                 std::string* error = nullptr);
  static Result<std::unique_ptr<Client>> Connect(std::string_view url, ClientOptions options,
                                                 std::string* error = nullptr);
  virtual ~Client() = default;

  // The part of the URL's path below the mounted export ("" if none), relative.
  virtual const std::string& path_in_export() const = 0;
  virtual const ClientOptions& options() const = 0;

  // Paths are relative to the export root ("a/b/c"; a leading '/' is allowed).
  // Symlinks are followed except in the last component of Lstat/Readlink/Unlink.
  virtual Result<std::unique_ptr<File>> Open(std::string_view path, int flags,
                                             uint32_t mode = 0644) = 0;
  virtual Result<Stat> GetAttr(std::string_view path) = 0;  // stat(2)
  virtual Result<Stat> Lstat(std::string_view path) = 0;
  virtual Result<void> SetAttr(std::string_view path, const SetAttrs& attrs) = 0;
  virtual Result<void> Truncate(std::string_view path, uint64_t size) = 0;
  virtual Result<std::vector<DirEntry>> ReadDir(std::string_view path) = 0;
  virtual Result<void> Mkdir(std::string_view path, uint32_t mode = 0755) = 0;
  virtual Result<void> Rmdir(std::string_view path) = 0;
  virtual Result<void> Unlink(std::string_view path) = 0;
  virtual Result<void> Rename(std::string_view from, std::string_view to) = 0;
  virtual Result<void> Symlink(std::string_view target, std::string_view link_path) = 0;
  virtual Result<std::string> Readlink(std::string_view path) = 0;
  virtual Result<void> Link(std::string_view existing, std::string_view new_path) = 0;
  virtual Result<FsStat> StatFs() = 0;

  // Async forms: run on the client's workers; `done` gets the result.
  template <class T>
  using Callback = std::function<void(Result<T>)>;
  virtual void OpenAsync(std::string_view path, int flags, uint32_t mode,
                         Callback<std::unique_ptr<File>> done) = 0;
  virtual void GetAttrAsync(std::string_view path, Callback<Stat> done) = 0;
  virtual void ReadDirAsync(std::string_view path, Callback<std::vector<DirEntry>> done) = 0;

  // Flushes and commits everything written through this client.
  virtual Result<void> SyncAll() = 0;

  virtual WireStats stats() const = 0;
};

class File {
 public:
  virtual ~File() = default;

  // At the file position (O_APPEND writes always go to the end).
  virtual Result<size_t> Read(std::span<std::byte> out) = 0;
  virtual Result<size_t> Write(std::span<const std::byte> data) = 0;
  virtual Result<size_t> Pread(std::span<std::byte> out, uint64_t offset) = 0;
  virtual Result<size_t> Pwrite(std::span<const std::byte> data, uint64_t offset) = 0;
  virtual Result<uint64_t> Seek(int64_t offset, int whence) = 0;
  virtual Result<void> Fsync() = 0;
  virtual Result<Stat> Fstat() = 0;
  virtual Result<void> Ftruncate(uint64_t size) = 0;
  // Flushes and commits (close-to-open); the File is unusable afterwards. The
  // destructor closes too, but cannot report errors.
  virtual Result<void> Close() = 0;

  // Async forms. The buffers must stay valid until `done` runs.
  // On an O_DIRECT file a read of at most rsize (a write of at most wsize, in
  // the default write mode, not O_APPEND) is sent from the calling thread and
  // completed by the reply, so one thread can keep hundreds in flight; `done`
  // then runs on the connection's reader thread. Anything that would have to
  // wait (dirty pages to flush first, too much uncommitted data, a larger
  // request) goes to the client's workers instead.
  template <class T>
  using Callback = std::function<void(Result<T>)>;
  virtual void PreadAsync(std::span<std::byte> out, uint64_t offset, Callback<size_t> done) = 0;
  virtual void PwriteAsync(std::span<const std::byte> data, uint64_t offset,
                           Callback<size_t> done) = 0;
  virtual void FsyncAsync(Callback<void> done) = 0;

  // The NFS file handle (opaque bytes) and inode number, for advanced users.
  virtual std::span<const std::byte> handle() const = 0;
  virtual uint64_t fileid() const = 0;
};

}  // namespace nfsx
