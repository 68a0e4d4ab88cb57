#include "vfs/memory/memory_fs.h"

#include <gtest/gtest.h>

#include <array>
#include <string>
#include <utility>
#include <vector>

#include "vfs/fault_fs.h"
#include "vfs/vfs_conformance.h"

namespace nfsx::vfs {
namespace {

// The conformance suite may be included by one file per binary, so the decorator's
// transparency check (no faults armed: it must behave exactly like what it wraps) runs here
// rather than in fault_fs_test.cc.
NFSX_INSTANTIATE_VFS_CONFORMANCE(Memory, VfsFactory{"memory", [] { return MakeMemoryFs(); }},
                                 VfsFactory{
                                     "fault_over_memory", []() -> std::unique_ptr<Filesystem> {
                                       return std::make_unique<FaultInjectingFs>(MakeMemoryFs());
                                     }});

using conformance::AsBytes;

constexpr uint64_t kBlock = 64 * 1024;  // MemoryFs's allocation unit

class MemoryFsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs_ = MakeMemoryFs();
    ASSERT_NE(fs_, nullptr);
    root_ = fs_->Root();
  }

  std::vector<std::byte> HandleOf(const Node& node) {
    std::array<std::byte, kMaxBackendHandle> buf{};
    const size_t n = fs_->EncodeHandle(node, buf);
    return std::vector<std::byte>(buf.begin(), buf.begin() + static_cast<ptrdiff_t>(n));
  }

  Attr AttrOf(Node& node) { return fs_->GetAttr(node).value_or(Attr{}); }

  std::unique_ptr<Filesystem> fs_;
  NodePtr root_;
};

TEST_F(MemoryFsTest, IsNotPersistentAndHasAFixedFsid) {
  EXPECT_FALSE(fs_->persistent());
  EXPECT_EQ(fs_->fsid(), MakeMemoryFs()->fsid());
}

TEST_F(MemoryFsTest, ReusedInodeNumberGetsANewGeneration) {
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr old_file, fs_->Create(*root_, "a", 0644, {}, true));
  const uint64_t old_id = AttrOf(*old_file).fileid;
  const std::vector<std::byte> old_handle = HandleOf(*old_file);
  VFS_ASSERT_OK(fs_->Remove(*root_, "a"));

  VFS_ASSERT_OK_AND_ASSIGN(NodePtr new_file, fs_->Create(*root_, "b", 0644, {}, true));
  ASSERT_EQ(AttrOf(*new_file).fileid, old_id) << "MemoryFs reuses freed inode numbers";
  const std::vector<std::byte> new_handle = HandleOf(*new_file);
  EXPECT_NE(new_handle, old_handle);

  VFS_EXPECT_ERRNO(fs_->DecodeHandle(old_handle), ESTALE);
  VFS_EXPECT_ERRNO(fs_->GetAttr(*old_file), ESTALE) << "the old node is not the new file";
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr decoded, fs_->DecodeHandle(new_handle));
  EXPECT_EQ(decoded, new_file);

  // The same for a directory's number reused by a file.
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr dir, fs_->Mkdir(*root_, "d", 0755, {}));
  const uint64_t dir_id = AttrOf(*dir).fileid;
  const std::vector<std::byte> dir_handle = HandleOf(*dir);
  VFS_ASSERT_OK(fs_->Rmdir(*root_, "d"));
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr reuse, fs_->Create(*root_, "c", 0644, {}, true));
  ASSERT_EQ(AttrOf(*reuse).fileid, dir_id);
  VFS_EXPECT_ERRNO(fs_->DecodeHandle(dir_handle), ESTALE);
}

