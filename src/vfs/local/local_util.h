// Small Linux helpers shared by the LocalFs implementation: an owning file
// descriptor, /proc/self/fd paths, stat -> Attr conversion and the compact
// encoding of kernel file handles. Internal to src/vfs/local/.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <utility>

#include "vfs/vfs.h"

namespace nfsx::vfs::local {

// Owns one file descriptor. Closing keeps errno intact so that a FailErrno()
// evaluated in a return statement is not clobbered by a destructor.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    Reset(std::exchange(other.fd_, -1));
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { Reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int Release() { return std::exchange(fd_, -1); }
  // Errors from close() are dropped: callers that care (OpenFile::Close) close
  // the descriptor themselves.
  void Reset(int fd = -1) {
    if (fd_ >= 0) {
      int saved = errno;
      ::close(fd_);
      errno = saved;
    }
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

// "/proc/self/fd/N": the only way to reach the file behind an O_PATH
// descriptor with calls that refuse such descriptors (open, chmod, truncate).
// The magic link resolves to the inode itself, never through a name, so it
// cannot be redirected by renames or symlinks.
class ProcFdPath {
 public:
  explicit ProcFdPath(int fd) {
    static constexpr char kPrefix[] = "/proc/self/fd/";
    std::memcpy(buf_.data(), kPrefix, sizeof(kPrefix) - 1);
    char* end = buf_.data() + sizeof(kPrefix) - 1;
    end = std::to_chars(end, buf_.data() + buf_.size() - 1, fd).ptr;
    *end = '\0';
  }
  const char* c_str() const { return buf_.data(); }

 private:
  std::array<char, 32> buf_{};
};

inline std::optional<FileType> FileTypeFromMode(mode_t mode) {
  switch (mode & S_IFMT) {
    case S_IFREG:
      return FileType::kRegular;
    case S_IFDIR:
      return FileType::kDirectory;
    case S_IFLNK:
      return FileType::kSymlink;
    case S_IFCHR:
      return FileType::kCharDevice;
    case S_IFBLK:
      return FileType::kBlockDevice;
    case S_IFIFO:
      return FileType::kFifo;
    case S_IFSOCK:
      return FileType::kSocket;
    default:
      return std::nullopt;
  }
}

// The S_IF* format Mknod creates for `type`; nullopt if Mknod cannot make it.
inline std::optional<mode_t> SpecialFileFormat(FileType type) {
  switch (type) {
    case FileType::kCharDevice:
      return S_IFCHR;
    case FileType::kBlockDevice:
      return S_IFBLK;
    case FileType::kFifo:
      return S_IFIFO;
    case FileType::kSocket:
      return S_IFSOCK;
    default:
      return std::nullopt;
  }
}

inline Timespec ToTimespec(const struct timespec& ts) {
  return Timespec{.sec = ts.tv_sec, .nsec = static_cast<uint32_t>(ts.tv_nsec)};
}

inline Result<Attr> AttrFromStat(const struct stat& st) {
  std::optional<FileType> type = FileTypeFromMode(st.st_mode);
  // Linux has no other file types; EIO rather than guessing if one appears.
  if (!type) return Fail(EIO);
  Attr attr;
  attr.type = *type;
  attr.mode = st.st_mode & 07777;
  attr.nlink = static_cast<uint32_t>(st.st_nlink);
  attr.uid = st.st_uid;
  attr.gid = st.st_gid;
  attr.size = static_cast<uint64_t>(st.st_size);
  attr.used = static_cast<uint64_t>(st.st_blocks) * 512;
  if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
    attr.rdev_major = major(st.st_rdev);
    attr.rdev_minor = minor(st.st_rdev);
  }
  attr.fileid = st.st_ino;
  attr.atime = ToTimespec(st.st_atim);
  attr.mtime = ToTimespec(st.st_mtim);
  attr.ctime = ToTimespec(st.st_ctim);
  return attr;
}

// Backend handle layout: [kHandleTag][kernel handle_type][kernel f_handle...].
// The kernel bytes are opaque to us; handle_bytes is implied by the length.
// The tag lets DecodeHandle reject bytes that were never a handle (EBADF)
// before the kernel sees them. ext4 gives 10-byte handles.
inline constexpr std::byte kHandleTag{0x4c};
inline constexpr size_t kHandleHeader = 2;
inline constexpr size_t kMaxKernelHandleBytes = kMaxBackendHandle - kHandleHeader;

struct EncodedHandle {
  std::array<std::byte, kMaxBackendHandle> bytes{};
  uint8_t size = 0;
  std::span<const std::byte> view() const { return {bytes.data(), size}; }
};

// A struct file_handle with room for the largest kernel handle. file_handle
// ends in a flexible array, so it lives in raw storage.
class KernelHandle {
 public:
  KernelHandle() { header()->handle_bytes = MAX_HANDLE_SZ; }
  file_handle* header() { return reinterpret_cast<file_handle*>(storage_.data()); }
  unsigned char* bytes() { return header()->f_handle; }

 private:
  alignas(file_handle) std::array<std::byte, sizeof(file_handle) + MAX_HANDLE_SZ> storage_{};
};

// name_to_handle_at() of an O_PATH descriptor. EOVERFLOW when the handle does
// not fit in kMaxBackendHandle.
inline Result<EncodedHandle> HandleOfFd(int fd, int* mount_id) {
  KernelHandle kh;
  if (name_to_handle_at(fd, "", kh.header(), mount_id, AT_EMPTY_PATH) < 0) {
    return FailErrno();
  }
  const file_handle& h = *kh.header();
  if (h.handle_bytes > kMaxKernelHandleBytes || h.handle_type < 0 || h.handle_type > 0xff) {
    return Fail(EOVERFLOW);
  }
  EncodedHandle out;
  out.bytes[0] = kHandleTag;
  out.bytes[1] = static_cast<std::byte>(h.handle_type);
  std::memcpy(&out.bytes[kHandleHeader], kh.bytes(), h.handle_bytes);
  out.size = static_cast<uint8_t>(kHandleHeader + h.handle_bytes);
  return out;
}

// The inverse of the encoding above; false if `in` cannot be one of our handles.
inline bool ParseHandle(std::span<const std::byte> in, KernelHandle& kh) {
  if (in.size() <= kHandleHeader || in.size() > kMaxBackendHandle) return false;
  if (in[0] != kHandleTag) return false;
  kh.header()->handle_type = static_cast<int>(in[1]);
  kh.header()->handle_bytes = static_cast<unsigned>(in.size() - kHandleHeader);
  std::memcpy(kh.bytes(), in.data() + kHandleHeader, in.size() - kHandleHeader);
  return true;
}

}  // namespace nfsx::vfs::local
