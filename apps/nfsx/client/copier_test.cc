// The copy logic on two local trees: the same code runs between NFS trees, where the
// shell tests in tests/cli check it end to end.
#include "apps/nfsx/client/copier.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace nfsx::app::cli {
namespace {

namespace fs = std::filesystem;

class CopierTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/nfsx-copier-test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    tree_ = MakeLocalTree();
  }
  void TearDown() override { fs::remove_all(dir_); }

  Location At(const std::string& rel) { return Location{tree_.get(), dir_ + "/" + rel, rel}; }
  void Write(const std::string& rel, const std::string& data, mode_t mode = 0644) {
    std::ofstream(dir_ + "/" + rel, std::ios::binary) << data;
    ASSERT_EQ(chmod((dir_ + "/" + rel).c_str(), mode), 0);
  }
  std::string Read(const std::string& rel) {
    std::ifstream in(dir_ + "/" + rel, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  mode_t Mode(const std::string& rel) {
    struct stat st;
    EXPECT_EQ(lstat((dir_ + "/" + rel).c_str(), &st), 0) << rel;
    return st.st_mode & 07777;
  }

  std::string dir_;
  std::unique_ptr<Tree> tree_;
  Reporter report_{"cp"};
};

TEST_F(CopierTest, CopiesAFileLargerThanTheBuffer) {
  std::string data(Copier::kBufferBytes * 2 + 17, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 131 % 251);
  Write("src", data, 0640);
  Copier copier(CopyOptions{false, false, 022}, &report_);
  copier.Copy(At("src"), At("dst"));
  EXPECT_FALSE(report_.failed());
  EXPECT_EQ(Read("dst"), data);
  EXPECT_EQ(Mode("dst"), 0640u);
  EXPECT_EQ(copier.CountBytes(At("src")), data.size());
}

TEST_F(CopierTest, NewFilesGetTheSourceModeLessTheUmask) {
  Write("src", "x", 0666);
  Copier copier(CopyOptions{false, false, 027}, &report_);
  copier.Copy(At("src"), At("dst"));
  EXPECT_EQ(Mode("dst"), 0640u);
}

TEST_F(CopierTest, ReadOnlySourceMakesAReadOnlyCopyWithItsContent) {
  Write("src", "read only", 0444);
  Copier copier(CopyOptions{false, false, 022}, &report_);
  copier.Copy(At("src"), At("dst"));
  EXPECT_FALSE(report_.failed());
  EXPECT_EQ(Read("dst"), "read only");
  EXPECT_EQ(Mode("dst"), 0444u);
}

TEST_F(CopierTest, OverwritingKeepsTheTargetModeUnlessPreserving) {
  Write("src", "new", 0600);
  Write("dst", "old old old", 0664);
  Copier plain(CopyOptions{false, false, 022}, &report_);
  plain.Copy(At("src"), At("dst"));
  EXPECT_EQ(Read("dst"), "new");
  EXPECT_EQ(Mode("dst"), 0664u);
  Copier preserving(CopyOptions{false, true, 022}, &report_);
  preserving.Copy(At("src"), At("dst"));
  EXPECT_EQ(Mode("dst"), 0600u);
  EXPECT_FALSE(report_.failed());
}

TEST_F(CopierTest, PreserveKeepsTimesAndSpecialBits) {
  Write("src", "p", 02755);
  timespec times[2] = {{1000000000, 123456789}, {1200000000, 987654321}};
  ASSERT_EQ(utimensat(AT_FDCWD, (dir_ + "/src").c_str(), times, 0), 0);
  Copier copier(CopyOptions{false, true, 077}, &report_);
  copier.Copy(At("src"), At("dst"));
  EXPECT_FALSE(report_.failed());
  struct stat st;
  ASSERT_EQ(stat((dir_ + "/dst").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 02755u);
  EXPECT_EQ(st.st_mtim.tv_sec, 1200000000);
  EXPECT_EQ(st.st_mtim.tv_nsec, 987654321);
  EXPECT_EQ(st.st_atim.tv_sec, 1000000000);
}

TEST_F(CopierTest, RecursiveCopiesDirectoriesFilesAndSymlinks) {
  fs::create_directories(dir_ + "/t/a/b");
  Write("t/top", "top");
  Write("t/a/b/deep", "deep", 0600);
  fs::create_symlink("../top", dir_ + "/t/a/up");
  fs::create_symlink("missing", dir_ + "/t/dangling");
  ASSERT_EQ(chmod((dir_ + "/t/a").c_str(), 0750), 0);
  Copier copier(CopyOptions{true, false, 022}, &report_);
  copier.Copy(At("t"), At("u"));
  EXPECT_FALSE(report_.failed());
  EXPECT_EQ(Read("u/top"), "top");
  EXPECT_EQ(Read("u/a/b/deep"), "deep");
  EXPECT_EQ(Mode("u/a/b/deep"), 0600u);
  EXPECT_EQ(Mode("u/a"), 0750u);
  EXPECT_EQ(fs::read_symlink(dir_ + "/u/a/up"), "../top");
  EXPECT_EQ(fs::read_symlink(dir_ + "/u/dangling"), "missing");
  EXPECT_EQ(copier.CountBytes(At("t")), 7u);
}

TEST_F(CopierTest, DirectoryWithoutRecursiveIsAnError) {
  fs::create_directories(dir_ + "/d");
  Copier copier(CopyOptions{false, false, 022}, &report_);
  copier.Copy(At("d"), At("e"));
  EXPECT_TRUE(report_.failed());
  EXPECT_FALSE(fs::exists(dir_ + "/e"));
}

TEST_F(CopierTest, WithoutRecursiveASymlinkIsFollowed) {
  Write("target", "through the link");
  fs::create_symlink("target", dir_ + "/link");
  Copier copier(CopyOptions{false, false, 022}, &report_);
  copier.Copy(At("link"), At("copy"));
  EXPECT_FALSE(fs::is_symlink(dir_ + "/copy"));
  EXPECT_EQ(Read("copy"), "through the link");
}

TEST_F(CopierTest, SameFileIsRefusedAndLeftIntact) {
  Write("f", "keep me");
  fs::create_symlink("f", dir_ + "/alias");
  Copier copier(CopyOptions{false, false, 022}, &report_);
  copier.Copy(At("f"), At("alias"));
  EXPECT_TRUE(report_.failed());
  EXPECT_EQ(Read("f"), "keep me");
}

TEST_F(CopierTest, CopyIntoItselfStops) {
  fs::create_directories(dir_ + "/a/sub");
  Write("a/f", "f");
  Copier copier(CopyOptions{true, false, 022}, &report_);
  copier.Copy(At("a"), At("a/sub/copy"));
  EXPECT_TRUE(report_.failed());
  EXPECT_EQ(Read("a/sub/copy/f"), "f");
  EXPECT_FALSE(fs::exists(dir_ + "/a/sub/copy/sub/copy/sub"));
}

TEST_F(CopierTest, DirectoryOntoAFileIsAnError) {
  fs::create_directories(dir_ + "/d");
  Write("f", "file");
  Copier copier(CopyOptions{true, false, 022}, &report_);
  copier.Copy(At("d"), At("f"));
  EXPECT_TRUE(report_.failed());
  EXPECT_EQ(Read("f"), "file");
}

TEST_F(CopierTest, MissingSourceIsAnError) {
  Copier copier(CopyOptions{false, false, 022}, &report_);
  copier.Copy(At("nothing"), At("dst"));
  EXPECT_TRUE(report_.failed());
  EXPECT_FALSE(fs::exists(dir_ + "/dst"));
}

}  // namespace
}  // namespace nfsx::app::cli