TEST_F(MemoryFsTest, HandleBytes) {
  const std::vector<std::byte> root_handle = HandleOf(*root_);
  ASSERT_EQ(root_handle.size(), 16u);
  // Well-formed but naming no file.
  std::vector<std::byte> unknown = root_handle;
  unknown[0] = std::byte{0x7f};
  VFS_EXPECT_ERRNO(fs_->DecodeHandle(unknown), ESTALE);
  // Inode number 0 and generation 0 are never issued.
  std::vector<std::byte> zero_ino = root_handle;
  std::fill(zero_ino.begin(), zero_ino.begin() + 8, std::byte{0});
  VFS_EXPECT_ERRNO(fs_->DecodeHandle(zero_ino), EBADF);
  std::vector<std::byte> zero_gen = root_handle;
  std::fill(zero_gen.begin() + 8, zero_gen.end(), std::byte{0});
  VFS_EXPECT_ERRNO(fs_->DecodeHandle(zero_gen), EBADF);
  VFS_EXPECT_ERRNO(fs_->DecodeHandle(std::span(root_handle).first(15)), EBADF);
}

TEST_F(MemoryFsTest, WritesAcrossBlockBoundaries) {
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr node, fs_->Create(*root_, "f", 0644, {}, true));
  VFS_ASSERT_OK_AND_ASSIGN(std::unique_ptr<OpenFile> file, fs_->Open(*node, true));
  // Three bytes straddling the first boundary allocate both blocks.
  VFS_ASSERT_OK(file->Write(kBlock - 1, AsBytes("xyz")));
  EXPECT_EQ(AttrOf(*node).used, 2 * kBlock);
  EXPECT_EQ(AttrOf(*node).size, kBlock + 2);
  // One byte far out allocates one more, and nothing in between.
  VFS_ASSERT_OK(file->Write(10 * kBlock, AsBytes("!")));
  EXPECT_EQ(AttrOf(*node).used, 3 * kBlock);
  // Exactly one full, aligned block.
  const std::string full = conformance::Pattern(9, kBlock);
  VFS_ASSERT_OK(file->Write(4 * kBlock, AsBytes(full)));
  EXPECT_EQ(AttrOf(*node).used, 4 * kBlock);

  std::array<std::byte, 5> buf{};
  VFS_ASSERT_OK_AND_ASSIGN(size_t n, file->Read(kBlock - 2, buf));
  ASSERT_EQ(n, 5u);
  EXPECT_EQ(conformance::AsString(buf), std::string("\0xyz\0", 5));
  std::vector<std::byte> block(kBlock + 2);
  VFS_ASSERT_OK_AND_ASSIGN(n, file->Read(4 * kBlock - 1, block));
  ASSERT_EQ(n, block.size());
  EXPECT_EQ(conformance::AsString(block), std::string(1, '\0') + full + std::string(1, '\0'));

  // Truncating inside block 1 frees every block from 2 on and zeroes block 1's tail, so
  // extending again does not resurrect "z".
  SetAttr set;
  set.size = kBlock + 1;
  VFS_ASSERT_OK(fs_->SetAttr(*node, set));
  EXPECT_EQ(AttrOf(*node).used, 2 * kBlock);
  set.size = kBlock;  // exactly at the boundary: block 1 goes too
  VFS_ASSERT_OK(fs_->SetAttr(*node, set));
  EXPECT_EQ(AttrOf(*node).used, kBlock);
  set.size = 3 * kBlock;
  VFS_ASSERT_OK(fs_->SetAttr(*node, set));
  EXPECT_EQ(AttrOf(*node).used, kBlock) << "extending allocates nothing";
  VFS_ASSERT_OK_AND_ASSIGN(n, file->Read(kBlock - 1, buf));
  ASSERT_EQ(n, 5u);
  EXPECT_EQ(conformance::AsString(buf), std::string("x\0\0\0\0", 5));
  VFS_ASSERT_OK(file->Close());
}

