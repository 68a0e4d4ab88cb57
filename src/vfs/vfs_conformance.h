// The vfs.h contract as one parameterised GoogleTest suite, so that every backend is held to
// the same behaviour and the NFS server can rely on it without knowing which backend it has.
//
// A backend's test instantiates it in one line, inside namespace nfsx::vfs (GoogleTest needs
// the suite's unqualified name):
//
//   NFSX_INSTANTIATE_VFS_CONFORMANCE(Memory, VfsFactory{"memory", [] { return MakeMemoryFs(); }});
//
// Include this header in exactly one .cc file of a test binary: the TEST_P definitions below
// are not inline. Instantiate as many factories as you like there.
//
// The factory is called once per test and must return a new, empty filesystem (nothing in
// its root). Tests may change ownership to arbitrary ids, so a backend that needs privileges
// for that (LocalFs) must run as root. Nothing depends on timing or on the host clock's
// resolution: timestamps are only compared with each other.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <ostream>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "vfs/vfs.h"

namespace nfsx::vfs {

// Makes the filesystem under test. `name` becomes part of the test names ([A-Za-z0-9_]).
struct VfsFactory {
  std::string name;
  std::function<std::unique_ptr<Filesystem>()> make;
};

inline void PrintTo(const VfsFactory& factory, std::ostream* os) { *os << factory.name; }

// Readable timestamps in failure messages.
inline void PrintTo(const Timespec& t, std::ostream* os) {
  *os << t.sec << "." << std::string(9 - std::min<size_t>(9, std::to_string(t.nsec).size()), '0')
      << t.nsec;
}

inline std::string VfsFactoryName(const ::testing::TestParamInfo<VfsFactory>& info) {
  return info.param.name;
}

namespace conformance {

// "ENOENT" rather than 2 in failure messages.
inline std::string ErrnoName(int code) {
  const char* name = strerrorname_np(code);
  return name != nullptr ? std::string(name) : "errno " + std::to_string(code);
}

// What a call came to: "success" or the errno's name; compared against ErrnoName(expected).
template <class T>
std::string Outcome(const Result<T>& r) {
  return r.has_value() ? std::string("success") : ErrnoName(r.error().code);
}

inline std::span<const std::byte> AsBytes(std::string_view s) {
  return std::as_bytes(std::span<const char>(s.data(), s.size()));
}

inline std::string AsString(std::span<const std::byte> b) {
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

// Deterministic, position-dependent bytes: a misplaced or stale block cannot pass for the
// right one.
inline std::string Pattern(uint64_t seed, size_t size) {
  std::string out(size, '\0');
  uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
  for (size_t i = 0; i < size; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    out[i] = static_cast<char>(x >> 56);
  }
  return out;
}

// One directory entry as listed, with the name copied out of the callback.
struct Listed {
  std::string name;
  uint64_t fileid = 0;
  uint64_t cookie = 0;
};

inline std::vector<std::string> NamesOf(const std::vector<Listed>& entries) {
  std::vector<std::string> names;
  for (const Listed& e : entries) names.push_back(e.name);
  return names;
}

}  // namespace conformance

#define NFSX_VFS_CONCAT_INNER(a, b) a##b
#define NFSX_VFS_CONCAT(a, b) NFSX_VFS_CONCAT_INNER(a, b)

// Asserts that a Result-returning expression succeeded.
#define VFS_ASSERT_OK(expr)                                                                  \
  do {                                                                                       \
    const auto& nfsx_vfs_result = (expr);                                                    \
    ASSERT_TRUE(nfsx_vfs_result.has_value())                                                 \
        << #expr                                                                             \
        << " failed: " << ::nfsx::vfs::conformance::ErrnoName(nfsx_vfs_result.error().code); \
  } while (0)

// `lhs = *expr`, asserting that expr succeeded. Declares a temporary; one per line.
#define VFS_ASSERT_OK_AND_ASSIGN(lhs, expr) \
  NFSX_VFS_ASSIGN_IMPL(NFSX_VFS_CONCAT(nfsx_vfs_result_, __LINE__), lhs, expr)
#define NFSX_VFS_ASSIGN_IMPL(tmp, lhs, expr)                                             \
  auto tmp = (expr);                                                                     \
  ASSERT_TRUE(tmp.has_value()) << #expr << " failed: "                                   \
                               << ::nfsx::vfs::conformance::ErrnoName(tmp.error().code); \
  lhs = *std::move(tmp)

// Expects a Result-returning expression to fail with `code`.
#define VFS_EXPECT_ERRNO(expr, code)                                                            \
  EXPECT_EQ(::nfsx::vfs::conformance::Outcome(expr), ::nfsx::vfs::conformance::ErrnoName(code)) \
      << #expr

// Instantiates the suite for one or more VfsFactory values. Use inside namespace nfsx::vfs.
#define NFSX_INSTANTIATE_VFS_CONFORMANCE(prefix, ...)                                  \
  INSTANTIATE_TEST_SUITE_P(prefix, VfsConformanceTest, ::testing::Values(__VA_ARGS__), \
                           ::nfsx::vfs::VfsFactoryName)

class VfsConformanceTest : public ::testing::TestWithParam<VfsFactory> {
 protected:
  using Listed = conformance::Listed;

  void SetUp() override {
    ASSERT_TRUE(GetParam().make) << "factory " << GetParam().name << " has no function";
    fs_ = GetParam().make();
    ASSERT_NE(fs_, nullptr) << "factory " << GetParam().name << " made no filesystem";
    root_ = fs_->Root();
    ASSERT_NE(root_, nullptr);
  }

  void TearDown() override {
    root_.reset();
    fs_.reset();
  }

  // Attributes of `node`, or a recorded failure and default attributes.
  Attr AttrOf(Node& node) {
    Result<Attr> attr = fs_->GetAttr(node);
    if (!attr) {
      ADD_FAILURE() << "GetAttr failed: " << conformance::ErrnoName(attr.error().code);
      return Attr{};
    }
    return *attr;
  }

  uint64_t FileIdOf(Node& node) { return AttrOf(node).fileid; }

  std::vector<std::byte> HandleOf(const Node& node) {
    std::array<std::byte, kMaxBackendHandle> buf{};
    const size_t n = fs_->EncodeHandle(node, buf);
    EXPECT_GT(n, 0u);
    EXPECT_LE(n, kMaxBackendHandle);
    return std::vector<std::byte>(buf.begin(), buf.begin() + std::min(n, kMaxBackendHandle));
  }

  // Writes all of `data` at `offset` through a fresh OpenFile, closing it.
  Result<void> WriteFile(Node& node, uint64_t offset, std::string_view data) {
    Result<std::unique_ptr<OpenFile>> file = fs_->Open(node, true);
    if (!file) return std::unexpected(file.error());
    size_t done = 0;
    while (done < data.size()) {
      Result<size_t> n = (*file)->Write(offset + done, conformance::AsBytes(data.substr(done)));
      if (!n) return std::unexpected(n.error());
      if (*n == 0) return Fail(EIO);  // a write that makes no progress is broken
      done += *n;
    }
    return (*file)->Close();
  }

  // Reads up to `len` bytes at `offset` (fewer only at end of file), closing the file.
  Result<std::string> ReadFile(Node& node, uint64_t offset, size_t len) {
    Result<std::unique_ptr<OpenFile>> file = fs_->Open(node, false);
    if (!file) return std::unexpected(file.error());
    std::string out(len, '\0');
    size_t done = 0;
    while (done < len) {
      auto dest = std::as_writable_bytes(std::span<char>(out.data() + done, len - done));
      Result<size_t> n = (*file)->Read(offset + done, dest);
      if (!n) return std::unexpected(n.error());
      if (*n == 0) break;
      done += *n;
    }
    out.resize(done);
    Result<void> closed = (*file)->Close();
    if (!closed) return std::unexpected(closed.error());
    return out;
  }

  // The whole file.
  Result<std::string> ReadWhole(Node& node) {
    Result<Attr> attr = fs_->GetAttr(node);
    if (!attr) return std::unexpected(attr.error());
    return ReadFile(node, 0, static_cast<size_t>(attr->size) + 1);
  }

  // Lists `dir` after `cookie` to the end in one call.
  void ListFrom(Node& dir, uint64_t cookie, std::vector<Listed>* out) {
    out->clear();
    Result<bool> eof = fs_->ReadDir(dir, cookie, [&](const DirEntry& e) {
      out->push_back(Listed{std::string(e.name), e.fileid, e.cookie});
      return true;
    });
    ASSERT_TRUE(eof.has_value()) << "ReadDir failed: " << conformance::ErrnoName(eof.error().code);
    EXPECT_TRUE(*eof) << "emit took every entry, so the listing must reach the end";
  }

