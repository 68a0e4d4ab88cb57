// The end of a mount: the notification thread stops before the session's fd is
// closed, and dirty data still reaches the server afterwards.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "client/testing/test_servers.h"
#include "client/url.h"
#include "fuse/nfs_fuse.h"

namespace nfsx::fuse {
namespace {

using client::testing::Bytes;
using client::testing::NfsxServer;

TEST(NfsFuseUnmount, NotificationsStopBeforeTheSessionIsClosedAndDirtyDataIsFlushedAfter) {
  NfsxServer server;
  std::string why;
  ASSERT_TRUE(server.Start(&why)) << why;
  std::string error, rest;
  auto url = client::ParseNfsUrl(server.Url(""), ClientOptions{}, &error);
  ASSERT_TRUE(url.has_value()) << error;
  auto core = client::ClientCore::Mount(*url, &rest, &error);
  ASSERT_TRUE(core.has_value()) << error;
  client::InodePtr root = (*core)->root();
  MountOptions mo;
  mo.caller_identity = false;
  NfsFuse fs(std::move(*core), root, mo, "test");

  auto file = fs.core().Create(root, "dirty.txt", 0644, false, true);
  ASSERT_TRUE(file.has_value());
  ASSERT_TRUE(fs.core().Write(*file, 0, Bytes("unflushed"), client::WriteMode::kBuffered));

  // No session: the thread runs, and would only get EINVAL if asked to send.
  fs.Start(nullptr);
  ASSERT_TRUE(fs.notifying());
  bool unmounted = false;
  auto flushed = fs.Unmount([&] {
    // Here fuse_session_unmount closes the fd the notifications are written to.
    EXPECT_FALSE(fs.notifying());
    unmounted = true;
  });
  EXPECT_TRUE(unmounted);
  EXPECT_TRUE(flushed.has_value());
  std::ifstream in(server.dir() + "/dirty.txt");
  std::stringstream disk;
  disk << in.rdbuf();
  EXPECT_EQ(disk.str(), "unflushed");
}

}  // namespace
}  // namespace nfsx::fuse
