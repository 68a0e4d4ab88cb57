// Errors of the export's filesystem (ENOSPC, EDQUOT, EIO, injected by the
// server's FaultInjectingFs) reach the application through fsync/close with
// their own code, never silently, and the server keeps serving everyone else.
#include <cerrno>
#include <cstring>
#include <fstream>
#include <thread>

#include "client/client_core.h"
#include "client/testing/test_servers.h"
#include "client/url.h"
#include "rpc/test_util.h"

namespace nfsx::client::testing {
namespace {

using vfs::FaultOp;

std::unique_ptr<ClientCore> MountCore(const TestServer& server) {
  std::string error, rest;
  auto url = ParseNfsUrl(server.Url(""), ClientOptions{}, &error);
  EXPECT_TRUE(url.has_value()) << error;
  if (!url) return nullptr;
  auto core = ClientCore::Mount(*url, &rest, &error);
  EXPECT_TRUE(core.has_value()) << error;
  return core ? std::move(*core) : nullptr;
}

class WriteErrorTest : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    std::string why;
    ASSERT_TRUE(server_.Start(&why)) << why;
    core_ = MountCore(server_);
    ASSERT_NE(core_, nullptr);
  }

  InodePtr MustCreate(ClientCore& core, const std::string& name) {
    auto f = core.Create(core.root(), name, 0644, false, true);
    EXPECT_TRUE(f.has_value()) << name;
    return f ? *f : nullptr;
  }

  NfsxServer server_;
  std::unique_ptr<ClientCore> core_;
};

std::string ErrnoName(const ::testing::TestParamInfo<int>& info) {
  switch (info.param) {
    case ENOSPC:
      return "ENOSPC";
    case EDQUOT:
      return "EDQUOT";
    default:
      return "EIO";
  }
}

TEST_P(WriteErrorTest, AFailedWriteIsReportedByFsyncOnceAndOthersCarryOn) {
  const int err = GetParam();
  auto victim = MustCreate(*core_, "victim");
  ASSERT_NE(victim, nullptr);
  std::string data = Pattern(256 << 10, 3);
  ASSERT_TRUE(core_->Write(victim, 0, Bytes(data), WriteMode::kBuffered));
  server_.faults().FailOnFile(FaultOp::kWrite, victim->fileid(), err);

  // Another client writes another file meanwhile, and is not touched by it.
  auto other_core = MountCore(server_);
  ASSERT_NE(other_core, nullptr);
  auto other = MustCreate(*other_core, "other");
  ASSERT_TRUE(other_core->Write(other, 0, Bytes("unaffected"), WriteMode::kBuffered));
  ASSERT_TRUE(other_core->Flush(other, true));

  auto r = core_->Flush(victim, true);
  ASSERT_FALSE(r.has_value()) << "a write the filesystem refused was reported as done";
  EXPECT_EQ(r.error().code, err) << std::strerror(r.error().code);
  server_.faults().ClearFaults();
  EXPECT_TRUE(core_->Flush(victim, true)) << "reported once, as fsync(2) does";
  // The file is usable again, and what is written now lands.
  ASSERT_TRUE(core_->Write(victim, 0, Bytes("after"), WriteMode::kBuffered));
  ASSERT_TRUE(core_->Flush(victim, true));
  std::ifstream in(server_.dir() + "/victim");
  std::string head(5, '\0');
  in.read(head.data(), 5);
  EXPECT_EQ(head, "after");
  std::ifstream o(server_.dir() + "/other");
  std::string got((std::istreambuf_iterator<char>(o)), {});
  EXPECT_EQ(got, "unaffected");
}

TEST_P(WriteErrorTest, AFailedCommitIsReportedByFsync) {
  const int err = GetParam();
  auto f = MustCreate(*core_, "commit");
  ASSERT_TRUE(core_->Write(f, 0, Bytes("data that must reach the disk"), WriteMode::kBuffered));
  server_.faults().FailOnFile(FaultOp::kSync, f->fileid(), err, 1);
  auto r = core_->Flush(f, true);
  ASSERT_FALSE(r.has_value()) << "a COMMIT the filesystem failed was reported as done";
  EXPECT_EQ(r.error().code, err) << std::strerror(r.error().code);
}

TEST_P(WriteErrorTest, AnErrorAtReleaseIsKeptForTheNextFsync) {
  const int err = GetParam();
  auto f = MustCreate(*core_, "released");
  ASSERT_TRUE(core_->Write(f, 0, Bytes("mapped pages"), WriteMode::kBuffered));
  server_.faults().FailOnFile(FaultOp::kWrite, f->fileid(), err);
  auto r = core_->Flush(f, true, /*keep_error=*/true);  // what the mount's RELEASE does
  ASSERT_FALSE(r.has_value());
  server_.faults().ClearFaults();
  auto next = core_->Flush(f, true);  // a later fsync/close of the file
  ASSERT_FALSE(next.has_value()) << "the error at release was lost";
  EXPECT_EQ(next.error().code, err);
  EXPECT_TRUE(core_->Flush(f, true));
}

INSTANTIATE_TEST_SUITE_P(Errors, WriteErrorTest, ::testing::Values(ENOSPC, EDQUOT, EIO), ErrnoName);

// A server whose filesystem writes at most 1000 bytes per pwrite answers WRITEs
// with short counts: the client sends the rest again (before, a short WRITE was
// an EIO, and the data behind it was dropped).
class ShortWriteTest : public ::testing::TestWithParam<WriteMode> {};

