// The client destroyed while its calls are in flight: READs, read-ahead nobody
// waits for, background write-back and COMMITs. A completion that runs after
// the client's state is gone is a use-after-free (ASan and TSan in `make test`
// report it); these tests make sure some calls are still out when the client goes.
#include <fcntl.h>

#include <chrono>
#include <fstream>
#include <regex>
#include <thread>

#include "client/client_core.h"
#include "client/testing/holding_proxy.h"
#include "client/testing/test_servers.h"
#include "client/url.h"

namespace nfsx::client::testing {
namespace {

using Clock = std::chrono::steady_clock;

// Enough rounds to catch a race in the teardown, few enough for a loaded
// machine under a sanitizer: the deadline ends the loop early, never the test.
constexpr int kMinRounds = 10;
constexpr auto kTimeBudget = std::chrono::seconds(20);
constexpr uint32_t kPage = 4096;
constexpr size_t kBigFile = 1 << 20;

class ClientLifetimeTest : public ClientTest {
 protected:
  void SetUp() override {
    ClientTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    big_ = Pattern(kBigFile, 7);
    std::ofstream(server_->dir() + "/big.bin", std::ios::binary) << big_;
    std::smatch m;
    std::string url = server_->Url("");
    ASSERT_TRUE(std::regex_search(url, m, std::regex("nfsport=([0-9]+)")));
    nfs_port_ = static_cast<uint16_t>(std::stoi(m[1]));
  }

  // The server's URL with NFS calls going through `proxy` (MOUNT goes direct).
  std::string UrlVia(const HoldingProxy& proxy) {
    return std::regex_replace(server_->Url(""), std::regex("nfsport=[0-9]+"),
                              "nfsport=" + std::to_string(proxy.port()));
  }

  // Small READs, so the first read's read-ahead window is many READs; every
  // write-back round COMMITs.
  static ClientOptions Options() {
    ClientOptions o;
    o.rsize = kPage;
    o.wsize = 64 << 10;
    o.uncommitted_bytes = 32 << 10;
    o.readahead_bytes = 1 << 20;
    return o;
  }

  std::string big_;
  uint16_t nfs_port_ = 0;
};

TEST_P(ClientLifetimeTest, CoreDestroyedWithReadAheadWriteBackAndCommitsInFlight) {
  const ClientOptions o = Options();
  const std::string chunk = Pattern(o.wsize, 3);
  auto deadline = Clock::now() + kTimeBudget;
  int rounds = 0;
  for (; rounds < 100 && (rounds < kMinRounds || Clock::now() < deadline); ++rounds) {
    HoldingProxy proxy(nfs_port_);
    std::string error, rest;
    auto url = ParseNfsUrl(UrlVia(proxy), o, &error);
    ASSERT_TRUE(url.has_value()) << error;
    auto core = ClientCore::Mount(*url, &rest, &error);
    ASSERT_TRUE(core.has_value()) << error;
    {
      // Each full wsize written wakes the background write-back, whose WRITEs and
      // COMMITs may still be going when the core is destroyed.
      auto wb = (*core)->Create((*core)->root(), "wb.bin", 0644, false, true);
      ASSERT_TRUE(wb.has_value());
      for (uint64_t k = 0; k < 4; ++k) {
        ASSERT_TRUE((*core)->Write(*wb, k * o.wsize, Bytes(chunk), WriteMode::kBuffered));
      }
      // The READ of the first page is answered; the read-ahead past it never is.
      proxy.HoldReadsFrom(kPage);
      auto big = (*core)->Lookup((*core)->root(), "big.bin");
      ASSERT_TRUE(big.has_value());
      ReadAhead ra;
      std::string page(kPage, '\0');
      auto n = (*core)->Read(*big, 0, std::as_writable_bytes(std::span(page)), false, &ra);
      ASSERT_EQ(n.value_or(0), kPage);
      ASSERT_EQ(page, big_.substr(0, kPage));
      ASSERT_GT((*core)->channel().in_flight(), 0u);
    }
    // The held READs' completions hold the last reference to the file's inode
    // (and its cached page): they must run before the cache budget goes.
    core->reset();
  }
  std::cout << rounds << " rounds\n";
}

TEST_P(ClientLifetimeTest, ClientDestroyedWithReadAheadInFlightStillWritesBack) {
  ClientOptions o = Options();
  o.cto = false;  // close sends nothing: the client's destructor writes back and commits
  const std::string data = Pattern(3 * o.wsize + 100, 5);
  auto deadline = Clock::now() + kTimeBudget;
  int rounds = 0;
  for (; rounds < 50 && (rounds < kMinRounds || Clock::now() < deadline); ++rounds) {
    HoldingProxy proxy(nfs_port_);
    std::string error;
    auto c = Client::Connect(UrlVia(proxy), o, &error);
    ASSERT_TRUE(c.has_value()) << error;
    std::string name = "wb" + std::to_string(rounds) + ".bin";
    {
      auto r = (*c)->Open("big.bin", O_RDONLY);
      ASSERT_TRUE(r.has_value());
      proxy.HoldReadsFrom(kPage);
      std::string page(kPage, '\0');
      ASSERT_EQ((*r)->Pread(std::as_writable_bytes(std::span(page)), 0).value_or(0), kPage);
      ASSERT_EQ(page, big_.substr(0, kPage));
      auto w = (*c)->Open(name, O_CREAT | O_WRONLY | O_TRUNC, 0644);
      ASSERT_TRUE(w.has_value());
      ASSERT_TRUE((*w)->Pwrite(Bytes(data), 0));
    }
    c->reset();
    std::ifstream in(server_->dir() + "/" + name, std::ios::binary);
    std::string disk((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ASSERT_EQ(disk.size(), data.size());
    ASSERT_TRUE(disk == data);
  }
  std::cout << rounds << " rounds\n";
}

TEST_P(ClientLifetimeTest, ReaderWaitingForAHeldReadWakesWithAnErrorAtShutdown) {
  HoldingProxy proxy(nfs_port_);
  std::string error, rest;
  auto url = ParseNfsUrl(UrlVia(proxy), Options(), &error);
  ASSERT_TRUE(url.has_value()) << error;
  auto core = ClientCore::Mount(*url, &rest, &error);
  ASSERT_TRUE(core.has_value()) << error;
  auto big = (*core)->Lookup((*core)->root(), "big.bin");
  ASSERT_TRUE(big.has_value());
  proxy.HoldReadsFrom(kPage);
  ReadAhead ra;
  std::string page(kPage, '\0');
  ASSERT_EQ((*core)->Read(*big, 0, std::as_writable_bytes(std::span(page)), false, &ra).value_or(0),
            kPage);
  ASSERT_GT((*core)->channel().in_flight(), 0u);
  // This reader waits for the read-ahead READ of its page, whose reply never
  // comes (or, if Shutdown() came first, fails at once): either way it must return.
  Result<size_t> got = 0;
  std::thread reader([&] {
    std::string more(kPage, '\0');
    got = (*core)->Read(*big, 16 * kPage, std::as_writable_bytes(std::span(more)), false, nullptr);
  });
  (*core)->Shutdown();
  reader.join();
  ASSERT_FALSE(got.has_value());
  EXPECT_EQ(got.error().code, ESHUTDOWN);
}

INSTANTIATE_TEST_SUITE_P(Servers, ClientLifetimeTest,
                         ::testing::Values(Peer::kNfsx, Peer::kGanesha), PeerName);

}  // namespace
}  // namespace nfsx::client::testing
