// The event loops do not wait on the disk: a READ of data not in the page cache
// moves to a worker, and the loop goes on serving every other connection.
#include <future>
#include <string>

#include "server/testing/server_fixture.h"

namespace nfsx::server::testing {
namespace {

class OffLoopIoTest : public ServerTest {
 protected:
  // One loop for every connection: a loop stuck in a read would stop them all.
  OffLoopIoTest() {
    tune_ = [](server::ServerOptions& o) { o.transport.io_threads = 1; };
  }
};

TEST_P(OffLoopIoTest, AReadWaitingOnTheDiskDoesNotHoldUpOtherConnections) {
  nfs_fh3 fh = MustCreate("cold");
  std::string data(64 << 10, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 7 + 3);
  ASSERT_EQ(WriteTo(fh, 0, data, FILE_SYNC).status, NFS3_OK);
  // Another client on the same loop; it gives up after a minute, so that a loop held
  // by the read below fails the test instead of hanging it.
  rpc::RpcClientOptions patient;
  patient.timeout = std::chrono::seconds(60);
  patient.max_retransmits = 0;
  auto other = harness_->Connect(harness_->server().nfs_port(), patient);
  ASSERT_TRUE(other);

  harness_->faults().HoldReads();
  auto read = std::async(std::launch::async, [&] { return ReadFrom(fh, 0, data.size()); });
  ASSERT_TRUE(rpc::testing::WaitFor([&] { return harness_->faults().reads_held() == 1; }))
      << "the READ never reached the disk";
  auto attr = client::CallSync<GETATTR3res>(*other, NFS_PROGRAM, NFS_V3,
                                            static_cast<uint32_t>(nfsproc3::GETATTR), cred_,
                                            GETATTR3args{fh});
  harness_->faults().ReleaseReads();
  ASSERT_TRUE(attr.has_value()) << "the event loop waited for a READ on the disk";
  EXPECT_EQ(attr->status, NFS3_OK);
  EXPECT_TRUE(read.get() == data) << "the READ moved to a worker answered wrongly";
  EXPECT_EQ(harness_->server().transport().counters().moved_off_loop.load(), 1u);

  // Cached data is read on the loop, as before.
  EXPECT_TRUE(ReadFrom(fh, 0, data.size()) == data);
  EXPECT_EQ(harness_->server().transport().counters().moved_off_loop.load(), 1u);
}

// Clients that disconnect while their READs wait on the disk: the workers finish
// them, the replies go nowhere, and the server goes on (run under ASan and TSan).
TEST_P(OffLoopIoTest, ClientsThatLeaveWhileTheirReadsWaitOnTheDisk) {
  nfs_fh3 fh = MustCreate("cold");
  std::string data(256 << 10, 'z');
  ASSERT_EQ(WriteTo(fh, 0, data, FILE_SYNC).status, NFS3_OK);
  harness_->faults().HoldReads();
  constexpr int kClients = 4, kReadsEach = 8;
  for (int c = 0; c < kClients; ++c) {
    int fd = rpc::testing::RawLoopbackSocket(harness_->server().nfs_port());
    std::vector<std::byte> calls;
    for (int i = 0; i < kReadsEach; ++i) {
      rpc::testing::AppendRecord(
          &calls, rpc::testing::CallBytes(
                      static_cast<uint32_t>(c * 100 + i), NFS_PROGRAM, NFS_V3,
                      static_cast<uint32_t>(nfsproc3::READ), cred_, [&](xdr::XdrEncoder& e) {
                        e(READ3args{fh, static_cast<uint64_t>(i) << 15, 32u << 10});
                      }));
    }
    ASSERT_EQ(::write(fd, calls.data(), calls.size()), static_cast<ssize_t>(calls.size()));
    // Leaves once all its READs went to the workers (some wait on the disk, the
    // rest for a worker).
    auto& moved = harness_->server().transport().counters().moved_off_loop;
    ASSERT_TRUE(rpc::testing::WaitFor(
        [&] { return moved.load() == static_cast<uint64_t>((c + 1) * kReadsEach); }));
    ::close(fd);
  }
  harness_->faults().ReleaseReads();
  EXPECT_TRUE(ReadFrom(fh, 0, data.size()) == data) << "the server stopped serving";
  ASSERT_TRUE(rpc::testing::WaitFor([&] {
    return harness_->server().transport().counters().open.load() == 2;
  })) << "connections of clients that left are still open";  // ours: NFS and MOUNT
}

INSTANTIATE_TEST_SUITE_P(Backends, OffLoopIoTest,
                         ::testing::Values(BackendKind::kMemory, BackendKind::kLocal), BackendName);

}  // namespace
}  // namespace nfsx::server::testing
