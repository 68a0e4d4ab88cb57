// LocalOpenFile: the OpenFile of LocalFs, a plain read or read-write file
// descriptor. Internal to src/vfs/local/.
#pragma once

#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <span>

#include "vfs/local/local_util.h"
#include "vfs/vfs.h"

namespace nfsx::vfs::local {

// Read, Write, Sync and GetAttr may run concurrently (pread/pwrite carry their
// own offsets). Close must not race the other calls: the descriptor number
// could be reused by then. The server's open-file cache guarantees that.
class LocalOpenFile final : public OpenFile {
 public:
  LocalOpenFile(UniqueFd fd, bool writable) : fd_(fd.Release()), writable_(writable) {}
  ~LocalOpenFile() override {
    int fd = fd_.exchange(-1);
    if (fd >= 0) ::close(fd);
  }
  LocalOpenFile(const LocalOpenFile&) = delete;
  LocalOpenFile& operator=(const LocalOpenFile&) = delete;

  Result<size_t> Read(uint64_t offset, std::span<std::byte> out) override {
    return ReadAll(offset, out, 0);
  }

  // preadv2(RWF_NOWAIT) fails with EAGAIN when the data is not all cached, or may
  // return part of it: a part is read again with the rest, blocking, by Read.
  // Filesystems without RWF_NOWAIT say EOPNOTSUPP: they count as would-block too.
  Result<size_t> ReadIfCached(uint64_t offset, std::span<std::byte> out) override {
    Result<size_t> n = ReadAll(offset, out, RWF_NOWAIT);
    if (!n && n.error().code == EOPNOTSUPP) return Fail(EAGAIN);
    return n;
  }

  // Loops over short writes. If an error (ENOSPC, EDQUOT, ...) hits after some
  // bytes went out, reports those bytes: the caller sees a short write and the
  // error recurs on the next call for the remainder.
  Result<size_t> Write(uint64_t offset, std::span<const std::byte> data) override {
    int fd = fd_.load(std::memory_order_relaxed);
    size_t done = 0;
    while (done < data.size()) {
      ssize_t n =
          ::pwrite(fd, data.data() + done, data.size() - done, static_cast<off_t>(offset + done));
      if (n < 0) {
        if (errno == EINTR) continue;
        if (done > 0) break;
        return FailErrno();
      }
      if (n == 0) break;  // cannot happen for regular files; avoid spinning
      done += static_cast<size_t>(n);
    }
    return done;
  }

  Result<void> Sync(bool data_only) override {
    int fd = fd_.load(std::memory_order_relaxed);
    int rc = data_only ? ::fdatasync(fd) : ::fsync(fd);
    if (rc < 0) return FailErrno();
    return {};
  }

  Result<Attr> GetAttr() override {
    struct stat st;
    if (::fstat(fd_.load(std::memory_order_relaxed), &st) < 0) return FailErrno();
    return AttrFromStat(st);
  }

  Result<void> Close() override {
    int fd = fd_.exchange(-1);
    if (fd < 0) return Fail(EBADF);
    // On Linux the descriptor is gone even when close() fails; EINTR carries
    // no information about the data, so only real errors (EIO, ENOSPC from a
    // deferred write-back on some filesystems) are reported.
    if (::close(fd) < 0 && errno != EINTR) return FailErrno();
    return {};
  }

  bool writable() const override { return writable_; }

 private:
  // Reads until `out` is full or the end of file, with preadv2 `flags`.
  Result<size_t> ReadAll(uint64_t offset, std::span<std::byte> out, int flags) {
    int fd = fd_.load(std::memory_order_relaxed);
    size_t done = 0;
    while (done < out.size()) {
      iovec iov{out.data() + done, out.size() - done};
      ssize_t n = ::preadv2(fd, &iov, 1, static_cast<off_t>(offset + done), flags);
      if (n < 0) {
        if (errno == EINTR) continue;
        return FailErrno();
      }
      if (n == 0) break;  // end of file
      done += static_cast<size_t>(n);
    }
    return done;
  }

  std::atomic<int> fd_;
  const bool writable_;
};

}  // namespace nfsx::vfs::local