TEST_F(MemoryFsTest, StatFsTracksAllocation) {
  VFS_ASSERT_OK_AND_ASSIGN(FsStat before, fs_->StatFs(*root_));
  EXPECT_EQ(before.total_bytes, uint64_t{1} << 40);
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr node, fs_->Create(*root_, "f", 0644, {}, true));
  VFS_ASSERT_OK_AND_ASSIGN(std::unique_ptr<OpenFile> file, fs_->Open(*node, true));
  VFS_ASSERT_OK(file->Write(5 * kBlock + 3, AsBytes("a")));
  VFS_ASSERT_OK(file->Close());
  VFS_ASSERT_OK_AND_ASSIGN(FsStat after, fs_->StatFs(*root_));
  EXPECT_EQ(before.free_bytes - after.free_bytes, kBlock);
  EXPECT_EQ(before.free_files - after.free_files, 1u);
  VFS_ASSERT_OK(fs_->Remove(*root_, "f"));
  // Storage goes with the last reference, as with an unlinked file that is still open.
  file.reset();
  node.reset();
  VFS_ASSERT_OK_AND_ASSIGN(FsStat removed, fs_->StatFs(*root_));
  EXPECT_EQ(removed.free_bytes, before.free_bytes) << "a removed file's blocks are freed";
  EXPECT_EQ(removed.free_files, before.free_files);
}

TEST_F(MemoryFsTest, OffsetsBeyondTheMaximumFileSizeAreEFBIG) {
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr node, fs_->Create(*root_, "f", 0644, {}, true));
  VFS_ASSERT_OK_AND_ASSIGN(std::unique_ptr<OpenFile> file, fs_->Open(*node, true));
  VFS_EXPECT_ERRNO(file->Write(UINT64_MAX - 1, AsBytes("ab")), EFBIG);
  VFS_EXPECT_ERRNO(file->Write(uint64_t{1} << 63, AsBytes("a")), EFBIG);
  SetAttr set;
  set.size = UINT64_MAX;
  VFS_EXPECT_ERRNO(fs_->SetAttr(*node, set), EFBIG);
  EXPECT_EQ(AttrOf(*node).size, 0u);
  EXPECT_EQ(AttrOf(*node).used, 0u);
  VFS_ASSERT_OK(file->Close());
}

TEST_F(MemoryFsTest, OpenFileOutlivesRemoval) {
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr node, fs_->Create(*root_, "f", 0644, {}, true));
  VFS_ASSERT_OK_AND_ASSIGN(std::unique_ptr<OpenFile> file, fs_->Open(*node, true));
  VFS_ASSERT_OK(fs_->Remove(*root_, "f"));
  // Like an open descriptor of an unlinked file: data access continues...
  VFS_ASSERT_OK(file->Write(0, AsBytes("still here")));
  std::array<std::byte, 10> buf{};
  VFS_ASSERT_OK_AND_ASSIGN(size_t n, file->Read(0, buf));
  EXPECT_EQ(conformance::AsString(std::span(buf).first(n)), "still here");
  VFS_ASSERT_OK_AND_ASSIGN(Attr attr, file->GetAttr());
  EXPECT_EQ(attr.nlink, 0u);
  // ...but the node is stale for everything else.
  VFS_EXPECT_ERRNO(fs_->GetAttr(*node), ESTALE);
  VFS_EXPECT_ERRNO(fs_->Open(*node, false), ESTALE);
  VFS_EXPECT_ERRNO(fs_->Link(*node, *root_, "back"), ESTALE);
  VFS_ASSERT_OK(file->Close());
  VFS_EXPECT_ERRNO(file->Read(0, buf), EBADF) << "closed";
}

