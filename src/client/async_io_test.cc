// The async API's O_DIRECT reads and writes hold no thread while in flight: one
// thread keeps hundreds out at once (with worker threads doing blocking calls it
// could never have more than the workers), their data lands where it belongs
// whatever order the replies come in, and a flush or COMMIT of the file waits for
// the writes still out, so that an fsync covers them and nothing is lost.
#include <atomic>
#include <fstream>
#include <mutex>
#include <thread>

#include "client/client_core.h"
#include "client/testing/holding_proxy.h"
#include "client/testing/test_servers.h"
#include "client/url.h"
#include "rpc/test_util.h"

namespace nfsx::client::testing {
namespace {

using rpc::testing::WaitFor;

constexpr size_t kBlock = 4096;
constexpr size_t kBlocks = 256;
constexpr auto kRead = static_cast<size_t>(nfs3::nfsproc3::READ);
constexpr auto kWrite = static_cast<size_t>(nfs3::nfsproc3::WRITE);

class AsyncIoTest : public ClientTest {
 protected:
  void SetUp() override {
    ClientTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    old_ = Pattern(kBlock * kBlocks, 21);
    std::ofstream(server_->dir() + "/data.bin", std::ios::binary) << old_;
  }
  std::unique_ptr<Client> ConnectTo(const std::string& url) {
    std::string error;
    auto c = Client::Connect(url, ClientOptions{}, &error);
    EXPECT_TRUE(c.has_value()) << error;
    return c ? std::move(*c) : nullptr;
  }
  std::string ServerFile() const {
    std::ifstream in(server_->dir() + "/data.bin", std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
  }

  std::string old_;
};

// Counts the callbacks of a batch of async calls, and the first failure among them.
struct Completions {
  std::atomic<size_t> ok{0}, failed{0};
  std::mutex mu;
  std::string first_error;  // GUARDED_BY(mu)
  File::Callback<size_t> Expect(size_t bytes) {
    return [this, bytes](Result<size_t> r) {
      if (r && *r == bytes) {
        ok.fetch_add(1);
        return;
      }
      std::lock_guard lock(mu);
      if (first_error.empty()) {
        first_error = r ? "short: " + std::to_string(*r) : ErrorString(r.error());
      }
      failed.fetch_add(1);
    };
  }
  size_t done() const { return ok.load() + failed.load(); }
};

// 256 READs, none answered: every one is out on the wire at once, from one thread.
// Closing the client then fails each exactly once.
TEST_P(AsyncIoTest, OneThreadKeepsHundredsOfDirectReadsInFlight) {
  HoldingProxy proxy(NfsPortOf(server_->Url("")));
  auto client = ConnectTo(WithNfsPort(server_->Url(""), proxy.port()));
  ASSERT_TRUE(client);
  auto file = client->Open("data.bin", O_RDONLY | O_DIRECT);
  ASSERT_TRUE(file.has_value());
  proxy.HoldReadsFrom(0);
  const uint64_t before = client->stats().nfs_calls[kRead];
  std::vector<std::byte> buf(kBlock * kBlocks);
  Completions c;
  for (size_t i = 0; i < kBlocks; ++i) {
    (*file)->PreadAsync(std::span(buf).subspan(i * kBlock, kBlock), i * kBlock, c.Expect(kBlock));
  }
  uint64_t sent = 0;
  bool all_out =
      WaitFor([&] { return (sent = client->stats().nfs_calls[kRead] - before) >= kBlocks; });
  EXPECT_TRUE(all_out) << "READs sent: " << sent << " of " << kBlocks;
  EXPECT_EQ(c.done(), 0u) << "no reply came, yet a read ended";
  file->reset();
  client.reset();  // fails what is in flight
  EXPECT_EQ(c.failed.load(), kBlocks);
  EXPECT_EQ(c.ok.load(), 0u);
}

// From one thread, over four connections: a READ of every even block and a WRITE of
// every odd one, all out together. Each read gets the old bytes of its block; after
// the fsync the file on the server holds the new odd blocks, the even ones as they were.
TEST_P(AsyncIoTest, DirectReadsAndWritesFromOneThreadLandWhereTheyBelong) {
  auto client = ConnectTo(server_->Url("") + "&nconnect=4");
  ASSERT_TRUE(client);
  auto file = client->Open("data.bin", O_RDWR | O_DIRECT);
  ASSERT_TRUE(file.has_value());
  const std::string fresh = Pattern(kBlock * kBlocks, 22);
  std::vector<std::byte> got(kBlock * kBlocks);
  const WireStats before = client->stats();
  Completions c;
  for (size_t i = 0; i < kBlocks; ++i) {
    if (i % 2 == 0) {
      (*file)->PreadAsync(std::span(got).subspan(i * kBlock, kBlock), i * kBlock, c.Expect(kBlock));
    } else {
      (*file)->PwriteAsync(Bytes(fresh).subspan(i * kBlock, kBlock), i * kBlock, c.Expect(kBlock));
    }
  }
  ASSERT_TRUE(WaitFor([&] { return c.done() == kBlocks; })) << c.done() << " of " << kBlocks;
  {
    std::lock_guard lock(c.mu);
    ASSERT_EQ(c.failed.load(), 0u) << c.first_error;
  }
  const WireStats after = client->stats();
  EXPECT_EQ(after.nfs_calls[kRead] - before.nfs_calls[kRead], kBlocks / 2);
  EXPECT_EQ(after.nfs_calls[kWrite] - before.nfs_calls[kWrite], kBlocks / 2);
  for (size_t i = 0; i < kBlocks; i += 2) {
    ASSERT_EQ(0, std::memcmp(got.data() + i * kBlock, old_.data() + i * kBlock, kBlock))
        << "block " << i;
  }
  ASSERT_TRUE((*file)->Fsync().has_value());
  const std::string now = ServerFile();
  ASSERT_EQ(now.size(), old_.size());
  for (size_t i = 0; i < kBlocks; ++i) {
    const std::string& want = i % 2 ? fresh : old_;
    ASSERT_EQ(0, now.compare(i * kBlock, kBlock, want, i * kBlock, kBlock)) << "block " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Servers, AsyncIoTest, ::testing::Values(Peer::kNfsx, Peer::kGanesha),
                         PeerName);

class AsyncWriteFlushTest : public AsyncIoTest {};

// An fsync that comes while an async WRITE is out waits for its reply, then COMMITs it:
// sent beside that WRITE, its COMMIT could not cover it, and the fsync would return
// with the write not on disk.
TEST_P(AsyncWriteFlushTest, AnFsyncWaitsForTheWriteInFlightAndCommitsIt) {
  HoldingProxy proxy(NfsPortOf(server_->Url("")));
  std::string error, rest;
  auto url = ParseNfsUrl(WithNfsPort(server_->Url(""), proxy.port()), ClientOptions{}, &error);
  ASSERT_TRUE(url.has_value()) << error;
  auto core = ClientCore::Mount(*url, &rest, &error);
  ASSERT_TRUE(core.has_value()) << error;
  auto ino = (*core)->Lookup((*core)->root(), "data.bin");
  ASSERT_TRUE(ino.has_value());
  const std::string fresh = Pattern(kBlock, 23);
  proxy.HoldReplyAt(nfs3::nfsproc3::WRITE, kBlock);
  std::atomic<bool> written{false};
  ClientCore::IoDone done = [&](Result<size_t> r) { written.store(r && *r == kBlock); };
  ASSERT_TRUE((*core)->StartWriteDirect(*ino, kBlock, Bytes(fresh), done));
  ASSERT_TRUE(proxy.WaitReplyHeld());
  Result<void> synced = Fail(EINPROGRESS);
  std::thread fsync([&] { synced = (*core)->Flush(*ino, true); });
  auto waiting = [&] {
    std::lock_guard lock((*ino)->wb_mu);
    return (*ino)->waits_for_async_writes > 0;
  };
  bool waited = WaitFor(waiting);
  proxy.ReleaseHeldReply();
  fsync.join();
  EXPECT_TRUE(waited) << "the fsync did not wait for the WRITE in flight";
  ASSERT_TRUE(synced.has_value()) << ErrorString(synced.error());
  // `done` runs after the count the fsync waited on is lowered: it may still be coming.
  EXPECT_TRUE(WaitFor([&] { return written.load(); }));
  {
    std::lock_guard lock((*ino)->wb_mu);
    EXPECT_TRUE((*ino)->unstable.empty()) << "the fsync returned with the write uncommitted";
  }
  EXPECT_EQ(ServerFile().substr(kBlock, kBlock), fresh);
}

INSTANTIATE_TEST_SUITE_P(Nfsx, AsyncWriteFlushTest, ::testing::Values(Peer::kNfsx), PeerName);

}  // namespace
}  // namespace nfsx::client::testing
