#include "vfs/local/local_fs.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <array>
#include <cstddef>
#include <cstring>
#include <optional>
#include <string>
#include <utility>

#include "vfs/local/local_open_file.h"
#include "vfs/local/local_util.h"

namespace nfsx::vfs {
namespace {

using local::EncodedHandle;
using local::KernelHandle;
using local::LocalOpenFile;
using local::ProcFdPath;
using local::UniqueFd;

constexpr int kPathFlags = O_PATH | O_NOFOLLOW | O_CLOEXEC;
// getdents64 buffer: one call's worth of entries is the most ReadDir reads
// beyond what the caller takes.
constexpr size_t kDirBufferSize = 8192;

// Immutable after construction, hence safe to share between threads. Every
// node is on the root's st_dev and mount (Adopt and DecodeHandle check), so
// st_ino alone identifies it.
class LocalNode final : public Node {
 public:
  LocalNode(UniqueFd fd, FileType type, uint64_t ino, const EncodedHandle& handle)
      : fd_(std::move(fd)), type_(type), ino_(ino), handle_(handle) {}

  FileType type() const override { return type_; }
  int fd() const { return fd_.get(); }
  uint64_t ino() const { return ino_; }
  const EncodedHandle& handle() const { return handle_; }

 private:
  const UniqueFd fd_;  // O_PATH
  const FileType type_;
  const uint64_t ino_;
  const EncodedHandle handle_;
};

// Nodes passed to a LocalFs always come from that LocalFs.
LocalNode& AsLocal(Node& node) { return static_cast<LocalNode&>(node); }
const LocalNode& AsLocal(const Node& node) { return static_cast<const LocalNode&>(node); }

// A file with no links left has been removed; open descriptors (ours or
// anyone's) keep it alive, but the VFS contract calls it stale.
bool Removed(int fd) {
  struct stat st;
  return ::fstat(fd, &st) == 0 && st.st_nlink == 0;
}

Result<struct stat> LiveStat(const LocalNode& node) {
  struct stat st;
  if (::fstat(node.fd(), &st) < 0) return FailErrno();
  if (st.st_nlink == 0) return Fail(ESTALE);
  return st;
}

// The error of a failed call that resolved names in `a` (and `b`). The kernel
// reports a removed directory as ENOENT; the VFS contract wants ESTALE.
std::unexpected<Error> FailIn(const LocalNode& a, const LocalNode* b = nullptr) {
  int err = errno != 0 ? errno : EIO;
  if (err == ENOENT && (Removed(a.fd()) || (b != nullptr && Removed(b->fd())))) err = ESTALE;
  return Fail(err);
}

struct timespec ToKernelTime(SetAttr::Time how, const Timespec& given) {
  switch (how) {
    case SetAttr::Time::kKeep:
      return {.tv_sec = 0, .tv_nsec = UTIME_OMIT};
    case SetAttr::Time::kServerNow:
      return {.tv_sec = 0, .tv_nsec = UTIME_NOW};
    case SetAttr::Time::kGiven:
      break;
  }
  return {.tv_sec = given.sec, .tv_nsec = given.nsec};
}

class LocalFs final : public Filesystem {
 public:
  LocalFs(std::shared_ptr<LocalNode> root, UniqueFd mount_fd, dev_t dev, int mount_id,
          uint64_t fsid)
      : root_(std::move(root)),
        mount_fd_(std::move(mount_fd)),
        dev_(dev),
        mount_id_(mount_id),
        fsid_(fsid),
        euid_(::geteuid()) {}

  NodePtr Root() override { return root_; }
  uint64_t fsid() const override { return fsid_; }
  bool persistent() const override { return true; }

  size_t EncodeHandle(const Node& node, std::span<std::byte, kMaxBackendHandle> out) override {
    std::span<const std::byte> handle = AsLocal(node).handle().view();
    std::memcpy(out.data(), handle.data(), handle.size());
    return handle.size();
  }

