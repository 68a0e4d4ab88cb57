#include "fuse/mount_options.h"

#include <gtest/gtest.h>

namespace nfsx::fuse {
namespace {

TEST(MountOptions, MountAndClientOptions) {
  MountOptions m;
  ClientOptions c;
  std::string err;
  ASSERT_TRUE(
      ParseMountOptions("ro,actimeo=5,nconnect=4,rsize=65536,wsize=131072,direct_io,"
                        "uid=1000,gid=100,allow_other",
                        &m, &c, &err))
      << err;
  EXPECT_TRUE(m.read_only);
  EXPECT_TRUE(m.direct_io);
  EXPECT_TRUE(m.allow_other);
  EXPECT_FALSE(m.writeback_cache);
  EXPECT_EQ(m.max_names, size_t{1} << 20);
  EXPECT_EQ(c.acregmin, 5);
  EXPECT_EQ(c.acdirmax, 5);
  EXPECT_EQ(c.nconnect, 4);
  EXPECT_EQ(c.rsize, 65536u);
  EXPECT_EQ(c.wsize, 131072u);
  EXPECT_EQ(c.uid, 1000u);
  EXPECT_EQ(c.gid, 100u);
}

TEST(MountOptions, NoacAndEmptyItems) {
  MountOptions m;
  ClientOptions c;
  ASSERT_TRUE(ParseMountOptions(",noac,,rw", &m, &c, nullptr));
  EXPECT_TRUE(c.noac);
  EXPECT_FALSE(m.read_only);
}

TEST(MountOptions, ErrorsNameTheOption) {
  MountOptions m;
  ClientOptions c;
  std::string err;
  EXPECT_FALSE(ParseMountOptions("bogus", &m, &c, &err));
  EXPECT_EQ(err, "unknown mount option 'bogus'");
  EXPECT_FALSE(ParseMountOptions("nconnect=99", &m, &c, &err));
  EXPECT_NE(err.find("nconnect"), std::string::npos);
  EXPECT_FALSE(ParseMountOptions("ro=1", &m, &c, &err));
  EXPECT_NE(err.find("ro"), std::string::npos);
  EXPECT_FALSE(ParseMountOptions("max_threads=1", &m, &c, &err));
  EXPECT_FALSE(ParseMountOptions("max_names=0", &m, &c, &err));
  EXPECT_EQ(err, "bad value for max_names: '0'");
  EXPECT_FALSE(ParseMountOptions("max_names=", &m, &c, &err));
  EXPECT_FALSE(ParseMountOptions("max_names=12x", &m, &c, &err));
}

TEST(MountOptions, MaxNames) {
  MountOptions m;
  ClientOptions c;
  std::string err;
  ASSERT_TRUE(ParseMountOptions("max_names=4", &m, &c, &err)) << err;
  EXPECT_EQ(m.max_names, 4u);
}

}  // namespace
}  // namespace nfsx::fuse
