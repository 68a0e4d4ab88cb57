// What must survive a restart, what a write-back error does to verifiers, and
// what a retransmitted non-idempotent call gets back.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "server/testing/server_fixture.h"

namespace nfsx::server::testing {
namespace {

using vfs::FaultOp;

class RestartTest : public ServerTest {};

TEST_P(RestartTest, HandlesSurviveARestartAndTheVerifierChanges) {
  nfs_fh3 fh = MustCreate("persist");
  auto w1 = WriteTo(fh, 0, "before restart", FILE_SYNC);
  ASSERT_EQ(w1.status, NFS3_OK);
  harness_->Stop();
  harness_->Start();
  nfs_ = harness_->Connect(harness_->server().nfs_port());
  EXPECT_EQ(ReadFrom(fh, 0, 100), "before restart");  // the old handle still works
  auto w2 = WriteTo(fh, 0, "after");
  ASSERT_EQ(w2.status, NFS3_OK);
  EXPECT_NE(w2.resok.verf, w1.resok.verf);
  EXPECT_EQ(Call<GETATTR3res>(nfsproc3::GETATTR, GETATTR3args{root_}).status, NFS3_OK);
}

INSTANTIATE_TEST_SUITE_P(Backends, RestartTest, ::testing::Values(BackendKind::kLocal),
                         BackendName);

class FaultTest : public ServerTest {};

TEST_P(FaultTest, FailedCommitIsAnErrorAndRotatesOnlyThatFilesVerifier) {
  nfs_fh3 bad = MustCreate("bad"), good = MustCreate("good");
  auto wb = WriteTo(bad, 0, "data");
  auto wg = WriteTo(good, 0, "data");
  ASSERT_EQ(wb.resok.verf, wg.resok.verf);
  harness_->faults().FailOnFile(FaultOp::kSync, AttrOf(bad).fileid, EIO, 1);
  auto c = Call<COMMIT3res>(nfsproc3::COMMIT, COMMIT3args{bad, 0, 0});
  EXPECT_EQ(c.status, NFS3ERR_IO);
  auto again = WriteTo(bad, 0, "data");
  EXPECT_NE(again.resok.verf, wb.resok.verf) << "clients must learn that data may be lost";
  auto cg = Call<COMMIT3res>(nfsproc3::COMMIT, COMMIT3args{good, 0, 0});
  ASSERT_EQ(cg.status, NFS3_OK);
  EXPECT_EQ(cg.resok.verf, wg.resok.verf) << "other files keep their verifier";
  auto cb = Call<COMMIT3res>(nfsproc3::COMMIT, COMMIT3args{bad, 0, 0});
  ASSERT_EQ(cb.status, NFS3_OK);
  EXPECT_EQ(cb.resok.verf, again.resok.verf);
}

// A SETATTR on a `sync` export (the default) syncs the file through the descriptor WRITE
// and COMMIT use; fsync(2) tells a write-back error once, so the COMMIT after it would
// succeed over lost data. Before, the SETATTR failed and the verifier stayed.
TEST_P(FaultTest, FailedSyncOfASetattrRotatesTheVerifier) {
  nfs_fh3 fh = MustCreate("setattr-sync");
  auto w = WriteTo(fh, 0, "unstable data");
  ASSERT_EQ(w.status, NFS3_OK);
  harness_->faults().FailOnFile(FaultOp::kSync, AttrOf(fh).fileid, EIO, 1);
  SETATTR3args sa;
  sa.object = fh;
  sa.new_attributes.mode = 0600;
  EXPECT_EQ(Call<SETATTR3res>(nfsproc3::SETATTR, sa).status, NFS3ERR_IO);
  auto c = Call<COMMIT3res>(nfsproc3::COMMIT, COMMIT3args{fh, 0, 0});
  ASSERT_EQ(c.status, NFS3_OK);
  EXPECT_NE(c.resok.verf, w.resok.verf) << "the COMMIT claims data the failed sync lost";
}

TEST_P(FaultTest, FailedStableWriteIsAnErrorNotADowngrade) {
  nfs_fh3 fh = MustCreate("stable");
  harness_->faults().FailOnFile(FaultOp::kSync, AttrOf(fh).fileid, EIO, 1);
  auto w = WriteTo(fh, 0, "must be on disk", FILE_SYNC);
  EXPECT_EQ(w.status, NFS3ERR_IO);
  ASSERT_TRUE(w.resfail.wcc.after.has_value());
}

TEST_P(FaultTest, ErrorWhenAnEvictedDescriptorIsClosedRotatesTheVerifier) {
  nfs_fh3 fh = MustCreate("evicted");
  auto w = WriteTo(fh, 0, "unstable data");
  ASSERT_EQ(w.status, NFS3_OK);
  harness_->faults().FailOnFile(FaultOp::kClose, AttrOf(fh).fileid, EIO, 1);
  harness_->server().core().open_files().CloseAll();
  auto c = Call<COMMIT3res>(nfsproc3::COMMIT, COMMIT3args{fh, 0, 0});
  ASSERT_EQ(c.status, NFS3_OK);
  EXPECT_NE(c.resok.verf, w.resok.verf);
}

TEST_P(FaultTest, BackendErrorsBecomeProtocolErrors) {
  nfs_fh3 fh = MustCreate("enospc");
  harness_->faults().FailNext(FaultOp::kWrite, ENOSPC);
  EXPECT_EQ(WriteTo(fh, 0, "x").status, NFS3ERR_NOSPC);
  harness_->faults().FailNext(FaultOp::kCreate, EDQUOT);
  EXPECT_EQ(CreateIn(root_, "quota").status, NFS3ERR_DQUOT);
  EXPECT_EQ(WriteTo(fh, 0, "x").status, NFS3_OK);
}

INSTANTIATE_TEST_SUITE_P(Backends, FaultTest,
                         ::testing::Values(BackendKind::kMemory, BackendKind::kLocal), BackendName);

// Sends one record on a new connection and reads one record back.
std::vector<std::byte> RawCall(uint16_t port, const std::vector<std::byte>& call) {
  int fd = rpc::testing::RawLoopbackSocket(port);
  std::vector<std::byte> out;
  rpc::testing::AppendRecord(&out, call);
  EXPECT_TRUE(rpc::testing::WriteAll(fd, out));
  auto reply = rpc::testing::ReadRecord(fd);
  close(fd);
  return reply;
}

TEST_P(FaultTest, RetransmittedRenameGetsTheOriginalReplyOnANewConnection) {
  MustCreate("old");
  RENAME3args rn{{root_, {"old"}}, {root_, {"new"}}};
  auto call =
      rpc::testing::CallBytes(0x5eed, NFS_PROGRAM, NFS_V3, static_cast<uint32_t>(nfsproc3::RENAME),
                              cred_, [&](xdr::XdrEncoder& e) { e(rn); });
  auto first = RawCall(harness_->server().nfs_port(), call);
  auto second = RawCall(harness_->server().nfs_port(), call);  // a new source port
  EXPECT_EQ(first, second);
  xdr::XdrDecoder d(second);
  rpc::ReplyHeader h;
  ASSERT_TRUE(rpc::DecodeReplyHeader(d, &h));
  RENAME3res res;
  d(res);
  EXPECT_EQ(res.status, NFS3_OK) << "a re-executed RENAME would say NOENT";
  EXPECT_EQ(LookupIn(root_, "new").status, NFS3_OK);
}

}  // namespace
}  // namespace nfsx::server::testing