  // Lists `dir` in pages of `page` entries the way the server fills a size-limited reply:
  // emit refuses the first entry that does not fit, and the next call resumes after the
  // last accepted entry's cookie. `between` runs between pages with everything listed so far.
  void ListPaged(Node& dir, size_t page, std::vector<Listed>* out,
                 const std::function<void(const std::vector<Listed>&)>& between = nullptr) {
    out->clear();
    uint64_t cookie = 0;
    for (int call = 0;; ++call) {
      ASSERT_LT(call, 100000) << "ReadDir never reached the end";
      size_t taken = 0;
      Result<bool> eof = fs_->ReadDir(dir, cookie, [&](const DirEntry& e) {
        if (taken == page) return false;
        ++taken;
        out->push_back(Listed{std::string(e.name), e.fileid, e.cookie});
        return true;
      });
      ASSERT_TRUE(eof.has_value())
          << "ReadDir failed: " << conformance::ErrnoName(eof.error().code);
      if (*eof) return;
      // ReadDir stops early only when emit says so, which it does only with a full page.
      ASSERT_EQ(taken, page) << "ReadDir stopped before the end without being told to";
      cookie = out->back().cookie;
      if (between) {
        between(*out);
        if (HasFatalFailure()) return;
      }
    }
  }

  std::unique_ptr<Filesystem> fs_;
  NodePtr root_;
};

// ---------------------------------------------------------------------------------------------
// Root, fsid, handles

TEST_P(VfsConformanceTest, RootIsADirectoryThatIsItsOwnParent) {
  EXPECT_EQ(root_->type(), FileType::kDirectory);
  const Attr attr = AttrOf(*root_);
  EXPECT_EQ(attr.type, FileType::kDirectory);
  EXPECT_GE(attr.nlink, 2u);
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr parent, fs_->Parent(*root_));
  EXPECT_EQ(FileIdOf(*parent), attr.fileid);
  EXPECT_EQ(FileIdOf(*fs_->Root()), attr.fileid);
  EXPECT_EQ(fs_->fsid(), fs_->fsid());
}

TEST_P(VfsConformanceTest, HandlesRoundTripForEveryType) {
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr dir, fs_->Mkdir(*root_, "d", 0755, {}));
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr file, fs_->Create(*dir, "f", 0644, {}, true));
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr link, fs_->Symlink(*dir, "l", "f", {}));
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr fifo, fs_->Mknod(*dir, "p", FileType::kFifo, 0600, 0, 0, {}));
  for (const NodePtr& node : {root_, dir, file, link, fifo}) {
    const std::vector<std::byte> handle = HandleOf(*node);
    VFS_ASSERT_OK_AND_ASSIGN(NodePtr decoded, fs_->DecodeHandle(handle));
    EXPECT_EQ(decoded->type(), node->type());
    EXPECT_EQ(FileIdOf(*decoded), FileIdOf(*node));
    EXPECT_EQ(HandleOf(*decoded), handle) << "a file's handle must not change";
  }
  EXPECT_NE(HandleOf(*file), HandleOf(*dir));
}

TEST_P(VfsConformanceTest, HandleSurvivesRename) {
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr a, fs_->Mkdir(*root_, "a", 0755, {}));
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr b, fs_->Mkdir(*root_, "b", 0755, {}));
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr file, fs_->Create(*a, "f", 0644, {}, true));
  VFS_ASSERT_OK(WriteFile(*file, 0, "data"));
  const std::vector<std::byte> handle = HandleOf(*file);
  VFS_ASSERT_OK(fs_->Rename(*a, "f", *b, "g"));
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr decoded, fs_->DecodeHandle(handle));
  EXPECT_EQ(FileIdOf(*decoded), FileIdOf(*file));
  EXPECT_EQ(ReadWhole(*decoded).value_or("<error>"), "data");
}

TEST_P(VfsConformanceTest, HandleOfRemovedObjectIsStale) {
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr file, fs_->Create(*root_, "f", 0644, {}, true));
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr dir, fs_->Mkdir(*root_, "d", 0755, {}));
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr link, fs_->Symlink(*root_, "l", "f", {}));
  const std::vector<std::byte> file_handle = HandleOf(*file);
  const std::vector<std::byte> dir_handle = HandleOf(*dir);
  const std::vector<std::byte> link_handle = HandleOf(*link);
  VFS_ASSERT_OK(fs_->Remove(*root_, "f"));
  VFS_ASSERT_OK(fs_->Rmdir(*root_, "d"));
  VFS_ASSERT_OK(fs_->Remove(*root_, "l"));
  VFS_EXPECT_ERRNO(fs_->DecodeHandle(file_handle), ESTALE);
  VFS_EXPECT_ERRNO(fs_->DecodeHandle(dir_handle), ESTALE);
  VFS_EXPECT_ERRNO(fs_->DecodeHandle(link_handle), ESTALE);
  // Nodes held across the removal go stale too.
  VFS_EXPECT_ERRNO(fs_->GetAttr(*file), ESTALE);
  VFS_EXPECT_ERRNO(fs_->GetAttr(*dir), ESTALE);
  VFS_EXPECT_ERRNO(fs_->GetAttr(*link), ESTALE);
  VFS_EXPECT_ERRNO(fs_->Lookup(*dir, "x"), ESTALE);
  VFS_EXPECT_ERRNO(fs_->Create(*dir, "x", 0644, {}, true), ESTALE);
  // A new file with the old name is a different file.
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr again, fs_->Create(*root_, "f", 0644, {}, true));
  EXPECT_NE(HandleOf(*again), file_handle);
  VFS_EXPECT_ERRNO(fs_->DecodeHandle(file_handle), ESTALE);
}

TEST_P(VfsConformanceTest, HandleLivesWhileAnyLinkRemains) {
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr file, fs_->Create(*root_, "a", 0644, {}, true));
  VFS_ASSERT_OK(fs_->Link(*file, *root_, "b"));
  const std::vector<std::byte> handle = HandleOf(*file);
  VFS_ASSERT_OK(fs_->Remove(*root_, "a"));
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr decoded, fs_->DecodeHandle(handle));
  EXPECT_EQ(FileIdOf(*decoded), FileIdOf(*file));
  VFS_ASSERT_OK(fs_->Remove(*root_, "b"));
  VFS_EXPECT_ERRNO(fs_->DecodeHandle(handle), ESTALE);
}

TEST_P(VfsConformanceTest, MalformedHandleIsEBADF) {
  VFS_EXPECT_ERRNO(fs_->DecodeHandle({}), EBADF);
  const std::array<std::byte, 1> one{std::byte{0x42}};
  VFS_EXPECT_ERRNO(fs_->DecodeHandle(one), EBADF);
  std::array<std::byte, kMaxBackendHandle + 1> too_long;
  too_long.fill(std::byte{0xff});
  VFS_EXPECT_ERRNO(fs_->DecodeHandle(too_long), EBADF);
}

// ---------------------------------------------------------------------------------------------
// Create, Lookup

TEST_P(VfsConformanceTest, CreateReportsAttributes) {
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr file, fs_->Create(*root_, "f", 0640, {1234, 5678}, true));
  EXPECT_EQ(file->type(), FileType::kRegular);
  const Attr attr = AttrOf(*file);
  EXPECT_EQ(attr.type, FileType::kRegular);
  EXPECT_EQ(attr.mode, 0640u) << "mode must be exactly as given (no umask, no type bits)";
  EXPECT_EQ(attr.nlink, 1u);
  EXPECT_EQ(attr.uid, 1234u);
  EXPECT_EQ(attr.gid, 5678u);
  EXPECT_EQ(attr.size, 0u);
  EXPECT_NE(attr.fileid, FileIdOf(*root_));
  EXPECT_GT(attr.atime, Timespec{}) << "atime is set on create";
  EXPECT_GT(attr.mtime, Timespec{});
  EXPECT_GT(attr.ctime, Timespec{});

  VFS_ASSERT_OK_AND_ASSIGN(NodePtr found, fs_->Lookup(*root_, "f"));
  EXPECT_EQ(found->type(), FileType::kRegular);
  EXPECT_EQ(FileIdOf(*found), attr.fileid);
}

TEST_P(VfsConformanceTest, CreateExclusiveFailsIfNameExists) {
  VFS_ASSERT_OK(fs_->Create(*root_, "f", 0644, {}, true));
  VFS_ASSERT_OK(fs_->Mkdir(*root_, "d", 0755, {}));
  VFS_ASSERT_OK(fs_->Symlink(*root_, "l", "f", {}));
  VFS_EXPECT_ERRNO(fs_->Create(*root_, "f", 0644, {}, true), EEXIST);
  VFS_EXPECT_ERRNO(fs_->Create(*root_, "d", 0644, {}, true), EEXIST);
  VFS_EXPECT_ERRNO(fs_->Create(*root_, "l", 0644, {}, true), EEXIST);
}

TEST_P(VfsConformanceTest, CreateUncheckedReturnsExistingFileUnchanged) {
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr file, fs_->Create(*root_, "f", 0600, {7, 8}, true));
  VFS_ASSERT_OK(WriteFile(*file, 0, "hello"));
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr again, fs_->Create(*root_, "f", 0777, {9, 9}, false));
  const Attr attr = AttrOf(*again);
  EXPECT_EQ(attr.fileid, FileIdOf(*file));
  EXPECT_EQ(attr.size, 5u) << "an unchecked create must not truncate";
  EXPECT_EQ(attr.mode, 0600u);
  EXPECT_EQ(attr.uid, 7u);
  EXPECT_EQ(ReadWhole(*again).value_or("<error>"), "hello");
}