  Result<NodePtr> DecodeHandle(std::span<const std::byte> handle) override {
    KernelHandle kh;
    if (!local::ParseHandle(handle, kh)) return Fail(EBADF);
    UniqueFd fd(::open_by_handle_at(mount_fd_.get(), kh.header(), O_PATH | O_CLOEXEC));
    if (!fd.valid()) {
      if (errno == ESTALE || errno == ENOENT) return Fail(ESTALE);
      if (errno == EINVAL) return Fail(EBADF);  // the kernel found the bytes malformed
      return FailErrno();
    }
    struct stat st;
    if (::fstat(fd.get(), &st) < 0) return FailErrno();
    // The kernel hands out removed files that are still open somewhere, and
    // directories that were removed while held; both are gone for NFS.
    if (st.st_dev != dev_ || st.st_nlink == 0) return Fail(ESTALE);
    if (st.st_ino == root_->ino()) return root_;
    std::optional<FileType> type = local::FileTypeFromMode(st.st_mode);
    if (!type) return Fail(EIO);
    // The bytes were just accepted by the kernel for this file; keep them
    // rather than paying for name_to_handle_at again.
    EncodedHandle copy;
    std::memcpy(copy.bytes.data(), handle.data(), handle.size());
    copy.size = static_cast<uint8_t>(handle.size());
    return std::make_shared<LocalNode>(std::move(fd), *type, st.st_ino, copy);
  }

  Result<Attr> GetAttr(Node& node) override {
    Result<struct stat> st = LiveStat(AsLocal(node));
    if (!st) return std::unexpected(st.error());
    return local::AttrFromStat(*st);
  }

