// O_DIRECT reads larger than rsize: their READs go out together (up to a
// window), land in their own slices of the caller's buffer whatever order the
// replies come in across nconnect connections, and a caller who gives up gets
// EINTR only once no reply can land in its buffer any more. Replies shorter
// than asked and the end of the file end the read exactly where one READ at a
// time would have.
#include <atomic>
#include <fstream>
#include <regex>
#include <thread>

#include "base/interruption.h"
#include "client/client_core.h"
#include "client/testing/holding_proxy.h"
#include "client/testing/test_servers.h"
#include "client/url.h"
#include "rpc/test_util.h"

namespace nfsx::client::testing {
namespace {

using rpc::testing::WaitFor;

constexpr uint32_t kPage = 4096;
constexpr size_t kBigFile = 1 << 20;
constexpr auto kRead = static_cast<size_t>(nfs3::nfsproc3::READ);

class DirectReadTest : public ClientTest {
 protected:
  void SetUp() override {
    ClientTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    big_ = Pattern(kBigFile, 11);
    std::ofstream(server_->dir() + "/big.bin", std::ios::binary) << big_;
  }

  // A core on the server, its NFS calls through `proxy` when given.
  std::unique_ptr<ClientCore> Mount(uint32_t rsize, int nconnect, const HoldingProxy* proxy) {
    std::string url = server_->Url("");
    if (proxy) {
      url = WithNfsPort(url, proxy->port());
    }
    url += "&nconnect=" + std::to_string(nconnect);
    ClientOptions o;
    o.rsize = rsize;
    std::string error, rest;
    auto parsed = ParseNfsUrl(url, o, &error);
    EXPECT_TRUE(parsed.has_value()) << error;
    if (!parsed) return nullptr;
    auto core = ClientCore::Mount(*parsed, &rest, &error);
    EXPECT_TRUE(core.has_value()) << error;
    return core ? std::move(*core) : nullptr;
  }

  static Result<size_t> ReadDirect(ClientCore& core, const InodePtr& ino, uint64_t offset,
                                   std::string* out) {
    return core.Read(ino, offset, std::as_writable_bytes(std::span(*out)), true, nullptr);
  }