TEST_P(VfsConformanceTest, CreateUncheckedOnDirectoryIsEISDIR) {
  VFS_ASSERT_OK(fs_->Mkdir(*root_, "d", 0755, {}));
  VFS_EXPECT_ERRNO(fs_->Create(*root_, "d", 0644, {}, false), EISDIR);
}

TEST_P(VfsConformanceTest, LookupOfMissingNameIsENOENT) {
  VFS_EXPECT_ERRNO(fs_->Lookup(*root_, "nope"), ENOENT);
  VFS_ASSERT_OK(fs_->Create(*root_, "f", 0644, {}, true));
  VFS_ASSERT_OK(fs_->Remove(*root_, "f"));
  VFS_EXPECT_ERRNO(fs_->Lookup(*root_, "f"), ENOENT);
}

TEST_P(VfsConformanceTest, LookupDoesNotFollowSymlinks) {
  VFS_ASSERT_OK(fs_->Mkdir(*root_, "d", 0755, {}));
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr link, fs_->Symlink(*root_, "l", "d", {}));
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr found, fs_->Lookup(*root_, "l"));
  EXPECT_EQ(found->type(), FileType::kSymlink);
  EXPECT_EQ(AttrOf(*found).type, FileType::kSymlink);
  EXPECT_EQ(FileIdOf(*found), FileIdOf(*link));
}

TEST_P(VfsConformanceTest, DirectoryOperationsOnNonDirectoryAreENOTDIR) {
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr file, fs_->Create(*root_, "f", 0644, {}, true));
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr other, fs_->Create(*root_, "g", 0644, {}, true));
  VFS_EXPECT_ERRNO(fs_->Lookup(*file, "x"), ENOTDIR);
  VFS_EXPECT_ERRNO(fs_->Parent(*file), ENOTDIR);
  VFS_EXPECT_ERRNO(fs_->Create(*file, "x", 0644, {}, true), ENOTDIR);
  VFS_EXPECT_ERRNO(fs_->Mkdir(*file, "x", 0755, {}), ENOTDIR);
  VFS_EXPECT_ERRNO(fs_->Symlink(*file, "x", "y", {}), ENOTDIR);
  VFS_EXPECT_ERRNO(fs_->Mknod(*file, "x", FileType::kFifo, 0644, 0, 0, {}), ENOTDIR);
  VFS_EXPECT_ERRNO(fs_->Remove(*file, "x"), ENOTDIR);
  VFS_EXPECT_ERRNO(fs_->Rmdir(*file, "x"), ENOTDIR);
  VFS_EXPECT_ERRNO(fs_->Rename(*file, "x", *root_, "y"), ENOTDIR);
  VFS_EXPECT_ERRNO(fs_->Rename(*root_, "g", *file, "y"), ENOTDIR);
  VFS_EXPECT_ERRNO(fs_->Link(*other, *file, "y"), ENOTDIR);
  VFS_EXPECT_ERRNO(fs_->ReadDir(*file, 0, [](const DirEntry&) { return true; }), ENOTDIR);
}

// ---------------------------------------------------------------------------------------------
// Directories

TEST_P(VfsConformanceTest, MkdirCountsLinks) {
  const uint32_t root_links = AttrOf(*root_).nlink;
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr a, fs_->Mkdir(*root_, "a", 0750, {}));
  EXPECT_EQ(a->type(), FileType::kDirectory);
  Attr attr = AttrOf(*a);
  EXPECT_EQ(attr.type, FileType::kDirectory);
  EXPECT_EQ(attr.mode, 0750u);
  EXPECT_EQ(attr.nlink, 2u);
  EXPECT_EQ(AttrOf(*root_).nlink, root_links + 1);

  VFS_ASSERT_OK_AND_ASSIGN(NodePtr b, fs_->Mkdir(*a, "b", 0755, {}));
  VFS_ASSERT_OK(fs_->Mkdir(*a, "c", 0755, {}));
  VFS_ASSERT_OK(fs_->Create(*a, "f", 0644, {}, true));
  VFS_ASSERT_OK(fs_->Symlink(*a, "l", "b", {}));
  EXPECT_EQ(AttrOf(*a).nlink, 4u) << "2 + one per subdirectory; files do not count";
  EXPECT_EQ(AttrOf(*root_).nlink, root_links + 1);

  VFS_ASSERT_OK_AND_ASSIGN(NodePtr b_parent, fs_->Parent(*b));
  EXPECT_EQ(FileIdOf(*b_parent), FileIdOf(*a));
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr a_parent, fs_->Parent(*a));
  EXPECT_EQ(FileIdOf(*a_parent), FileIdOf(*root_));

  VFS_EXPECT_ERRNO(fs_->Mkdir(*root_, "a", 0755, {}), EEXIST);
  VFS_EXPECT_ERRNO(fs_->Mkdir(*a, "f", 0755, {}), EEXIST);

  VFS_ASSERT_OK(fs_->Rmdir(*a, "b"));
  EXPECT_EQ(AttrOf(*a).nlink, 3u);
}

TEST_P(VfsConformanceTest, RemoveDeletesOnlyNonDirectories) {
  VFS_ASSERT_OK(fs_->Create(*root_, "f", 0644, {}, true));
  VFS_ASSERT_OK(fs_->Mkdir(*root_, "d", 0755, {}));
  VFS_ASSERT_OK(fs_->Symlink(*root_, "l", "f", {}));
  VFS_ASSERT_OK(fs_->Mknod(*root_, "p", FileType::kFifo, 0644, 0, 0, {}));
  VFS_EXPECT_ERRNO(fs_->Remove(*root_, "d"), EISDIR);
  VFS_ASSERT_OK(fs_->Lookup(*root_, "d"));
  VFS_EXPECT_ERRNO(fs_->Remove(*root_, "missing"), ENOENT);
  for (const char* name : {"f", "l", "p"}) {
    VFS_ASSERT_OK(fs_->Remove(*root_, name));
    VFS_EXPECT_ERRNO(fs_->Lookup(*root_, name), ENOENT);
    VFS_EXPECT_ERRNO(fs_->Remove(*root_, name), ENOENT);
  }
}

TEST_P(VfsConformanceTest, RemovingOneLinkKeepsTheFile) {
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr file, fs_->Create(*root_, "a", 0644, {}, true));
  VFS_ASSERT_OK(WriteFile(*file, 0, "shared"));
  VFS_ASSERT_OK(fs_->Link(*file, *root_, "b"));
  EXPECT_EQ(AttrOf(*file).nlink, 2u);
  const Timespec ctime = AttrOf(*file).ctime;
  VFS_ASSERT_OK(fs_->Remove(*root_, "a"));
  const Attr attr = AttrOf(*file);
  EXPECT_EQ(attr.nlink, 1u);
  EXPECT_GT(attr.ctime, ctime) << "unlink changes the remaining file's ctime";
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr b, fs_->Lookup(*root_, "b"));
  EXPECT_EQ(ReadWhole(*b).value_or("<error>"), "shared");
}

TEST_P(VfsConformanceTest, RmdirRules) {
  const uint32_t root_links = AttrOf(*root_).nlink;
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr d, fs_->Mkdir(*root_, "d", 0755, {}));
  VFS_ASSERT_OK(fs_->Create(*d, "f", 0644, {}, true));
  VFS_ASSERT_OK(fs_->Create(*root_, "file", 0644, {}, true));
  VFS_EXPECT_ERRNO(fs_->Rmdir(*root_, "d"), ENOTEMPTY);
  VFS_ASSERT_OK(fs_->Lookup(*d, "f"));
  VFS_EXPECT_ERRNO(fs_->Rmdir(*root_, "file"), ENOTDIR);
  VFS_ASSERT_OK(fs_->Lookup(*root_, "file"));
  VFS_EXPECT_ERRNO(fs_->Rmdir(*root_, "missing"), ENOENT);

  VFS_ASSERT_OK(fs_->Remove(*d, "f"));
  VFS_ASSERT_OK(fs_->Rmdir(*root_, "d"));
  VFS_EXPECT_ERRNO(fs_->Lookup(*root_, "d"), ENOENT);
  EXPECT_EQ(AttrOf(*root_).nlink, root_links);
  // A directory held across its removal is stale.
  VFS_EXPECT_ERRNO(fs_->GetAttr(*d), ESTALE);
  VFS_EXPECT_ERRNO(fs_->Parent(*d), ESTALE);
  VFS_EXPECT_ERRNO(fs_->ReadDir(*d, 0, [](const DirEntry&) { return true; }), ESTALE);
}