TEST_F(MemoryFsTest, ReadDirCookiesAreInsertionNumbers) {
  VFS_ASSERT_OK(fs_->Create(*root_, "a", 0644, {}, true));
  VFS_ASSERT_OK(fs_->Create(*root_, "b", 0644, {}, true));
  VFS_ASSERT_OK(fs_->Create(*root_, "c", 0644, {}, true));
  VFS_ASSERT_OK(fs_->Remove(*root_, "b"));
  VFS_ASSERT_OK(fs_->Rename(*root_, "a", *root_, "z"));  // a rename is a new insertion
  std::vector<std::pair<std::string, uint64_t>> got;
  VFS_ASSERT_OK_AND_ASSIGN(bool eof, fs_->ReadDir(*root_, 0, [&](const DirEntry& e) {
    got.emplace_back(std::string(e.name), e.cookie);
    return true;
  }));
  EXPECT_TRUE(eof);
  const std::vector<std::pair<std::string, uint64_t>> want = {
      {".", 1}, {"..", 2}, {"c", 5}, {"z", 6}};
  EXPECT_EQ(got, want);
  // Resuming after a removed entry's cookie still works.
  got.clear();
  VFS_ASSERT_OK(fs_->ReadDir(*root_, 4, [&](const DirEntry& e) {
    got.emplace_back(std::string(e.name), e.cookie);
    return true;
  }));
  EXPECT_EQ(got, (std::vector<std::pair<std::string, uint64_t>>{{"c", 5}, {"z", 6}}));
}

TEST_F(MemoryFsTest, ReadDirEmitMayCallBackIntoTheFilesystem) {
  // More entries than one internal batch, and an emit that looks each one up: ReadDir must
  // not hold its lock while emitting.
  constexpr int kEntries = 300;
  for (int i = 0; i < kEntries; ++i) {
    VFS_ASSERT_OK(fs_->Create(*root_, "f" + std::to_string(i), 0644, {}, true));
  }
  int found = 0;
  VFS_ASSERT_OK_AND_ASSIGN(bool eof, fs_->ReadDir(*root_, 0, [&](const DirEntry& e) {
    if (e.name == "." || e.name == "..") return true;
    Result<NodePtr> node = fs_->Lookup(*root_, e.name);
    if (node && fs_->GetAttr(**node).value_or(Attr{}).fileid == e.fileid) ++found;
    // Adding entries meanwhile must not disturb the listing in progress.
    if (e.name == "f0") (void)fs_->Create(*root_, "late", 0644, {}, true);
    return true;
  }));
  EXPECT_TRUE(eof);
  EXPECT_GE(found, kEntries);
}

TEST_F(MemoryFsTest, TimestampsIncreaseAcrossFiles) {
  // One clock for all files: whatever happens later carries a later time.
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr a, fs_->Create(*root_, "a", 0644, {}, true));
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr b, fs_->Create(*root_, "b", 0644, {}, true));
  EXPECT_GT(AttrOf(*b).ctime, AttrOf(*a).ctime);
  EXPECT_GT(AttrOf(*root_).mtime, AttrOf(*b).mtime);
}

TEST_F(MemoryFsTest, DeepTreeIsDestroyedWithoutRecursion) {
  NodePtr dir = root_;
  for (int i = 0; i < 20'000; ++i) {
    VFS_ASSERT_OK_AND_ASSIGN(dir, fs_->Mkdir(*dir, "d", 0755, {}));
  }
  dir.reset();
  root_.reset();
  fs_.reset();  // must not overflow the stack
}

TEST_F(MemoryFsTest, MknodRejectsNonSpecialTypes) {
  VFS_EXPECT_ERRNO(fs_->Mknod(*root_, "x", FileType::kRegular, 0644, 0, 0, {}), EINVAL);
  VFS_EXPECT_ERRNO(fs_->Mknod(*root_, "x", FileType::kDirectory, 0644, 0, 0, {}), EINVAL);
  VFS_ASSERT_OK_AND_ASSIGN(NodePtr fifo, fs_->Mknod(*root_, "p", FileType::kFifo, 0644, 5, 6, {}));
  EXPECT_EQ(AttrOf(*fifo).rdev_major, 0u) << "a fifo has no device number";
}

}  // namespace
}  // namespace nfsx::vfs
