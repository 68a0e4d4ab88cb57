#include "apps/nfsx/client/ls_format.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>

#include "apps/nfsx/client/stat_format.h"

namespace nfsx::app::cli {
namespace {

class Format : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("TZ", "UTC", 1);
    tzset();
  }
};

TEST_F(Format, ModeStrings) {
  EXPECT_EQ(ModeString(FileType::kRegular, 0644), "-rw-r--r--");
  EXPECT_EQ(ModeString(FileType::kDirectory, 01777), "drwxrwxrwt");
  EXPECT_EQ(ModeString(FileType::kDirectory, 01776), "drwxrwxrwT");
  EXPECT_EQ(ModeString(FileType::kRegular, 04755), "-rwsr-xr-x");
  EXPECT_EQ(ModeString(FileType::kRegular, 02644), "-rw-r-Sr--");
  EXPECT_EQ(ModeString(FileType::kSymlink, 0777), "lrwxrwxrwx");
  EXPECT_EQ(ModeString(FileType::kFifo, 0600), "prw-------");
  EXPECT_EQ(ModeString(FileType::kCharDevice, 0), "c---------");
}

TEST_F(Format, TypeNames) {
  EXPECT_EQ(TypeName(FileType::kRegular, 0), "regular empty file");
  EXPECT_EQ(TypeName(FileType::kRegular, 1), "regular file");
  EXPECT_EQ(TypeName(FileType::kDirectory, 4096), "directory");
  EXPECT_EQ(TypeName(FileType::kSymlink, 3), "symbolic link");
}

TEST_F(Format, Times) {
  EXPECT_EQ(FullTime(Timestamp{1700000000, 123456789}), "2023-11-14 22:13:20.123456789 +0000");
  EXPECT_EQ(FullTime(Timestamp{0, 1}), "1970-01-01 00:00:00.000000001 +0000");
  EXPECT_EQ(ShortTime(Timestamp{1700000000, 999999999}), "2023-11-14 22:13");
}

Stat Make(FileType type, uint32_t mode, uint32_t nlink, uint32_t id, uint64_t size) {
  Stat st;
  st.type = type;
  st.mode = mode;
  st.nlink = nlink;
  st.uid = st.gid = id;
  st.size = size;
  return st;
}

TEST_F(Format, LongListingAlignsColumns) {
  std::vector<ListedEntry> entries = {
      {"a", Make(FileType::kRegular, 0644, 1, 0, 5), ""},
      {"bb", Make(FileType::kDirectory, 0755, 12, 65534, 4096), ""},
      {"l", Make(FileType::kSymlink, 0777, 1, 0, 1), "a"},
  };
  auto lines = FormatLongListing(entries);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], "-rw-r--r--  1     0     0    5 1970-01-01 00:00 a");
  EXPECT_EQ(lines[1], "drwxr-xr-x 12 65534 65534 4096 1970-01-01 00:00 bb");
  EXPECT_EQ(lines[2], "lrwxrwxrwx  1     0     0    1 1970-01-01 00:00 l -> a");
}

TEST_F(Format, LongListingShowsDeviceNumbers) {
  Stat dev = Make(FileType::kCharDevice, 0666, 1, 0, 0);
  dev.rdev_major = 1;
  dev.rdev_minor = 3;
  auto lines = FormatLongListing({{"null", dev, ""}});
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], "crw-rw-rw- 1 0 0 1, 3 1970-01-01 00:00 null");
}

TEST_F(Format, StatReport) {
  Stat st = Make(FileType::kRegular, 0644, 1, 0, 5);
  st.uid = 1000;
  st.gid = 100;
  st.used = 4096;
  st.fsid = 42;
  st.fileid = 1234;
  st.atime = {1700000000, 123456789};
  st.mtime = {1700000000, 1};
  EXPECT_EQ(FormatStatReport("nfs://h/e/a", st, ""),
            "  File: nfs://h/e/a\n"
            "  Size: 5               Blocks: 8          regular file\n"
            "Device: 2ah/42d\tInode: 1234        Links: 1\n"
            "Access: (0644/-rw-r--r--)  Uid: ( 1000)   Gid: (  100)\n"
            "Access: 2023-11-14 22:13:20.123456789 +0000\n"
            "Modify: 2023-11-14 22:13:20.000000001 +0000\n"
            "Change: 1970-01-01 00:00:00.000000000 +0000\n");
  Stat link = Make(FileType::kSymlink, 0777, 1, 0, 6);
  std::string report = FormatStatReport("nfs://h/e/l", link, "target");
  EXPECT_TRUE(report.starts_with("  File: nfs://h/e/l -> target\n")) << report;
  EXPECT_NE(report.find("symbolic link\n"), std::string::npos) << report;
}

}  // namespace
}  // namespace nfsx::app::cli