TEST_P(VfsConformanceTest, DirectoryTimesAdvanceOnEveryEntryChange) {
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr d, fs_->Mkdir(*root_, "d", 0755, {}));
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr e, fs_->Mkdir(*root_, "e", 0755, {}));
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr file, fs_->Create(*root_, "target", 0644, {}, true));
  // Each step changes entries of `d` (and of `e` for the cross-directory rename).
  const std::vector<std::pair<std::string, std::function<Result<void>()>>> steps = {
      {"create",
       [&]() -> Result<void> {
         auto r = fs_->Create(*d, "f", 0644, {}, true);
         if (!r) return std::unexpected(r.error());
         return {};
       }},
      {"mkdir",
       [&]() -> Result<void> {
         auto r = fs_->Mkdir(*d, "sub", 0755, {});
         if (!r) return std::unexpected(r.error());
         return {};
       }},
      {"symlink",
       [&]() -> Result<void> {
         auto r = fs_->Symlink(*d, "l", "f", {});
         if (!r) return std::unexpected(r.error());
         return {};
       }},
      {"mknod",
       [&]() -> Result<void> {
         auto r = fs_->Mknod(*d, "p", FileType::kFifo, 0644, 0, 0, {});
         if (!r) return std::unexpected(r.error());
         return {};
       }},
      {"link", [&] { return fs_->Link(*file, *d, "hard"); }},
      {"rename within", [&] { return fs_->Rename(*d, "f", *d, "f2"); }},
      {"rename out", [&] { return fs_->Rename(*d, "f2", *e, "f3"); }},
      {"remove", [&] { return fs_->Remove(*d, "l"); }},
      {"rmdir", [&] { return fs_->Rmdir(*d, "sub"); }},
  };
  for (const auto& [what, step] : steps) {
    const Attr before = AttrOf(*d);
    const Attr before_e = AttrOf(*e);
    VFS_ASSERT_OK(step());
    const Attr after = AttrOf(*d);
    EXPECT_GT(after.mtime, before.mtime) << what;
    EXPECT_GT(after.ctime, before.ctime) << what;
    if (what == "rename out") {
      EXPECT_GT(AttrOf(*e).mtime, before_e.mtime) << what;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Rename

TEST_P(VfsConformanceTest, RenameWithinDirectory) {
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr file, fs_->Create(*root_, "a", 0644, {}, true));
  VFS_ASSERT_OK(WriteFile(*file, 0, "contents"));
  const Attr before = AttrOf(*file);
  VFS_ASSERT_OK(fs_->Rename(*root_, "a", *root_, "b"));
  VFS_EXPECT_ERRNO(fs_->Lookup(*root_, "a"), ENOENT);
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr b, fs_->Lookup(*root_, "b"));
  const Attr after = AttrOf(*b);
  EXPECT_EQ(after.fileid, before.fileid);
  EXPECT_EQ(after.nlink, 1u);
  EXPECT_GT(after.ctime, before.ctime) << "rename changes the renamed file's ctime";
  EXPECT_EQ(ReadWhole(*b).value_or("<error>"), "contents");
  VFS_EXPECT_ERRNO(fs_->Rename(*root_, "a", *root_, "c"), ENOENT);
}

TEST_P(VfsConformanceTest, RenameDirectoryAcrossDirectories) {
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr from, fs_->Mkdir(*root_, "from", 0755, {}));
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr to, fs_->Mkdir(*root_, "to", 0755, {}));
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr moved, fs_->Mkdir(*from, "m", 0755, {}));
  VFS_ASSERT_OK(fs_->Create(*moved, "inside", 0644, {}, true));
  EXPECT_EQ(AttrOf(*from).nlink, 3u);
  EXPECT_EQ(AttrOf(*to).nlink, 2u);

  VFS_ASSERT_OK(fs_->Rename(*from, "m", *to, "n"));
  EXPECT_EQ(AttrOf(*from).nlink, 2u);
  EXPECT_EQ(AttrOf(*to).nlink, 3u);
  EXPECT_EQ(AttrOf(*moved).nlink, 2u);
  VFS_EXPECT_ERRNO(fs_->Lookup(*from, "m"), ENOENT);
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr n, fs_->Lookup(*to, "n"));
  EXPECT_EQ(FileIdOf(*n), FileIdOf(*moved));
  VFS_ASSERT_OK(fs_->Lookup(*n, "inside"));

  VFS_ASSERT_OK_AND_ASSIGN(NodePtr parent, fs_->Parent(*moved));
  EXPECT_EQ(FileIdOf(*parent), FileIdOf(*to));
  std::vector<Listed> entries;
  ASSERT_NO_FATAL_FAILURE(ListFrom(*moved, 0, &entries));
  bool saw_dotdot = false;
  for (const Listed& e : entries) {
    if (e.name == "..") {
      saw_dotdot = true;
      EXPECT_EQ(e.fileid, FileIdOf(*to)) << "\"..\" must follow the move";
    }
  }
  EXPECT_TRUE(saw_dotdot);
}

TEST_P(VfsConformanceTest, RenameFileAcrossDirectories) {
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr from, fs_->Mkdir(*root_, "from", 0755, {}));
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr to, fs_->Mkdir(*root_, "to", 0755, {}));
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr file, fs_->Create(*from, "f", 0644, {}, true));
  VFS_ASSERT_OK(WriteFile(*file, 0, "x"));
  VFS_ASSERT_OK(fs_->Rename(*from, "f", *to, "g"));
  VFS_EXPECT_ERRNO(fs_->Lookup(*from, "f"), ENOENT);
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr g, fs_->Lookup(*to, "g"));
  EXPECT_EQ(FileIdOf(*g), FileIdOf(*file));
  EXPECT_EQ(AttrOf(*from).nlink, 2u) << "moving a file does not change link counts";
  EXPECT_EQ(AttrOf(*to).nlink, 2u);
}

TEST_P(VfsConformanceTest, RenameReplacesFile) {
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr src, fs_->Create(*root_, "src", 0644, {}, true));
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr dst, fs_->Create(*root_, "dst", 0644, {}, true));
  VFS_ASSERT_OK(WriteFile(*src, 0, "new"));
  VFS_ASSERT_OK(WriteFile(*dst, 0, "old contents"));
  const std::vector<std::byte> dst_handle = HandleOf(*dst);
  VFS_ASSERT_OK(fs_->Rename(*root_, "src", *root_, "dst"));
  VFS_EXPECT_ERRNO(fs_->Lookup(*root_, "src"), ENOENT);
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr now, fs_->Lookup(*root_, "dst"));
  EXPECT_EQ(FileIdOf(*now), FileIdOf(*src));
  EXPECT_EQ(ReadWhole(*now).value_or("<error>"), "new");
  VFS_EXPECT_ERRNO(fs_->DecodeHandle(dst_handle), ESTALE);
  std::vector<Listed> entries;
  ASSERT_NO_FATAL_FAILURE(ListFrom(*root_, 0, &entries));
  EXPECT_EQ(entries.size(), 3u) << "., .. and dst";
}

TEST_P(VfsConformanceTest, RenameReplacesHardLinkedFileKeepingOtherLink) {
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr src, fs_->Create(*root_, "src", 0644, {}, true));
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr dst, fs_->Create(*root_, "dst", 0644, {}, true));
  VFS_ASSERT_OK(fs_->Link(*dst, *root_, "other"));
  VFS_ASSERT_OK(fs_->Rename(*root_, "src", *root_, "dst"));
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr other, fs_->Lookup(*root_, "other"));
  EXPECT_EQ(FileIdOf(*other), FileIdOf(*dst));
  EXPECT_EQ(AttrOf(*dst).nlink, 1u);
}

TEST_P(VfsConformanceTest, RenameReplacesEmptyDirectory) {
  const uint32_t root_links = AttrOf(*root_).nlink;
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr src, fs_->Mkdir(*root_, "src", 0755, {}));
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr dst, fs_->Mkdir(*root_, "dst", 0755, {}));
  EXPECT_EQ(AttrOf(*root_).nlink, root_links + 2);
  VFS_ASSERT_OK(fs_->Rename(*root_, "src", *root_, "dst"));
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr now, fs_->Lookup(*root_, "dst"));
  EXPECT_EQ(FileIdOf(*now), FileIdOf(*src));
  VFS_EXPECT_ERRNO(fs_->GetAttr(*dst), ESTALE);
  EXPECT_EQ(AttrOf(*root_).nlink, root_links + 1);
}

TEST_P(VfsConformanceTest, RenameOntoNonEmptyDirectoryIsENOTEMPTY) {
  VFS_ASSERT_OK(fs_->Mkdir(*root_, "src", 0755, {}));
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr dst, fs_->Mkdir(*root_, "dst", 0755, {}));
  VFS_ASSERT_OK(fs_->Create(*dst, "f", 0644, {}, true));
  VFS_EXPECT_ERRNO(fs_->Rename(*root_, "src", *root_, "dst"), ENOTEMPTY);
  VFS_ASSERT_OK(fs_->Lookup(*root_, "src"));
  VFS_ASSERT_OK(fs_->Lookup(*dst, "f"));
}

TEST_P(VfsConformanceTest, RenameTypeMismatches) {
  VFS_ASSERT_OK(fs_->Create(*root_, "file", 0644, {}, true));
  VFS_ASSERT_OK(fs_->Mkdir(*root_, "dir", 0755, {}));
  VFS_EXPECT_ERRNO(fs_->Rename(*root_, "file", *root_, "dir"), EISDIR);
  VFS_EXPECT_ERRNO(fs_->Rename(*root_, "dir", *root_, "file"), ENOTDIR);
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr file, fs_->Lookup(*root_, "file"));
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr dir, fs_->Lookup(*root_, "dir"));
  EXPECT_EQ(file->type(), FileType::kRegular);
  EXPECT_EQ(dir->type(), FileType::kDirectory);
}