  // Applied in the order size, owner, mode, times: chown clears set-id bits
  // (so mode comes after it) and truncate and chmod touch mtime/ctime (so
  // given times come last). Not atomic: an error leaves earlier changes done.
  Result<void> SetAttr(Node& node, const vfs::SetAttr& attr) override {
    const LocalNode& n = AsLocal(node);
    if (Result<struct stat> st = LiveStat(n); !st) return std::unexpected(st.error());
    // O_PATH descriptors refuse ftruncate, fchmod and futimens; the /proc
    // link reaches the same inode (a symlink itself, not its target).
    ProcFdPath path(n.fd());
    if (attr.size && ::truncate(path.c_str(), static_cast<off_t>(*attr.size)) < 0) {
      return FailErrno();
    }
    if (attr.uid || attr.gid) {
      uid_t uid = attr.uid ? *attr.uid : static_cast<uid_t>(-1);
      gid_t gid = attr.gid ? *attr.gid : static_cast<gid_t>(-1);
      if (::fchownat(n.fd(), "", uid, gid, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0) {
        return FailErrno();
      }
    }
    // On a symlink the kernel answers EOPNOTSUPP.
    if (attr.mode && ::chmod(path.c_str(), *attr.mode & 07777) < 0) return FailErrno();
    if (attr.atime_how != vfs::SetAttr::Time::kKeep ||
        attr.mtime_how != vfs::SetAttr::Time::kKeep) {
      // Out-of-range nanoseconds could alias UTIME_NOW/UTIME_OMIT.
      if ((attr.atime_how == vfs::SetAttr::Time::kGiven && attr.atime.nsec >= 1'000'000'000) ||
          (attr.mtime_how == vfs::SetAttr::Time::kGiven && attr.mtime.nsec >= 1'000'000'000)) {
        return Fail(EINVAL);
      }
      const struct timespec times[2] = {ToKernelTime(attr.atime_how, attr.atime),
                                        ToKernelTime(attr.mtime_how, attr.mtime)};
      if (::utimensat(AT_FDCWD, path.c_str(), times, 0) < 0) return FailErrno();
    }
    return {};
  }

  Result<NodePtr> Lookup(Node& dir, std::string_view name) override {
    const LocalNode& d = AsLocal(dir);
    std::string cname(name);
    UniqueFd fd(::openat(d.fd(), cname.c_str(), kPathFlags));
    if (!fd.valid()) return FailIn(d);
    return Adopt(std::move(fd));
  }

  Result<NodePtr> Parent(Node& dir) override {
    const LocalNode& d = AsLocal(dir);
    if (d.type() != FileType::kDirectory) return Fail(ENOTDIR);
    if (d.ino() == root_->ino()) return root_;
    // ".." of a removed directory still leads to its old parent.
    if (Result<struct stat> st = LiveStat(d); !st) return std::unexpected(st.error());
    UniqueFd fd(::openat(d.fd(), "..", O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!fd.valid()) return FailIn(d);
    return Adopt(std::move(fd));
  }

  Result<std::string> ReadLink(Node& node) override {
    const LocalNode& n = AsLocal(node);
    // readlinkat(fd, "") says ENOENT for a non-symlink; readlink(2) says EINVAL.
    if (n.type() != FileType::kSymlink) return Fail(EINVAL);
    std::string target(256, '\0');
    for (;;) {
      ssize_t len = ::readlinkat(n.fd(), "", target.data(), target.size());
      if (len < 0) return FailErrno();
      if (static_cast<size_t>(len) < target.size()) {
        target.resize(static_cast<size_t>(len));
        break;
      }
      target.resize(target.size() * 2);  // possibly truncated: retry larger
    }
    if (Removed(n.fd())) return Fail(ESTALE);
    return target;
  }

  Result<std::unique_ptr<OpenFile>> Open(Node& node, bool writable) override {
    const LocalNode& n = AsLocal(node);
    if (n.type() == FileType::kDirectory) return Fail(EISDIR);
    if (n.type() != FileType::kRegular) return Fail(EINVAL);
    const int flags = (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC;
    ProcFdPath path(n.fd());
    // O_NOATIME needs ownership or CAP_FOWNER.
    UniqueFd fd(::open(path.c_str(), flags | O_NOATIME));
    if (!fd.valid() && errno == EPERM) fd.Reset(::open(path.c_str(), flags));
    if (!fd.valid()) return FailErrno();
    if (Removed(fd.get())) return Fail(ESTALE);
    return std::unique_ptr<OpenFile>(std::make_unique<LocalOpenFile>(std::move(fd), writable));
  }

  Result<NodePtr> Create(Node& dir, std::string_view name, uint32_t mode, Owner owner,
                         bool exclusive) override {
    const LocalNode& d = AsLocal(dir);
    std::string cname(name);
    mode &= 07777;
    for (int attempt = 0;; ++attempt) {
      UniqueFd fd(::openat(d.fd(), cname.c_str(),
                           O_CREAT | O_EXCL | O_RDONLY | O_NOFOLLOW | O_CLOEXEC, mode));
      if (fd.valid()) {
        // From here on a failure leaves the new file in place, as knfsd does.
        // Reopening through /proc yields the O_PATH descriptor of exactly the
        // file we created, whatever happens to the name meanwhile.
        UniqueFd path_fd(::open(ProcFdPath(fd.get()).c_str(), O_PATH | O_CLOEXEC));
        if (!path_fd.valid()) return FailErrno();
        return FinishCreate(std::move(path_fd), FileType::kRegular, mode, owner, true);
      }
      if (errno != EEXIST || exclusive) return FailIn(d);
      Result<NodePtr> existing = Lookup(dir, name);
      if (existing) {
        // What open(O_CREAT) would say for a directory; other types are not
        // opened (a FIFO would block, a device would act), just refused.
        if ((*existing)->type() == FileType::kDirectory) return Fail(EISDIR);
        if ((*existing)->type() != FileType::kRegular) return Fail(EEXIST);
        return existing;
      }
      // ENOENT: the name went away between the two calls; create it after all.
      if (existing.error().code != ENOENT || attempt == 2) return existing;
    }
  }

  Result<NodePtr> Mkdir(Node& dir, std::string_view name, uint32_t mode, Owner owner) override {
    const LocalNode& d = AsLocal(dir);
    std::string cname(name);
    if (::mkdirat(d.fd(), cname.c_str(), mode & 07777) < 0) return FailIn(d);
    return FinishCreateAt(d, cname, FileType::kDirectory, mode & 07777, owner);
  }

  Result<NodePtr> Symlink(Node& dir, std::string_view name, std::string_view target,
                          Owner owner) override {
    const LocalNode& d = AsLocal(dir);
    // A NUL would silently truncate the target.
    if (target.find('\0') != std::string_view::npos) return Fail(EINVAL);
    std::string cname(name);
    std::string ctarget(target);
    if (::symlinkat(ctarget.c_str(), d.fd(), cname.c_str()) < 0) return FailIn(d);
    return FinishCreateAt(d, cname, FileType::kSymlink, std::nullopt, owner);
  }

  Result<NodePtr> Mknod(Node& dir, std::string_view name, FileType type, uint32_t mode,
                        uint32_t major, uint32_t minor, Owner owner) override {
    const LocalNode& d = AsLocal(dir);
    std::optional<mode_t> format = local::SpecialFileFormat(type);
    if (!format) return Fail(EINVAL);
    const dev_t dev = (*format == S_IFCHR || *format == S_IFBLK) ? makedev(major, minor) : 0;
    std::string cname(name);
    if (::mknodat(d.fd(), cname.c_str(), *format | (mode & 07777), dev) < 0) return FailIn(d);
    return FinishCreateAt(d, cname, type, mode & 07777, owner);
  }

  Result<void> Remove(Node& dir, std::string_view name) override {
    return UnlinkAt(AsLocal(dir), name, 0);  // EISDIR for a directory
  }

  Result<void> Rmdir(Node& dir, std::string_view name) override {
    return UnlinkAt(AsLocal(dir), name, AT_REMOVEDIR);
  }

  Result<void> Rename(Node& from_dir, std::string_view from_name, Node& to_dir,
                      std::string_view to_name) override {
    const LocalNode& from = AsLocal(from_dir);
    const LocalNode& to = AsLocal(to_dir);
    std::string cfrom(from_name);
    std::string cto(to_name);
    if (::renameat(from.fd(), cfrom.c_str(), to.fd(), cto.c_str()) < 0) return FailIn(from, &to);
    return {};
  }

  Result<void> Link(Node& file, Node& dir, std::string_view name) override {
    const LocalNode& f = AsLocal(file);
    const LocalNode& d = AsLocal(dir);
    std::string cname(name);
    if (::linkat(f.fd(), "", d.fd(), cname.c_str(), AT_EMPTY_PATH) == 0) return {};
    // Without CAP_DAC_READ_SEARCH (older kernels) AT_EMPTY_PATH fails with
    // ENOENT; the /proc link needs no capability.
    if (errno == ENOENT && ::linkat(AT_FDCWD, ProcFdPath(f.fd()).c_str(), d.fd(), cname.c_str(),
                                    AT_SYMLINK_FOLLOW) == 0) {
      return {};
    }
    return FailIn(d, &f);
  }

  // Cookies are the d_off values of getdents64: for ext4 (and knfsd) these
  // are hash positions that stay valid while other entries come and go.
  Result<bool> ReadDir(Node& dir, uint64_t cookie,
                       const std::function<bool(const DirEntry&)>& emit) override {
    const LocalNode& d = AsLocal(dir);
    UniqueFd fd(::openat(d.fd(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd.valid()) return FailIn(d);
    if (cookie != 0 && ::lseek(fd.get(), static_cast<off_t>(cookie), SEEK_SET) < 0) {
      return FailErrno();
    }
    const bool at_root = d.ino() == root_->ino();
    alignas(8) std::array<std::byte, kDirBufferSize> buf;
    for (;;) {
      ssize_t got = ::getdents64(fd.get(), buf.data(), buf.size());
      if (got < 0) return FailIn(d);  // ENOENT: directory removed
      if (got == 0) return true;
      for (size_t pos = 0; pos < static_cast<size_t>(got);) {
        // struct dirent64 mirrors the kernel's linux_dirent64; copy the fixed
        // fields out rather than aliasing the buffer.
        uint64_t ino;
        int64_t off;
        uint16_t reclen;
        std::memcpy(&ino, &buf[pos + offsetof(struct dirent64, d_ino)], sizeof(ino));
        std::memcpy(&off, &buf[pos + offsetof(struct dirent64, d_off)], sizeof(off));
        std::memcpy(&reclen, &buf[pos + offsetof(struct dirent64, d_reclen)], sizeof(reclen));
        if (reclen <= offsetof(struct dirent64, d_name) ||
            pos + reclen > static_cast<size_t>(got)) {
          return Fail(EIO);  // a malformed record would make us loop or overrun
        }
        const size_t name_at = pos + offsetof(struct dirent64, d_name);
        const char* name_ptr = reinterpret_cast<const char*>(&buf[name_at]);
        std::string_view entry_name(name_ptr, ::strnlen(name_ptr, pos + reclen - name_at));
        DirEntry entry{.name = entry_name, .fileid = ino, .cookie = static_cast<uint64_t>(off)};
        // The root's ".." is outside the export; NFS shows the root instead.
        if (at_root && entry_name == "..") entry.fileid = root_->ino();
        if (!emit(entry)) return false;
        pos += reclen;
      }
    }
  }

  Result<FsStat> StatFs(Node& node) override {
    const LocalNode& n = AsLocal(node);
    if (Result<struct stat> st = LiveStat(n); !st) return std::unexpected(st.error());
    struct statvfs sv;
    if (::fstatvfs(n.fd(), &sv) < 0) return FailErrno();
    const uint64_t unit = sv.f_frsize != 0 ? sv.f_frsize : sv.f_bsize;
    return FsStat{.total_bytes = sv.f_blocks * unit,
                  .free_bytes = sv.f_bfree * unit,
                  .avail_bytes = sv.f_bavail * unit,
                  .total_files = sv.f_files,
                  .free_files = sv.f_ffree,
                  .avail_files = sv.f_favail};
  }

  Result<void> SyncDir(Node& dir) override {
    const LocalNode& d = AsLocal(dir);
    UniqueFd fd(::openat(d.fd(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd.valid()) return FailIn(d);
    if (::fsync(fd.get()) < 0) return FailErrno();
    return {};
  }

 private:
  // Wraps a descriptor just opened below the root as a Node.
  Result<NodePtr> Adopt(UniqueFd fd) {
    struct stat st;
    if (::fstat(fd.get(), &st) < 0) return FailErrno();
    return Adopt(std::move(fd), st);
  }

  Result<NodePtr> Adopt(UniqueFd fd, const struct stat& st) {
    if (st.st_dev != dev_) return Fail(EXDEV);  // another filesystem mounted here
    if (st.st_ino == root_->ino()) return root_;
    std::optional<FileType> type = local::FileTypeFromMode(st.st_mode);
    if (!type) return Fail(EIO);
    int mount_id = -1;
    Result<EncodedHandle> handle = local::HandleOfFd(fd.get(), &mount_id);
    if (!handle) return std::unexpected(handle.error());
    // A bind mount of the same filesystem keeps st_dev but is still a mount.
    if (mount_id != mount_id_) return Fail(EXDEV);
    return std::make_shared<LocalNode>(std::move(fd), *type, st.st_ino, *handle);
  }

  Result<void> UnlinkAt(const LocalNode& dir, std::string_view name, int flags) {
    std::string cname(name);
    if (::unlinkat(dir.fd(), cname.c_str(), flags) < 0) return FailIn(dir);
    return {};
  }

  // Gives a new object its owner and exact mode (no umask, no default ACL, no
  // inherited set-gid). `verified`: path_fd is known to be the object we
  // created. Otherwise the name was opened again after creating it, and
  // another process may have swapped in its own object meanwhile; ownership
  // and mode are then only changed if it still looks like ours (our euid, the
  // type we made, no other links), so we never chown someone else's file.
  Result<NodePtr> FinishCreate(UniqueFd path_fd, FileType type, std::optional<uint32_t> mode,
                               Owner owner, bool verified) {
    struct stat st;
    if (::fstat(path_fd.get(), &st) < 0) return FailErrno();
    const bool ours =
        verified || (local::FileTypeFromMode(st.st_mode) == type && st.st_uid == euid_ &&
                     (type == FileType::kDirectory || st.st_nlink == 1));
    // Only root can give files away; otherwise they keep the server's ids.
    if (ours && euid_ == 0 && (st.st_uid != owner.uid || st.st_gid != owner.gid)) {
      if (::fchownat(path_fd.get(), "", owner.uid, owner.gid, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) <
          0) {
        return FailErrno();
      }
      if (::fstat(path_fd.get(), &st) < 0) return FailErrno();  // chown may clear set-id bits
    }
    if (ours && mode && (st.st_mode & 07777) != *mode &&
        ::chmod(ProcFdPath(path_fd.get()).c_str(), *mode) < 0) {
      return FailErrno();
    }
    return Adopt(std::move(path_fd), st);
  }

  Result<NodePtr> FinishCreateAt(const LocalNode& dir, const std::string& name, FileType type,
                                 std::optional<uint32_t> mode, Owner owner) {
    UniqueFd fd(::openat(dir.fd(), name.c_str(), kPathFlags));
    if (!fd.valid()) return FailIn(dir);
    return FinishCreate(std::move(fd), type, mode, owner, false);
  }

  const std::shared_ptr<LocalNode> root_;
  // A readable descriptor of the root: open_by_handle_at() rejects O_PATH ones.
  const UniqueFd mount_fd_;
  const dev_t dev_;
  const int mount_id_;
  const uint64_t fsid_;
  const uid_t euid_;
};

}  // namespace

Result<std::unique_ptr<Filesystem>> MakeLocalFs(const std::string& root) {
  UniqueFd path_fd(::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!path_fd.valid()) return FailErrno();
  // Opening through /proc also proves that /proc is mounted, which Open and
  // SetAttr depend on.
  UniqueFd mount_fd(::open(ProcFdPath(path_fd.get()).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!mount_fd.valid()) return FailErrno();
  struct stat st;
  if (::fstat(path_fd.get(), &st) < 0) return FailErrno();

  int mount_id = -1;
  Result<EncodedHandle> handle = local::HandleOfFd(path_fd.get(), &mount_id);
  if (!handle) return std::unexpected(handle.error());  // EOPNOTSUPP or EOVERFLOW
  // Decoding needs CAP_DAC_READ_SEARCH: find out now, not on the first request.
  KernelHandle kh;
  local::ParseHandle(handle->view(), kh);
  UniqueFd probe(::open_by_handle_at(mount_fd.get(), kh.header(), O_PATH | O_CLOEXEC));
  if (!probe.valid()) return FailErrno();
  struct stat probe_st;
  if (::fstat(probe.get(), &probe_st) < 0) return FailErrno();
  if (probe_st.st_dev != st.st_dev || probe_st.st_ino != st.st_ino) return Fail(ESTALE);

  // f_fsid comes from the filesystem (ext4: its UUID) and, unlike st_dev,
  // does not change when devices are enumerated in another order.
  struct statfs sfs;
  if (::fstatfs(path_fd.get(), &sfs) < 0) return FailErrno();
  uint64_t fsid = 0;
  static_assert(sizeof(sfs.f_fsid) == sizeof(fsid));
  std::memcpy(&fsid, &sfs.f_fsid, sizeof(fsid));
  if (fsid == 0) fsid = st.st_dev;  // a filesystem that reports none

  auto root_node =
      std::make_shared<LocalNode>(std::move(path_fd), FileType::kDirectory, st.st_ino, *handle);
  return std::unique_ptr<Filesystem>(std::make_unique<LocalFs>(
      std::move(root_node), std::move(mount_fd), st.st_dev, mount_id, fsid));
}

}  // namespace nfsx::vfs
