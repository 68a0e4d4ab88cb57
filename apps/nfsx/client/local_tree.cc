// The local side of a copy, in plain POSIX.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <climits>

#include "apps/nfsx/client/tree.h"

namespace nfsx::app::cli {
namespace {

std::string Z(std::string_view s) { return std::string(s); }

FileType TypeOf(mode_t mode) {
  if (S_ISDIR(mode)) return FileType::kDirectory;
  if (S_ISLNK(mode)) return FileType::kSymlink;
  if (S_ISBLK(mode)) return FileType::kBlockDevice;
  if (S_ISCHR(mode)) return FileType::kCharDevice;
  if (S_ISSOCK(mode)) return FileType::kSocket;
  if (S_ISFIFO(mode)) return FileType::kFifo;
  return FileType::kRegular;
}

Timestamp Time(const timespec& ts) {
  return Timestamp{ts.tv_sec, static_cast<uint32_t>(ts.tv_nsec)};
}

timespec Timespec(Timestamp t) { return timespec{t.sec, static_cast<long>(t.nsec)}; }

Result<void> Check(int rc) {
  if (rc != 0) return FailErrno();
  return {};
}

class FdSource final : public Source {
 public:
  explicit FdSource(int fd) : fd_(fd) {}
  ~FdSource() override { close(fd_); }
  Result<size_t> Read(std::span<std::byte> out) override {
    for (;;) {
      ssize_t n = read(fd_, out.data(), out.size());
      if (n >= 0) return static_cast<size_t>(n);
      if (errno != EINTR) return FailErrno();
    }
  }

 private:
  int fd_;
};

class FdSink final : public Sink {
 public:
  explicit FdSink(int fd) : fd_(fd) {}
  ~FdSink() override {
    if (fd_ >= 0) close(fd_);
  }
  Result<void> Write(std::span<const std::byte> data) override {
    while (!data.empty()) {
      ssize_t n = write(fd_, data.data(), data.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return FailErrno();
      data = data.subspan(static_cast<size_t>(n));
    }
    return {};
  }
  Result<void> Close() override {
    int fd = fd_;
    fd_ = -1;
    return Check(close(fd));
  }

 private:
  int fd_;
};

class LocalTree final : public Tree {
 public:
  const std::string& identity() const override { return identity_; }

  Result<Stat> GetAttr(std::string_view path, bool follow) override {
    struct stat st;
    std::string p = Z(path);
    if ((follow ? stat(p.c_str(), &st) : lstat(p.c_str(), &st)) != 0) return FailErrno();
    Stat out;
    out.type = TypeOf(st.st_mode);
    out.mode = st.st_mode & 07777;
    out.nlink = static_cast<uint32_t>(st.st_nlink);
    out.uid = st.st_uid;
    out.gid = st.st_gid;
    out.size = static_cast<uint64_t>(st.st_size);
    out.used = static_cast<uint64_t>(st.st_blocks) * 512;
    out.fsid = st.st_dev;
    out.fileid = st.st_ino;
    out.atime = Time(st.st_atim);
    out.mtime = Time(st.st_mtim);
    out.ctime = Time(st.st_ctim);
    return out;
  }

  // Leaves attributes out: an lstat of each entry costs the caller next to nothing.
  Result<std::vector<TreeEntry>> List(std::string_view dir) override {
    DIR* d = opendir(Z(dir).c_str());
    if (!d) return FailErrno();
    std::vector<TreeEntry> entries;
    errno = 0;
    while (dirent* e = readdir(d)) {
      std::string_view name = e->d_name;
      if (name != "." && name != "..") entries.push_back(TreeEntry{std::string(name), {}});
    }
    int err = errno;
    closedir(d);
    if (err != 0) return Fail(err);
    std::sort(entries.begin(), entries.end(),
              [](const TreeEntry& a, const TreeEntry& b) { return a.name < b.name; });
    return entries;
  }

  Result<std::unique_ptr<Source>> OpenRead(std::string_view path) override {
    int fd = open(Z(path).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return FailErrno();
    posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    return std::unique_ptr<Source>(new FdSource(fd));
  }

  Result<std::unique_ptr<Sink>> OpenWrite(std::string_view path, uint32_t mode) override {
    int fd = open(Z(path).c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (fd < 0) return FailErrno();
    return std::unique_ptr<Sink>(new FdSink(fd));
  }

  Result<void> Mkdir(std::string_view path, uint32_t mode) override {
    return Check(mkdir(Z(path).c_str(), mode));
  }

  Result<std::string> Readlink(std::string_view path) override {
    std::string buf(PATH_MAX, '\0');
    ssize_t n = readlink(Z(path).c_str(), buf.data(), buf.size());
    if (n < 0) return FailErrno();
    buf.resize(static_cast<size_t>(n));
    return buf;
  }

  Result<void> Symlink(std::string_view target, std::string_view path) override {
    return Check(symlink(Z(target).c_str(), Z(path).c_str()));
  }

  Result<void> Unlink(std::string_view path) override { return Check(unlink(Z(path).c_str())); }

  Result<void> SetMode(std::string_view path, uint32_t mode) override {
    return Check(chmod(Z(path).c_str(), mode));
  }

  Result<void> SetOwner(std::string_view path, uint32_t uid, uint32_t gid) override {
    return Check(chown(Z(path).c_str(), uid, gid));
  }

  Result<void> SetTimes(std::string_view path, Timestamp atime, Timestamp mtime) override {
    timespec times[2] = {Timespec(atime), Timespec(mtime)};
    return Check(utimensat(AT_FDCWD, Z(path).c_str(), times, 0));
  }

 private:
  std::string identity_ = "local";
};

}  // namespace

std::unique_ptr<Tree> MakeLocalTree() { return std::make_unique<LocalTree>(); }

}  // namespace nfsx::app::cli