TEST_P(VfsConformanceTest, RenameDirectoryIntoItsOwnSubtreeIsEINVAL) {
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr a, fs_->Mkdir(*root_, "a", 0755, {}));
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr b, fs_->Mkdir(*a, "b", 0755, {}));
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr c, fs_->Mkdir(*b, "c", 0755, {}));
  VFS_EXPECT_ERRNO(fs_->Rename(*root_, "a", *a, "x"), EINVAL);
  VFS_EXPECT_ERRNO(fs_->Rename(*root_, "a", *c, "x"), EINVAL);
  VFS_EXPECT_ERRNO(fs_->Rename(*a, "b", *c, "x"), EINVAL);
  VFS_ASSERT_OK(fs_->Lookup(*root_, "a"));
  VFS_ASSERT_OK(fs_->Lookup(*a, "b"));
  // Moving up the tree is fine.
  VFS_ASSERT_OK(fs_->Rename(*b, "c", *root_, "c"));
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr parent, fs_->Parent(*c));
  EXPECT_EQ(FileIdOf(*parent), FileIdOf(*root_));
}

TEST_P(VfsConformanceTest, RenameOntoSameFileIsANoOp) {
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr file, fs_->Create(*root_, "a", 0644, {}, true));
  VFS_ASSERT_OK(fs_->Link(*file, *root_, "b"));
  // rename(2): when both names are links to the same file, nothing happens.
  VFS_ASSERT_OK(fs_->Rename(*root_, "a", *root_, "b"));
  VFS_ASSERT_OK(fs_->Lookup(*root_, "a"));
  VFS_ASSERT_OK(fs_->Lookup(*root_, "b"));
  EXPECT_EQ(AttrOf(*file).nlink, 2u);
  // And a name onto itself, for a file and for a directory.
  VFS_ASSERT_OK(fs_->Rename(*root_, "a", *root_, "a"));
  VFS_ASSERT_OK(fs_->Lookup(*root_, "a"));
  VFS_ASSERT_OK(fs_->Mkdir(*root_, "d", 0755, {}));
  VFS_ASSERT_OK(fs_->Rename(*root_, "d", *root_, "d"));
  VFS_ASSERT_OK(fs_->Lookup(*root_, "d"));
}

// ---------------------------------------------------------------------------------------------
// Link, Symlink, Mknod

TEST_P(VfsConformanceTest, LinkAddsAName) {
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr d, fs_->Mkdir(*root_, "d", 0755, {}));
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr file, fs_->Create(*root_, "a", 0644, {}, true));
  const Timespec ctime = AttrOf(*file).ctime;
  VFS_ASSERT_OK(fs_->Link(*file, *d, "b"));
  const Attr attr = AttrOf(*file);
  EXPECT_EQ(attr.nlink, 2u);
  EXPECT_GT(attr.ctime, ctime) << "link changes ctime";
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr b, fs_->Lookup(*d, "b"));
  EXPECT_EQ(FileIdOf(*b), attr.fileid);
  VFS_ASSERT_OK(WriteFile(*b, 0, "via b"));
  EXPECT_EQ(ReadWhole(*file).value_or("<error>"), "via b");

  VFS_EXPECT_ERRNO(fs_->Link(*file, *d, "b"), EEXIST);
  VFS_EXPECT_ERRNO(fs_->Link(*file, *root_, "d"), EEXIST);
  VFS_EXPECT_ERRNO(fs_->Link(*d, *root_, "dirlink"), EPERM);
  VFS_EXPECT_ERRNO(fs_->Lookup(*root_, "dirlink"), ENOENT);
}

TEST_P(VfsConformanceTest, SymlinkAndReadLink) {
  const std::string target = "../some/where/" + std::string(200, 'x');
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr link, fs_->Symlink(*root_, "l", target, {321, 654}));
  EXPECT_EQ(link->type(), FileType::kSymlink);
  const Attr attr = AttrOf(*link);
  EXPECT_EQ(attr.type, FileType::kSymlink);
  EXPECT_EQ(attr.size, target.size()) << "a symlink's size is its target's length";
  EXPECT_EQ(attr.nlink, 1u);
  EXPECT_EQ(attr.uid, 321u);
  EXPECT_EQ(attr.gid, 654u);
  VFS_ASSERT_OK_AND_ASSIGN(std::string read, fs_->ReadLink(*link));
  EXPECT_EQ(read, target);
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr found, fs_->Lookup(*root_, "l"));
  EXPECT_EQ(fs_->ReadLink(*found).value_or("<error>"), target);

  VFS_EXPECT_ERRNO(fs_->Symlink(*root_, "l", "other", {}), EEXIST);
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr file, fs_->Create(*root_, "f", 0644, {}, true));
  VFS_EXPECT_ERRNO(fs_->ReadLink(*file), EINVAL);
  VFS_EXPECT_ERRNO(fs_->ReadLink(*root_), EINVAL);
}

TEST_P(VfsConformanceTest, MknodCreatesSpecialFiles) {
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr fifo,
                           fs_->Mknod(*root_, "fifo", FileType::kFifo, 0620, 0, 0, {11, 12}));
  EXPECT_EQ(fifo->type(), FileType::kFifo);
  Attr attr = AttrOf(*fifo);
  EXPECT_EQ(attr.type, FileType::kFifo);
  EXPECT_EQ(attr.mode, 0620u);
  EXPECT_EQ(attr.uid, 11u);
  EXPECT_EQ(attr.gid, 12u);
  EXPECT_EQ(attr.nlink, 1u);

  VFS_ASSERT_OK_AND_ASSIGN(NodePtr chr,
                           fs_->Mknod(*root_, "chr", FileType::kCharDevice, 0600, 1, 3, {}));
  EXPECT_EQ(chr->type(), FileType::kCharDevice);
  attr = AttrOf(*chr);
  EXPECT_EQ(attr.type, FileType::kCharDevice);
  EXPECT_EQ(attr.rdev_major, 1u);
  EXPECT_EQ(attr.rdev_minor, 3u);

  VFS_ASSERT_OK_AND_ASSIGN(NodePtr blk,
                           fs_->Mknod(*root_, "blk", FileType::kBlockDevice, 0600, 7, 300, {}));
  attr = AttrOf(*blk);
  EXPECT_EQ(attr.type, FileType::kBlockDevice);
  EXPECT_EQ(attr.rdev_major, 7u);
  EXPECT_EQ(attr.rdev_minor, 300u);

  VFS_ASSERT_OK_AND_ASSIGN(NodePtr sock,
                           fs_->Mknod(*root_, "sock", FileType::kSocket, 0644, 0, 0, {}));
  EXPECT_EQ(AttrOf(*sock).type, FileType::kSocket);

  VFS_ASSERT_OK_AND_ASSIGN(NodePtr found, fs_->Lookup(*root_, "chr"));
  EXPECT_EQ(found->type(), FileType::kCharDevice);
  EXPECT_EQ(AttrOf(*found).rdev_minor, 3u);
  VFS_EXPECT_ERRNO(fs_->Mknod(*root_, "fifo", FileType::kFifo, 0644, 0, 0, {}), EEXIST);
}

TEST_P(VfsConformanceTest, OwnerGivenAtCreationShowsInAttributes) {
  const Owner owner{40000, 50000};
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr file, fs_->Create(*root_, "f", 0644, owner, true));
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr dir, fs_->Mkdir(*root_, "d", 0755, owner));
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr link, fs_->Symlink(*root_, "l", "f", owner));
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr fifo,
                           fs_->Mknod(*root_, "p", FileType::kFifo, 0644, 0, 0, owner));
  for (const NodePtr& node : {file, dir, link, fifo}) {
    const Attr attr = AttrOf(*node);
    EXPECT_EQ(attr.uid, owner.uid) << static_cast<int>(attr.type);
    EXPECT_EQ(attr.gid, owner.gid) << static_cast<int>(attr.type);
  }
}

// ---------------------------------------------------------------------------------------------
// SetAttr

TEST_P(VfsConformanceTest, SetAttrMode) {
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr file, fs_->Create(*root_, "f", 0644, {}, true));
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr dir, fs_->Mkdir(*root_, "d", 0755, {}));
  for (uint32_t mode : {0600u, 0755u, 04711u, 02750u, 01777u, 0u}) {
    for (const NodePtr& node : {file, dir}) {
      const Attr before = AttrOf(*node);
      SetAttr set;
      set.mode = mode;
      VFS_ASSERT_OK(fs_->SetAttr(*node, set));
      const Attr after = AttrOf(*node);
      EXPECT_EQ(after.mode, mode);
      EXPECT_GT(after.ctime, before.ctime) << "chmod changes ctime";
      EXPECT_EQ(after.mtime, before.mtime) << "chmod leaves mtime alone";
      EXPECT_EQ(after.type, before.type);
    }
  }
}