  std::string big_;
};

bool Flag(void* arg) { return static_cast<std::atomic<bool>*>(arg)->load(); }

// Eight READs of one direct read are all out before any reply: with one at a
// time, the first reply (never sent) would keep the other seven from going.
// The caller then gives up: EINTR, and every READ is cancelled with it.
TEST_P(DirectReadTest, ItsReadsAreAllInFlightAtOnceAndAGivingUpCallerCancelsThem) {
  HoldingProxy proxy(NfsPortOf(server_->Url("")));
  auto core = Mount(kPage, 1, &proxy);
  ASSERT_TRUE(core);
  auto big = core->Lookup(core->root(), "big.bin");
  ASSERT_TRUE(big.has_value());
  proxy.HoldReadsFrom(0);
  std::atomic<bool> give_up{false};
  Result<size_t> got = 0;
  std::string buf(8 * kPage, '\0');
  std::thread reader([&] {
    InterruptScope scope(&Flag, &give_up);
    got = ReadDirect(*core, *big, 0, &buf);
  });
  size_t in_flight = 0;
  bool all_out = WaitFor([&] { return (in_flight = core->channel().in_flight()) == 8; });
  give_up.store(true);
  reader.join();
  ASSERT_TRUE(all_out) << "READs in flight: " << in_flight;
  ASSERT_FALSE(got.has_value());
  EXPECT_EQ(got.error().code, EINTR);
  EXPECT_EQ(core->channel().in_flight(), 0u) << "the READs went with their caller";

  proxy.HoldReadsFrom(UINT64_MAX);
  std::string again(8 * kPage, '\0');
  ASSERT_EQ(ReadDirect(*core, *big, 3 * kPage, &again).value_or(0), again.size());
  EXPECT_TRUE(again == big_.substr(3 * kPage, again.size()));
}

// The first READ's reply waits in the proxy until the other three, on their own
// connections, have been answered: each lands in its own quarter of the buffer.
TEST_P(DirectReadTest, RepliesOutOfOrderAcrossConnectionsLandInTheirOwnSlices) {
  HoldingProxy proxy(NfsPortOf(server_->Url("")));
  constexpr uint32_t kRsize = 256 << 10;
  auto core = Mount(kRsize, 4, &proxy);
  ASSERT_TRUE(core);
  auto big = core->Lookup(core->root(), "big.bin");
  ASSERT_TRUE(big.has_value());
  const uint64_t reads_before = core->channel().stats().nfs_calls[kRead];
  proxy.DelayReadReplyAt(0);
  Result<size_t> got = 0;
  std::string buf(kBigFile, '\0');
  std::thread reader([&] { got = ReadDirect(*core, *big, 0, &buf); });
  // Four READs sent, the last three answered, the first one's reply waiting.
  uint64_t sent = 0;
  bool out_of_order = WaitFor([&] {
    sent = core->channel().stats().nfs_calls[kRead] - reads_before;
    return sent == 4 && core->channel().in_flight() == 1 && proxy.read_replies_delayed() == 1;
  });
  proxy.Release();
  reader.join();
  ASSERT_TRUE(out_of_order) << "READs sent: " << sent;
  ASSERT_EQ(got.value_or(0), kBigFile);
  EXPECT_TRUE(buf == big_);
}

// Reads that run into the end of the file stop at it exactly, from any start.
TEST_P(DirectReadTest, ReadsAcrossTheEndOfTheFileEndAtIt) {
  const std::string data = Pattern(10 * kPage + 100, 5);
  std::ofstream(server_->dir() + "/short.bin", std::ios::binary) << data;
  auto core = Mount(kPage, 2, nullptr);
  ASSERT_TRUE(core);
  auto f = core->Lookup(core->root(), "short.bin");
  ASSERT_TRUE(f.has_value());
  for (uint64_t start : {uint64_t{0}, uint64_t{kPage - 1}, uint64_t{9 * kPage},
                         uint64_t{10 * kPage + 100}, uint64_t{12 * kPage}}) {
    std::string buf(16 * kPage, '\0');
    auto n = ReadDirect(*core, *f, start, &buf);
    ASSERT_TRUE(n.has_value()) << start;
    size_t want = start < data.size() ? data.size() - start : 0;
    ASSERT_EQ(*n, want) << start;
    EXPECT_TRUE(buf.substr(0, want) == data.substr(std::min<size_t>(start, data.size()), want))
        << start;
  }
}

INSTANTIATE_TEST_SUITE_P(Servers, DirectReadTest, ::testing::Values(Peer::kNfsx, Peer::kGanesha),
                         PeerName);

// Faults only the nfsx server's export can be given.
class DirectReadFaultTest : public DirectReadTest {
 protected:
  vfs::FaultInjectingFs& faults() { return static_cast<NfsxServer&>(*server_).faults(); }
};

// A server whose READ replies are shorter than asked, though the file goes on:
// what landed after a short reply is out of place, and the read goes on from
// where the short one ended, so that every byte is the file's.
TEST_P(DirectReadFaultTest, RepliesShorterThanAskedWithoutEofLeaveNoByteOutOfPlace) {
  auto core = Mount(4 * kPage, 2, nullptr);
  ASSERT_TRUE(core);
  auto big = core->Lookup(core->root(), "big.bin");
  ASSERT_TRUE(big.has_value());
  faults().LimitReads(3 * kPage + 10);
  std::string buf(64 * kPage, '\0');
  auto n = ReadDirect(*core, *big, kPage, &buf);
  faults().LimitReads(0);
  ASSERT_TRUE(n.has_value());
  ASSERT_EQ(*n, buf.size());
  EXPECT_TRUE(buf == big_.substr(kPage, buf.size()));
}

// A READ failing in the middle fails the read, as one at a time would.
TEST_P(DirectReadFaultTest, AReadFailingInTheMiddleFailsTheWhole) {
  auto core = Mount(4 * kPage, 2, nullptr);
  ASSERT_TRUE(core);
  auto big = core->Lookup(core->root(), "big.bin");
  ASSERT_TRUE(big.has_value());
  std::string buf(64 * kPage, '\0');
  ASSERT_EQ(ReadDirect(*core, *big, 0, &buf).value_or(0), buf.size()) << "opens the file";
  faults().FailNext(vfs::FaultOp::kRead, EIO);
  auto n = ReadDirect(*core, *big, 0, &buf);
  ASSERT_FALSE(n.has_value());
  EXPECT_EQ(n.error().code, EIO);
  ASSERT_EQ(ReadDirect(*core, *big, 0, &buf).value_or(0), buf.size());
  EXPECT_TRUE(buf == big_.substr(0, buf.size()));
}

INSTANTIATE_TEST_SUITE_P(Nfsx, DirectReadFaultTest, ::testing::Values(Peer::kNfsx), PeerName);

}  // namespace
}  // namespace nfsx::client::testing
