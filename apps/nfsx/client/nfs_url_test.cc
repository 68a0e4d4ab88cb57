#include "apps/nfsx/client/nfs_url.h"

#include <gtest/gtest.h>

#include "apps/nfsx/client/endpoints.h"

namespace nfsx::app::cli {
namespace {

TEST(NfsUrl, Splits) {
  auto u = SplitNfsUrl("nfs://127.0.0.1:2049/srv/export/dir/?version=3&mountport=20048");
  ASSERT_TRUE(u.has_value());
  EXPECT_EQ(u->authority, "127.0.0.1:2049");
  EXPECT_EQ(u->path, "/srv/export/dir");
  EXPECT_EQ(u->query, "version=3&mountport=20048");
  EXPECT_EQ(u->ServerKey(), "127.0.0.1:2049?version=3&mountport=20048");
}

TEST(NfsUrl, HostOnlyAndIpv6) {
  auto u = SplitNfsUrl("nfs://server");
  ASSERT_TRUE(u.has_value());
  EXPECT_EQ(u->authority, "server");
  EXPECT_EQ(u->path, "/");
  EXPECT_EQ(u->query, "");
  auto v6 = SplitNfsUrl("nfs://[::1]:2049/e?version=3");
  ASSERT_TRUE(v6.has_value());
  EXPECT_EQ(v6->authority, "[::1]:2049");
  EXPECT_EQ(v6->path, "/e");
}

TEST(NfsUrl, DecodesPercentEscapes) {
  auto u = SplitNfsUrl("nfs://h/e/a%20b%3Fc%25");
  ASSERT_TRUE(u.has_value());
  EXPECT_EQ(u->path, "/e/a b?c%");
}

TEST(NfsUrl, ResolvesDotSegmentsAsUrlsDo) {
  EXPECT_EQ(SplitNfsUrl("nfs://h/e/a/../b/./c")->path, "/e/b/c");
  EXPECT_EQ(SplitNfsUrl("nfs://h/e/../../..")->path, "/");
  EXPECT_EQ(SplitNfsUrl("nfs://h//e//")->path, "/e");
}

TEST(NfsUrl, LastComponentAsWritten) {
  EXPECT_EQ(LastComponentAsWritten("nfs://h/e/a/..?version=3"), "..");
  EXPECT_EQ(LastComponentAsWritten("nfs://h/e/a/./"), ".");
  EXPECT_EQ(LastComponentAsWritten("nfs://h/e/a"), "a");
  EXPECT_EQ(LastComponentAsWritten("nfs://h"), "");
  EXPECT_EQ(LastComponentAsWritten("nfs://h/"), "");
}

TEST(NfsUrl, RejectsWhatIsNotAUrl) {
  EXPECT_FALSE(IsNfsUrl("/local/path"));
  EXPECT_FALSE(IsNfsUrl("nfs:/h/e"));
  EXPECT_TRUE(IsNfsUrl("nfs://h/e"));
  EXPECT_EQ(SplitNfsUrl("nfs:///e"), std::nullopt);
  EXPECT_EQ(SplitNfsUrl("nfs://h/e%zz"), std::nullopt);
  EXPECT_EQ(SplitNfsUrl("nfs://h/e%2"), std::nullopt);
  EXPECT_EQ(SplitNfsUrl("http://h/e"), std::nullopt);
}

TEST(NfsUrl, BuildsWhatParsesBack) {
  UrlParts p{"h:1", "/e/a b?c%#d", "version=3"};
  std::string url = BuildNfsUrl(p);
  EXPECT_EQ(url, "nfs://h:1/e/a%20b%3Fc%25%23d?version=3");
  auto back = SplitNfsUrl(url);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->path, p.path);
  EXPECT_EQ(back->query, p.query);
  EXPECT_EQ(BuildNfsUrl(UrlParts{"h", "/é", ""}), "nfs://h/é");  // UTF-8 stays legible
}

TEST(NfsUrl, ChildKeepsTheQuery) {
  auto u = SplitNfsUrl("nfs://h/e/dir?version=3&nfsport=1");
  ASSERT_TRUE(u.has_value());
  EXPECT_EQ(ChildUrl(*u, "f?x"), "nfs://h/e/dir/f%3Fx?version=3&nfsport=1");
  EXPECT_EQ(ChildUrl(UrlParts{"h", "/", ""}, "e"), "nfs://h/e");
}

TEST(Endpoints, SourceNameIsTheLastComponent) {
  EXPECT_EQ(SourceName("dir/sub/"), "sub");
  EXPECT_EQ(SourceName("file"), "file");
  EXPECT_EQ(SourceName("/"), "");
  EXPECT_EQ(SourceName("nfs://h/e/dir/?version=3"), "dir");
  EXPECT_EQ(SourceName("nfs://h/e/a%20b"), "a b");
  EXPECT_EQ(SourceName("nfs://h/"), "");
}

}  // namespace
}  // namespace nfsx::app::cli