TEST_P(VfsConformanceTest, SetAttrOwner) {
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr file, fs_->Create(*root_, "f", 0644, {1, 2}, true));
  Attr before = AttrOf(*file);
  SetAttr set;
  set.uid = 1001;
  VFS_ASSERT_OK(fs_->SetAttr(*file, set));
  Attr after = AttrOf(*file);
  EXPECT_EQ(after.uid, 1001u);
  EXPECT_EQ(after.gid, 2u) << "only the uid was asked for";
  EXPECT_GT(after.ctime, before.ctime) << "chown changes ctime";

  before = after;
  set = {};
  set.gid = 2002;
  VFS_ASSERT_OK(fs_->SetAttr(*file, set));
  after = AttrOf(*file);
  EXPECT_EQ(after.uid, 1001u);
  EXPECT_EQ(after.gid, 2002u);
  EXPECT_GT(after.ctime, before.ctime);

  // On a symlink too, without following it.
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr link, fs_->Symlink(*root_, "l", "f", {}));
  set.uid = 77;
  set.gid = 88;
  VFS_ASSERT_OK(fs_->SetAttr(*link, set));
  EXPECT_EQ(AttrOf(*link).uid, 77u);
  EXPECT_EQ(AttrOf(*link).gid, 88u);
  EXPECT_EQ(AttrOf(*file).uid, 1001u);
}

TEST_P(VfsConformanceTest, SetAttrTimes) {
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr file, fs_->Create(*root_, "f", 0644, {}, true));
  const Timespec atime{1'000'000'000, 123'456'789};
  const Timespec mtime{1'100'000'000, 987'654'321};
  Attr before = AttrOf(*file);
  SetAttr set;
  set.atime_how = SetAttr::Time::kGiven;
  set.atime = atime;
  set.mtime_how = SetAttr::Time::kGiven;
  set.mtime = mtime;
  VFS_ASSERT_OK(fs_->SetAttr(*file, set));
  Attr after = AttrOf(*file);
  EXPECT_EQ(after.atime, atime);
  EXPECT_EQ(after.mtime, mtime);
  EXPECT_GT(after.ctime, before.ctime) << "setting times changes ctime";

  // Only mtime, to the server's clock: atime stays, mtime moves past the given past value.
  before = after;
  set = {};
  set.mtime_how = SetAttr::Time::kServerNow;
  VFS_ASSERT_OK(fs_->SetAttr(*file, set));
  after = AttrOf(*file);
  EXPECT_EQ(after.atime, atime);
  EXPECT_GT(after.mtime, mtime);
  EXPECT_GT(after.ctime, before.ctime);
}

TEST_P(VfsConformanceTest, SetAttrSizeTruncatesAndExtendsWithZeros) {
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr file, fs_->Create(*root_, "f", 0644, {}, true));
  VFS_ASSERT_OK(WriteFile(*file, 0, "0123456789"));
  Attr before = AttrOf(*file);
  SetAttr set;
  set.size = 4;
  VFS_ASSERT_OK(fs_->SetAttr(*file, set));
  Attr after = AttrOf(*file);
  EXPECT_EQ(after.size, 4u);
  EXPECT_GT(after.mtime, before.mtime) << "truncate changes mtime";
  EXPECT_GT(after.ctime, before.ctime);
  EXPECT_EQ(ReadWhole(*file).value_or("<error>"), "0123");

  before = after;
  set.size = 8;
  VFS_ASSERT_OK(fs_->SetAttr(*file, set));
  after = AttrOf(*file);
  EXPECT_EQ(after.size, 8u);
  EXPECT_GT(after.mtime, before.mtime);
  EXPECT_EQ(ReadWhole(*file).value_or("<error>"), std::string("0123\0\0\0\0", 8))
      << "bytes cut off by the truncate must not come back";

  set.size = 0;
  VFS_ASSERT_OK(fs_->SetAttr(*file, set));
  EXPECT_EQ(AttrOf(*file).size, 0u);
  EXPECT_EQ(ReadWhole(*file).value_or("<error>"), "");

  // The same across large, unaligned sizes.
  const std::string data = conformance::Pattern(1, 300'000);
  VFS_ASSERT_OK(WriteFile(*file, 0, data));
  set.size = 100'001;
  VFS_ASSERT_OK(fs_->SetAttr(*file, set));
  set.size = 400'000;
  VFS_ASSERT_OK(fs_->SetAttr(*file, set));
  VFS_ASSERT_OK_AND_ASSIGN(std::string back, ReadWhole(*file));
  ASSERT_EQ(back.size(), 400'000u);
  EXPECT_EQ(back.substr(0, 100'001), data.substr(0, 100'001));
  EXPECT_EQ(back.substr(100'001), std::string(400'000 - 100'001, '\0'));
}

TEST_P(VfsConformanceTest, SetAttrSizeOfDirectoryIsEISDIR) {
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr dir, fs_->Mkdir(*root_, "d", 0755, {}));
  SetAttr set;
  set.size = 0;
  VFS_EXPECT_ERRNO(fs_->SetAttr(*dir, set), EISDIR);
}

// ---------------------------------------------------------------------------------------------
// Data

TEST_P(VfsConformanceTest, ReadWriteRoundTrip) {
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr node, fs_->Create(*root_, "f", 0644, {}, true));
  VFS_ASSERT_OK_AND_ASSIGN(std::unique_ptr<OpenFile> file, fs_->Open(*node, true));
  EXPECT_TRUE(file->writable());
  VFS_ASSERT_OK_AND_ASSIGN(size_t written, file->Write(0, conformance::AsBytes("hello world")));
  EXPECT_EQ(written, 11u);
  VFS_ASSERT_OK_AND_ASSIGN(Attr attr, file->GetAttr());
  EXPECT_EQ(attr.size, 11u);
  EXPECT_EQ(attr.fileid, FileIdOf(*node));
  EXPECT_EQ(AttrOf(*node).size, 11u);

  std::array<std::byte, 100> buf{};
  VFS_ASSERT_OK_AND_ASSIGN(size_t n, file->Read(0, buf));
  EXPECT_EQ(n, 11u) << "a short read at end of file";
  EXPECT_EQ(conformance::AsString(std::span(buf).first(n)), "hello world");
  VFS_ASSERT_OK_AND_ASSIGN(n, file->Read(6, std::span(buf).first(5)));
  EXPECT_EQ(conformance::AsString(std::span(buf).first(n)), "world");
  VFS_ASSERT_OK_AND_ASSIGN(n, file->Read(11, buf));
  EXPECT_EQ(n, 0u) << "reading at end of file returns nothing";
  VFS_ASSERT_OK_AND_ASSIGN(n, file->Read(1'000'000, buf));
  EXPECT_EQ(n, 0u) << "reading past end of file returns nothing";

  VFS_ASSERT_OK(file->Write(6, conformance::AsBytes("WORLD!")));
  VFS_ASSERT_OK(file->Sync(true));
  VFS_ASSERT_OK(file->Sync(false));
  VFS_ASSERT_OK(file->Close());
  EXPECT_EQ(ReadWhole(*node).value_or("<error>"), "hello WORLD!");

  VFS_ASSERT_OK_AND_ASSIGN(std::unique_ptr<OpenFile> ro, fs_->Open(*node, false));
  EXPECT_FALSE(ro->writable());
  VFS_EXPECT_ERRNO(ro->Write(0, conformance::AsBytes("x")), EBADF);
  VFS_ASSERT_OK(ro->Close());
  EXPECT_EQ(ReadWhole(*node).value_or("<error>"), "hello WORLD!");
}

TEST_P(VfsConformanceTest, OpenOnlyOpensRegularFiles) {
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr dir, fs_->Mkdir(*root_, "d", 0755, {}));
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr link, fs_->Symlink(*root_, "l", "d", {}));
  VFS_EXPECT_ERRNO(fs_->Open(*dir, false), EISDIR);
  VFS_EXPECT_ERRNO(fs_->Open(*dir, true), EISDIR);
  EXPECT_FALSE(fs_->Open(*link, false).has_value()) << "a symlink is not opened, nor followed";
}

TEST_P(VfsConformanceTest, WriteUpdatesTimesAndSize) {
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr node, fs_->Create(*root_, "f", 0644, {}, true));
  const Attr before = AttrOf(*node);
  VFS_ASSERT_OK(WriteFile(*node, 0, "abc"));
  const Attr after = AttrOf(*node);
  EXPECT_EQ(after.size, 3u);
  EXPECT_GT(after.mtime, before.mtime);
  EXPECT_GT(after.ctime, before.ctime);
}

