#include "bench/path_driver.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <mutex>

namespace nfsx::bench {
namespace {

class PathFile final : public BenchFile {
 public:
  explicit PathFile(int fd) : fd_(fd) {}
  ~PathFile() override { (void)Close(); }

  Result<size_t> Pread(std::span<std::byte> out, uint64_t offset) override {
    ssize_t n = pread(fd_, out.data(), out.size(), static_cast<off_t>(offset));
    if (n < 0) return FailErrno();
    return static_cast<size_t>(n);
  }
  Result<size_t> Pwrite(std::span<const std::byte> data, uint64_t offset) override {
    ssize_t n = pwrite(fd_, data.data(), data.size(), static_cast<off_t>(offset));
    if (n < 0) return FailErrno();
    return static_cast<size_t>(n);
  }
  Result<size_t> Append(std::span<const std::byte> data) override {
    ssize_t n = write(fd_, data.data(), data.size());
    if (n < 0) return FailErrno();
    return static_cast<size_t>(n);
  }
  Result<uint64_t> Size() override {
    struct stat st;
    if (fstat(fd_, &st) != 0) return FailErrno();
    return static_cast<uint64_t>(st.st_size);
  }
  Result<void> Fsync() override {
    if (fsync(fd_) != 0) return FailErrno();
    return {};
  }
  Result<void> Close() override {
    if (fd_ < 0) return {};
    int rc = close(fd_);
    fd_ = -1;
    if (rc != 0) return FailErrno();
    return {};
  }

 private:
  int fd_;
};

struct Shared {
  std::string dir;
  std::mutex mu;
  std::vector<std::string> notes;  // GUARDED_BY(mu)
};

class PathDriver final : public Driver {
 public:
  explicit PathDriver(std::shared_ptr<Shared> s) : s_(std::move(s)) {}

  std::string kind() const override { return "path"; }
  std::string description() const override { return fmt::format("POSIX calls in {}", s_->dir); }

  Result<std::unique_ptr<BenchFile>> Open(const std::string& name, int flags,
                                          OpenOptions) override {
    std::string path = s_->dir + "/" + name;
    int fd = open(path.c_str(), flags | O_CLOEXEC, 0644);
    if (fd < 0 && errno == EINVAL && (flags & O_DIRECT)) {
      // tmpfs and some FUSE mounts refuse O_DIRECT: measure buffered, and say so.
      Note(fmt::format("O_DIRECT is not supported in {}: its I/O was buffered", s_->dir));
      fd = open(path.c_str(), (flags & ~O_DIRECT) | O_CLOEXEC, 0644);
    }
    if (fd < 0) return FailErrno();
    return std::unique_ptr<BenchFile>(new PathFile(fd));
  }

  Result<void> Unlink(const std::string& name) override {
    if (unlink((s_->dir + "/" + name).c_str()) != 0) return FailErrno();
    return {};
  }

  Result<std::unique_ptr<Driver>> Fork() override {
    return std::unique_ptr<Driver>(new PathDriver(s_));
  }
  std::optional<WireStats> counters() const override { return std::nullopt; }
  bool client_cache() const override { return true; }
  uint64_t max_io() const override { return 0; }
  Result<void> Ping(int, uint64_t, load::Histogram*) override { return Fail(ENOTSUP); }
  std::vector<std::string> notes() const override {
    std::lock_guard lock(s_->mu);
    return s_->notes;
  }

 private:
  void Note(std::string text) {
    std::lock_guard lock(s_->mu);
    for (const auto& n : s_->notes) {
      if (n == text) return;
    }
    s_->notes.push_back(std::move(text));
  }

  std::shared_ptr<Shared> s_;
};

}  // namespace

Result<std::unique_ptr<Driver>> MakePathDriver(const std::string& dir, std::string* error) {
  struct stat st;
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    *error = fmt::format("path:{}: not a directory", dir);
    return Fail(ENOTDIR);
  }
  auto s = std::make_shared<Shared>();
  s->dir = dir;
  return std::unique_ptr<Driver>(new PathDriver(std::move(s)));
}

}  // namespace nfsx::bench
