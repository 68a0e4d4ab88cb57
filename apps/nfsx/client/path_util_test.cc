#include "apps/nfsx/client/path_util.h"

#include <gtest/gtest.h>

namespace nfsx::app::cli {
namespace {

TEST(PathUtil, SplitDropsEmptyAndDot) {
  EXPECT_EQ(SplitPath("/a//b/./c/"), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(SplitPath("a/../b"), (std::vector<std::string>{"a", "..", "b"}));
  EXPECT_TRUE(SplitPath("/").empty());
  EXPECT_TRUE(SplitPath("").empty());
}

TEST(PathUtil, Normalize) {
  EXPECT_EQ(NormalizePath("/a//b/./c/"), "/a/b/c");
  EXPECT_EQ(NormalizePath("a/"), "a");
  EXPECT_EQ(NormalizePath("/"), "/");
  EXPECT_EQ(NormalizePath("//"), "/");
  EXPECT_EQ(NormalizePath("."), "");
  EXPECT_EQ(NormalizePath(""), "");
  EXPECT_EQ(NormalizePath("/a/../b"), "/a/../b");  // lexical only: a may be a symlink
}

TEST(PathUtil, Join) {
  EXPECT_EQ(JoinPath("dir", "x"), "dir/x");
  EXPECT_EQ(JoinPath("dir/", "x"), "dir/x");
  EXPECT_EQ(JoinPath("", "x"), "x");
  EXPECT_EQ(JoinPath("/", "x"), "/x");
}

TEST(PathUtil, BaseAndDirName) {
  EXPECT_EQ(BaseName("/a/b"), "b");
  EXPECT_EQ(BaseName("a/b/"), "b");
  EXPECT_EQ(BaseName("b"), "b");
  EXPECT_EQ(BaseName("/"), "");
  EXPECT_EQ(DirName("/a/b"), "/a");
  EXPECT_EQ(DirName("/a"), "/");
  EXPECT_EQ(DirName("a"), "");
  EXPECT_EQ(DirName("/"), "/");
  EXPECT_EQ(DirName("a/b/"), "a");
}

TEST(PathUtil, BelowIsComponentWise) {
  EXPECT_EQ(PathBelow("/a", "/a/b/c"), "b/c");
  EXPECT_EQ(PathBelow("/a", "/a"), "");
  EXPECT_EQ(PathBelow("/a/", "/a//b"), "b");
  EXPECT_EQ(PathBelow("/", "/x/y"), "x/y");
  EXPECT_EQ(PathBelow("/a/b", "/a/bc"), std::nullopt);
  EXPECT_EQ(PathBelow("/a/b", "/a"), std::nullopt);
}

TEST(PathUtil, WithoutTail) {
  EXPECT_EQ(PathWithoutTail("/srv/e/dir/f", "dir/f"), "/srv/e");
  EXPECT_EQ(PathWithoutTail("/srv/e", ""), "/srv/e");
  EXPECT_EQ(PathWithoutTail("/srv/e/x", "x"), "/srv/e");
  EXPECT_EQ(PathWithoutTail("/x", "x"), "/");
  EXPECT_EQ(PathWithoutTail("/srv/e/x", "y"), std::nullopt);
  EXPECT_EQ(PathWithoutTail("/x", "a/x"), std::nullopt);
}

}  // namespace
}  // namespace nfsx::app::cli