TEST_P(VfsConformanceTest, WritePastEndLeavesAHoleOfZeros) {
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr node, fs_->Create(*root_, "f", 0644, {}, true));
  VFS_ASSERT_OK(WriteFile(*node, 0, "head"));
  VFS_ASSERT_OK(WriteFile(*node, 70'000, "tail"));
  EXPECT_EQ(AttrOf(*node).size, 70'004u);
  VFS_ASSERT_OK_AND_ASSIGN(std::string all, ReadWhole(*node));
  ASSERT_EQ(all.size(), 70'004u);
  EXPECT_EQ(all.substr(0, 4), "head");
  EXPECT_EQ(all.substr(4, 70'000 - 4), std::string(70'000 - 4, '\0'));
  EXPECT_EQ(all.substr(70'000), "tail");
}

TEST_P(VfsConformanceTest, LargeUnalignedWriteReadsBackInPieces) {
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr node, fs_->Create(*root_, "f", 0644, {}, true));
  const uint64_t offset = 12'345;
  const std::string data = conformance::Pattern(7, 3 * 1024 * 1024 + 17);
  VFS_ASSERT_OK(WriteFile(*node, offset, data));
  EXPECT_EQ(AttrOf(*node).size, offset + data.size());
  VFS_ASSERT_OK_AND_ASSIGN(std::unique_ptr<OpenFile> file, fs_->Open(*node, false));
  std::vector<std::byte> buf(100'003);
  std::string back;
  uint64_t pos = offset;
  while (true) {
    VFS_ASSERT_OK_AND_ASSIGN(size_t n, file->Read(pos, buf));
    if (n == 0) break;
    back += conformance::AsString(std::span(buf).first(n));
    pos += n;
  }
  VFS_ASSERT_OK(file->Close());
  EXPECT_TRUE(back == data) << "read back " << back.size() << " bytes of " << data.size();
}

TEST_P(VfsConformanceTest, BigSparseFile) {
  constexpr uint64_t kGiB = uint64_t{1} << 30;
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr node, fs_->Create(*root_, "big", 0644, {}, true));
  const std::string head = conformance::Pattern(1, 100);
  const std::string middle = conformance::Pattern(2, 70'000);
  const std::string tail = conformance::Pattern(3, 4096);
  VFS_ASSERT_OK(WriteFile(*node, 0, head));
  VFS_ASSERT_OK(WriteFile(*node, kGiB / 2 + 7, middle));
  VFS_ASSERT_OK(WriteFile(*node, kGiB - tail.size(), tail));
  const Attr attr = AttrOf(*node);
  EXPECT_EQ(attr.size, kGiB);
  EXPECT_LT(attr.used, 64u << 20) << "holes must not take storage";

  EXPECT_EQ(ReadFile(*node, 0, head.size()).value_or("<error>"), head);
  EXPECT_EQ(ReadFile(*node, kGiB / 2 + 7, middle.size()).value_or("<error>"), middle);
  EXPECT_EQ(ReadFile(*node, kGiB - tail.size(), 10'000).value_or("<error>"), tail);
  EXPECT_EQ(ReadFile(*node, kGiB / 4, 1 << 20).value_or("<error>"), std::string(1 << 20, '\0'));
  // Around the written middle: zeros right up to it and right after it.
  VFS_ASSERT_OK_AND_ASSIGN(std::string around, ReadFile(*node, kGiB / 2, middle.size() + 100));
  ASSERT_EQ(around.size(), middle.size() + 100);
  EXPECT_EQ(around.substr(0, 7), std::string(7, '\0'));
  EXPECT_TRUE(around.substr(7, middle.size()) == middle);
  EXPECT_EQ(around.substr(7 + middle.size()), std::string(93, '\0'));
}

TEST_P(VfsConformanceTest, TimestampsStrictlyIncreaseAcrossBackToBackWrites) {
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr node, fs_->Create(*root_, "f", 0644, {}, true));
  VFS_ASSERT_OK_AND_ASSIGN(std::unique_ptr<OpenFile> file, fs_->Open(*node, true));
  Attr prev = AttrOf(*node);
  const std::string chunk = conformance::Pattern(5, 64);
  for (int i = 0; i < 1000; ++i) {
    VFS_ASSERT_OK(file->Write(static_cast<uint64_t>(i) * 16, conformance::AsBytes(chunk)));
    const Attr attr = AttrOf(*node);
    // A client that sees an unchanged mtime/ctime keeps stale cached data.
    ASSERT_GT(attr.mtime, prev.mtime) << "write " << i;
    ASSERT_GT(attr.ctime, prev.ctime) << "write " << i;
    ASSERT_EQ(attr.size, static_cast<uint64_t>(i) * 16 + chunk.size());
    prev = attr;
  }
  VFS_ASSERT_OK(file->Close());
}

// ---------------------------------------------------------------------------------------------
// ReadDir

TEST_P(VfsConformanceTest, ReadDirOfEmptyDirectory) {
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr d, fs_->Mkdir(*root_, "d", 0755, {}));
  std::vector<Listed> entries;
  ASSERT_NO_FATAL_FAILURE(ListFrom(*d, 0, &entries));
  std::vector<std::string> names = conformance::NamesOf(entries);
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{".", ".."}));
  for (const Listed& e : entries) {
    EXPECT_EQ(e.fileid, e.name == "." ? FileIdOf(*d) : FileIdOf(*root_)) << e.name;
  }
}

TEST_P(VfsConformanceTest, ReadDirListsEveryEntryOnce) {
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr d, fs_->Mkdir(*root_, "d", 0755, {}));
  std::map<std::string, uint64_t> expected;  // name -> fileid
  for (int i = 0; i < 40; ++i) {
    const std::string name = "file" + std::to_string(i);
    VFS_ASSERT_OK_AND_ASSIGN(NodePtr f, fs_->Create(*d, name, 0644, {}, true));
    expected[name] = FileIdOf(*f);
  }
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr sub, fs_->Mkdir(*d, "sub", 0755, {}));
  expected["sub"] = FileIdOf(*sub);
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr link, fs_->Symlink(*d, "link", "file1", {}));
  expected["link"] = FileIdOf(*link);
  expected["."] = FileIdOf(*d);
  expected[".."] = FileIdOf(*root_);

  std::vector<Listed> entries;
  ASSERT_NO_FATAL_FAILURE(ListFrom(*d, 0, &entries));
  std::map<std::string, uint64_t> listed;
  std::set<uint64_t> cookies;
  for (const Listed& e : entries) {
    EXPECT_TRUE(listed.emplace(e.name, e.fileid).second) << "listed twice: " << e.name;
    EXPECT_NE(e.cookie, 0u) << e.name;
    EXPECT_TRUE(cookies.insert(e.cookie).second) << "cookie reused by " << e.name;
  }
  EXPECT_EQ(listed, expected);
}

TEST_P(VfsConformanceTest, ReadDirResumesAfterEveryCookie) {
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr d, fs_->Mkdir(*root_, "d", 0755, {}));
  for (int i = 0; i < 12; ++i)
    VFS_ASSERT_OK(fs_->Create(*d, "f" + std::to_string(i), 0644, {}, true));
  std::vector<Listed> all;
  ASSERT_NO_FATAL_FAILURE(ListFrom(*d, 0, &all));
  ASSERT_EQ(all.size(), 14u);
  for (size_t i = 0; i < all.size(); ++i) {
    std::vector<Listed> rest;
    ASSERT_NO_FATAL_FAILURE(ListFrom(*d, all[i].cookie, &rest));
    const std::vector<std::string> want = conformance::NamesOf(
        std::vector<Listed>(all.begin() + static_cast<ptrdiff_t>(i) + 1, all.end()));
    EXPECT_EQ(conformance::NamesOf(rest), want) << "after " << all[i].name;
  }
}

TEST_P(VfsConformanceTest, ReadDirStopsWhenEmitSaysSo) {
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr d, fs_->Mkdir(*root_, "d", 0755, {}));
  VFS_ASSERT_OK(fs_->Create(*d, "f", 0644, {}, true));
  int calls = 0;
  VFS_ASSERT_OK_AND_ASSIGN(bool eof, fs_->ReadDir(*d, 0, [&](const DirEntry&) {
    ++calls;
    return false;
  }));
  EXPECT_EQ(calls, 1) << "no entry is offered after emit returned false";
  EXPECT_FALSE(eof) << "the refused entry and the rest are still to come";
}

TEST_P(VfsConformanceTest, ReadDirInPagesMatchesFullListing) {
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr d, fs_->Mkdir(*root_, "d", 0755, {}));
  for (int i = 0; i < 25; ++i)
    VFS_ASSERT_OK(fs_->Create(*d, "f" + std::to_string(i), 0644, {}, true));
  std::vector<Listed> all;
  ASSERT_NO_FATAL_FAILURE(ListFrom(*d, 0, &all));
  ASSERT_EQ(all.size(), 27u);
  for (size_t page : {1u, 2u, 3u, 26u, 27u, 28u}) {
    std::vector<Listed> paged;
    ASSERT_NO_FATAL_FAILURE(ListPaged(*d, page, &paged));
    EXPECT_EQ(conformance::NamesOf(paged), conformance::NamesOf(all)) << "pages of " << page;
  }
}