TEST_P(ShortWriteTest, TheRestOfAShortWriteIsSentAgain) {
  NfsxServer server;
  std::string why;
  ASSERT_TRUE(server.Start(&why)) << why;
  auto core = MountCore(server);
  ASSERT_NE(core, nullptr);
  auto f = core->Create(core->root(), "short", 0644, false, true);
  ASSERT_TRUE(f.has_value());
  server.faults().LimitWrites(1000);
  std::string data = Pattern(300'000, 8);
  auto n = core->Write(*f, 0, Bytes(data), GetParam());
  ASSERT_TRUE(n.has_value()) << std::strerror(n.error().code);
  auto flushed = core->Flush(*f, true);
  ASSERT_TRUE(flushed.has_value()) << std::strerror(flushed.error().code);
  std::ifstream in(server.dir() + "/short", std::ios::binary);
  std::string got((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(got.size(), data.size());
  EXPECT_TRUE(got == data) << "the file differs from what was written";
}

INSTANTIATE_TEST_SUITE_P(Modes, ShortWriteTest,
                         ::testing::Values(WriteMode::kBuffered, WriteMode::kDirect),
                         [](const ::testing::TestParamInfo<WriteMode>& i) {
                           return i.param == WriteMode::kBuffered ? "Buffered" : "Direct";
                         });

// A direct write whose second WRITE fails has changed its first page on the server:
// the cached pages of its whole range go with it, so a read shows the file's bytes
// (before, they went only when every WRITE succeeded).
TEST(DirectWriteErrorTest, AWriteFailingPartWayLeavesNoStalePageOfItsRange) {
  constexpr size_t kPage = 4096;
  NfsxServer server;
  std::string why;
  ASSERT_TRUE(server.Start(&why)) << why;
  ClientOptions o;
  o.wsize = kPage;
  o.max_writes_in_flight = 1;  // one WRITE after another, in order
  std::string error, rest;
  auto url = ParseNfsUrl(server.Url(""), o, &error);
  ASSERT_TRUE(url.has_value()) << error;
  auto core = ClientCore::Mount(*url, &rest, &error);
  ASSERT_TRUE(core.has_value()) << error;
  const std::string before = Pattern(4 * kPage, 1);
  std::ofstream(server.dir() + "/f", std::ios::binary) << before;
  auto f = (*core)->Lookup((*core)->root(), "f");
  ASSERT_TRUE(f.has_value());
  std::string got(before.size(), '\0');
  auto read = [&] {
    return (*core)->Read(*f, 0, std::as_writable_bytes(std::span(got)), false, nullptr);
  };
  ASSERT_EQ(read().value_or(0), before.size());  // every page cached

  server.faults().HoldWrites(1);  // the first WRITE lands, then waits
  const std::string after = Pattern(before.size(), 2);
  Result<size_t> wrote = 0;
  std::thread writer([&] { wrote = (*core)->Write(*f, 0, Bytes(after), WriteMode::kDirect); });
  bool held = rpc::testing::WaitFor([&] { return server.faults().writes_held() == 1; });
  server.faults().FailOnFile(FaultOp::kWrite, (*f)->fileid(), EIO, 1);  // the second fails
  server.faults().ReleaseWrites();
  writer.join();
  ASSERT_TRUE(held);
  ASSERT_FALSE(wrote.has_value());
  std::ifstream in(server.dir() + "/f", std::ios::binary);
  const std::string on_disk((std::istreambuf_iterator<char>(in)), {});
  ASSERT_TRUE(on_disk == after.substr(0, kPage) + before.substr(kPage)) << "not the failure meant";

  ASSERT_EQ(read().value_or(0), before.size());
  EXPECT_TRUE(got == on_disk) << "a cached page of the failed write's range is stale";
}

// NFS3ERR_JUKEBOX (the server's EAGAIN: "try again later") is retried, with
// backoff, by synchronous calls (CREATE) and by asynchronous ones (WRITE), and
// the application never sees it.
TEST(JukeboxTest, CallsTheServerAsksToRepeatAreRepeated) {
  NfsxServer server;
  std::string why;
  ASSERT_TRUE(server.Start(&why)) << why;
  auto core = MountCore(server);
  ASSERT_NE(core, nullptr);
  server.faults().FailNext(FaultOp::kCreate, EAGAIN, 2);
  auto f = core->Create(core->root(), "later", 0644, false, true);
  ASSERT_TRUE(f.has_value()) << std::strerror(f.error().code);
  EXPECT_EQ(core->channel().jukebox_retries(), 2u);

  server.faults().FailOnFile(FaultOp::kWrite, (*f)->fileid(), EAGAIN, 3);
  std::string data = Pattern(100'000, 4);
  ASSERT_TRUE(core->Write(*f, 0, Bytes(data), WriteMode::kBuffered));
  auto flushed = core->Flush(*f, true);
  ASSERT_TRUE(flushed.has_value()) << std::strerror(flushed.error().code);
  EXPECT_EQ(core->channel().jukebox_retries(), 5u);
  std::ifstream in(server.dir() + "/later", std::ios::binary);
  std::string got((std::istreambuf_iterator<char>(in)), {});
  EXPECT_TRUE(got == data);
}

}  // namespace
}  // namespace nfsx::client::testing