TEST_P(VfsConformanceTest, ReadDirCookiesSurviveChangesBetweenPages) {
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr d, fs_->Mkdir(*root_, "d", 0755, {}));
  std::set<std::string> initial;
  for (int i = 0; i < 30; ++i) {
    const std::string name = "f" + std::to_string(i);
    VFS_ASSERT_OK(fs_->Create(*d, name, 0644, {}, true));
    initial.insert(name);
  }
  std::set<std::string> removed_after_listing, removed_before_listing, added;
  int next_new = 0;
  // Between pages: remove an entry already listed, remove one not listed yet, add a new one.
  auto change = [&](const std::vector<Listed>& so_far) {
    std::set<std::string> seen;
    for (const Listed& e : so_far) seen.insert(e.name);
    for (const Listed& e : so_far) {
      if (initial.contains(e.name) && !removed_after_listing.contains(e.name)) {
        VFS_ASSERT_OK(fs_->Remove(*d, e.name));
        removed_after_listing.insert(e.name);
        break;
      }
    }
    for (auto it = initial.rbegin(); it != initial.rend(); ++it) {
      if (!seen.contains(*it) && !removed_before_listing.contains(*it)) {
        VFS_ASSERT_OK(fs_->Remove(*d, *it));
        removed_before_listing.insert(*it);
        break;
      }
    }
    const std::string name = "new" + std::to_string(next_new++);
    VFS_ASSERT_OK(fs_->Create(*d, name, 0644, {}, true));
    added.insert(name);
  };
  std::vector<Listed> listed;
  ASSERT_NO_FATAL_FAILURE(ListPaged(*d, 3, &listed, change));

  std::map<std::string, int> count;
  for (const Listed& e : listed) ++count[e.name];
  for (const auto& [name, n] : count) {
    EXPECT_EQ(n, 1) << name << " listed " << n << " times";
    EXPECT_TRUE(name == "." || name == ".." || initial.contains(name) || added.contains(name))
        << "unknown entry " << name;
  }
  EXPECT_EQ(count["."], 1);
  EXPECT_EQ(count[".."], 1);
  int survivors = 0;
  for (const std::string& name : initial) {
    if (removed_after_listing.contains(name)) continue;  // listed before its removal
    if (removed_before_listing.contains(name)) {
      EXPECT_FALSE(count.contains(name)) << name << " was removed before being listed";
      continue;
    }
    ++survivors;
    EXPECT_EQ(count[name], 1) << name << " existed throughout and must be listed once";
  }
  EXPECT_GT(survivors, 0);
  EXPECT_FALSE(removed_before_listing.empty());
  EXPECT_FALSE(removed_after_listing.empty());
}

// ---------------------------------------------------------------------------------------------
// StatFs, sync

TEST_P(VfsConformanceTest, StatFsIsPlausible) {
  VFS_ASSERT_OK_AND_ASSIGN(FsStat st, fs_->StatFs(*root_));
  EXPECT_GT(st.total_bytes, 0u);
  EXPECT_LE(st.free_bytes, st.total_bytes);
  EXPECT_LE(st.avail_bytes, st.free_bytes);
  EXPECT_GT(st.total_files, 0u);
  EXPECT_LE(st.free_files, st.total_files);
  EXPECT_LE(st.avail_files, st.free_files);
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr file, fs_->Create(*root_, "f", 0644, {}, true));
  VFS_ASSERT_OK(fs_->StatFs(*file));
}

TEST_P(VfsConformanceTest, SyncDirAndFileSyncSucceed) {
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr d, fs_->Mkdir(*root_, "d", 0755, {}));
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr node, fs_->Create(*d, "f", 0644, {}, true));
  VFS_ASSERT_OK(fs_->SyncDir(*root_));
  VFS_ASSERT_OK(fs_->SyncDir(*d));
  VFS_ASSERT_OK_AND_ASSIGN(std::unique_ptr<OpenFile> file, fs_->Open(*node, true));
  VFS_ASSERT_OK(file->Write(0, conformance::AsBytes("durable")));
  VFS_ASSERT_OK(file->Sync(true));
  VFS_ASSERT_OK(file->Sync(false));
  VFS_ASSERT_OK(file->Close());
}

// ---------------------------------------------------------------------------------------------
// Concurrency

// Writers fill disjoint records of one file through one shared OpenFile while readers, each
// with its own OpenFile, check every record a writer has finished. Records are not aligned
// to any block size, so neighbours share blocks and pages.
TEST_P(VfsConformanceTest, ConcurrentReadersAndWritersOnOneFile) {
  constexpr size_t kRecord = 3000;
  constexpr size_t kRecords = 240;
  constexpr int kWriters = 3;
  constexpr int kReaders = 3;
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr node, fs_->Create(*root_, "shared", 0644, {}, true));
  VFS_ASSERT_OK_AND_ASSIGN(std::shared_ptr<OpenFile> out, fs_->Open(*node, true));
  std::vector<std::unique_ptr<OpenFile>> ins;
  for (int i = 0; i < kReaders; ++i) {
    VFS_ASSERT_OK_AND_ASSIGN(std::unique_ptr<OpenFile> in, fs_->Open(*node, false));
    ins.push_back(std::move(in));
  }
  auto record = [](size_t r) { return conformance::Pattern(1000 + r, kRecord); };

  std::array<std::atomic<bool>, kRecords> done{};
  std::atomic<int> writers_left{kWriters};
  std::atomic<int> write_errors{0}, read_errors{0}, mismatches{0}, checked{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      for (size_t r = static_cast<size_t>(w); r < kRecords; r += kWriters) {
        const std::string data = record(r);
        Result<size_t> n = out->Write(r * kRecord, conformance::AsBytes(data));
        if (!n || *n != data.size()) ++write_errors;
        done[r].store(true, std::memory_order_release);
      }
      --writers_left;
    });
  }
  for (int i = 0; i < kReaders; ++i) {
    threads.emplace_back([&, i] {
      OpenFile& in = *ins[static_cast<size_t>(i)];
      std::vector<std::byte> buf(kRecord);
      uint64_t x = static_cast<uint64_t>(i) + 1;
      bool last_pass = false;
      while (!last_pass) {
        last_pass = writers_left.load() == 0;
        for (int k = 0; k < 50; ++k) {
          x = x * 6364136223846793005ull + 1442695040888963407ull;
          const size_t r = static_cast<size_t>(x >> 33) % kRecords;
          if (!done[r].load(std::memory_order_acquire)) continue;
          Result<size_t> n = in.Read(r * kRecord, buf);
          if (!n || *n != kRecord) {
            ++read_errors;
          } else if (conformance::AsString(buf) != record(r)) {
            ++mismatches;
          }
          ++checked;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(write_errors.load(), 0);
  EXPECT_EQ(read_errors.load(), 0);
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_GT(checked.load(), 0);
  VFS_ASSERT_OK(out->Close());
  for (auto& in : ins) VFS_ASSERT_OK(in->Close());

  VFS_ASSERT_OK_AND_ASSIGN(std::string all, ReadWhole(*node));
  ASSERT_EQ(all.size(), kRecord * kRecords);
  for (size_t r = 0; r < kRecords; ++r) {
    ASSERT_TRUE(all.substr(r * kRecord, kRecord) == record(r)) << "record " << r;
  }
}

// Threads each create, write, read back, rename and stat their own files in one shared
// directory while another thread keeps listing it.
TEST_P(VfsConformanceTest, ConcurrentWorkOnManyFiles) {
  constexpr int kThreads = 6;
  constexpr int kFilesPerThread = 8;
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr d, fs_->Mkdir(*root_, "d", 0755, {}));
  std::atomic<int> failures{0}, listing_problems{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kFilesPerThread; ++i) {
        const std::string name = "t" + std::to_string(t) + "_" + std::to_string(i);
        const std::string data = conformance::Pattern(static_cast<uint64_t>(t * 100 + i),
                                                      static_cast<size_t>(70'000 + 1000 * i));
        Result<NodePtr> node = fs_->Create(*d, name + ".tmp", 0644, {}, true);
        if (!node || !WriteFile(**node, 0, data) || ReadWhole(**node).value_or("") != data ||
            !fs_->Rename(*d, name + ".tmp", *d, name)) {
          ++failures;
          continue;
        }
        Result<NodePtr> found = fs_->Lookup(*d, name);
        Result<Attr> attr = found ? fs_->GetAttr(**found) : Result<Attr>(Fail(ENOENT));
        if (!attr || attr->size != data.size() || ReadWhole(**found).value_or("") != data) {
          ++failures;
        }
      }
    });
  }
  std::thread lister([&] {
    while (!stop.load()) {
      std::set<std::string> names;
      Result<bool> eof = fs_->ReadDir(*d, 0, [&](const DirEntry& e) {
        if (!names.insert(std::string(e.name)).second) ++listing_problems;
        return true;
      });
      if (!eof || !*eof || !names.contains(".") || !names.contains("..")) ++listing_problems;
    }
  });
  for (std::thread& t : threads) t.join();
  stop.store(true);
  lister.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(listing_problems.load(), 0);

  std::vector<Listed> entries;
  ASSERT_NO_FATAL_FAILURE(ListFrom(*d, 0, &entries));
  std::set<std::string> names;
  for (const Listed& e : entries) names.insert(e.name);
  std::set<std::string> want = {".", ".."};
  for (int t = 0; t < kThreads; ++t) {
    for (int i = 0; i < kFilesPerThread; ++i) {
      want.insert("t" + std::to_string(t) + "_" + std::to_string(i));
    }
  }
  EXPECT_EQ(names, want);
}

}  // namespace nfsx::vfs
