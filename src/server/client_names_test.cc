#include "server/client_names.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>

#include <atomic>
#include <mutex>
#include <thread>

#include "server/export_config.h"

namespace nfsx::server {
namespace {

sockaddr_in Ip(uint32_t host_order) {
  sockaddr_in in{};
  in.sin_family = AF_INET;
  in.sin_addr.s_addr = htonl(host_order);
  return in;
}
const sockaddr* Sa(const sockaddr_in& in) { return reinterpret_cast<const sockaddr*>(&in); }

// Every address 10.0.0.N is hostN.example, both ways; N = 0 has no name. While
// `dns_down`, every lookup fails.
struct Fixture {
  int64_t now = 0;
  std::atomic<int> reverse_calls{0};
  std::atomic<bool> dns_down{false};
  std::function<void()> during_reverse;
  ClientNames names;
  Fixture()
      : names(Resolver(), ClientNamesOptions{std::chrono::seconds(300), std::chrono::seconds(30), 4,
                                             [this] { return now; }}) {}
  NameResolver Resolver() {
    NameResolver r;
    r.reverse = [this](const Address16& a) {
      ++reverse_calls;
      if (during_reverse) during_reverse();
      if (dns_down) return ReverseAnswer{ReverseAnswer::kFailed, {}};
      if (a[15] == 0) return ReverseAnswer{};
      return ReverseAnswer{ReverseAnswer::kName, "Host" + std::to_string(a[15]) + ".Example."};
    };
    r.forward = [this](const std::string& name) {
      if (dns_down) return ForwardAnswer{true, {}};
      int n = std::stoi(name.substr(4));
      auto in = Ip(0x0a000000u | static_cast<uint32_t>(n));
      return ForwardAnswer{false, {*ClientAddress(Sa(in))}};
    };
    return r;
  }
};

constexpr int64_t kSecond = 1'000'000'000;

TEST(ClientNamesTest, NamesAreVerifiedCanonicalAndCached) {
  Fixture f;
  auto a = Ip(0x0a000007);
  EXPECT_EQ(f.names.NameOf(Sa(a)), "host7.example");
  EXPECT_EQ(f.names.NameOf(Sa(a)), "host7.example");
  EXPECT_EQ(f.reverse_calls, 1);
  f.now += 301 * kSecond;
  EXPECT_EQ(f.names.NameOf(Sa(a)), "host7.example");
  EXPECT_EQ(f.reverse_calls, 2) << "expired";
}

TEST(ClientNamesTest, NoNameIsCachedForTheNegativeTtl) {
  Fixture f;
  auto a = Ip(0x0a000000);
  EXPECT_EQ(f.names.NameOf(Sa(a)), "");
  f.now += 29 * kSecond;
  EXPECT_EQ(f.names.NameOf(Sa(a)), "");
  EXPECT_EQ(f.reverse_calls, 1);
  f.now += 2 * kSecond;
  f.names.NameOf(Sa(a));
  EXPECT_EQ(f.reverse_calls, 2);
}

TEST(ClientNamesTest, RefreshRenewsNamesInUseAndDropsTheRest) {
  Fixture f;
  auto used = Ip(0x0a000001), idle = Ip(0x0a000002);
  f.names.NameOf(Sa(used));
  f.names.NameOf(Sa(idle));
  f.names.NameOf(Sa(used));  // a hit marks it used
  f.now += 250 * kSecond;    // within the last quarter of its life
  f.names.Refresh();
  EXPECT_EQ(f.reverse_calls, 3) << "only the name in use was resolved again";
  f.now += 100 * kSecond;  // past the first expiry: the renewed one is still fresh
  EXPECT_EQ(f.names.NameOf(Sa(used)), "host1.example");
  EXPECT_EQ(f.reverse_calls, 3);
  f.names.Refresh();
  EXPECT_EQ(f.names.size(), 1u) << "the idle, expired name is gone";
}

TEST(ClientNamesTest, BoundedInEntries) {
  Fixture f;
  for (uint32_t n = 1; n <= 50; ++n) f.names.NameOf(Sa(Ip(0x0a000000u | n)));
  EXPECT_LE(f.names.size(), 4u);
}

// From the review: a refresh while DNS is down used to replace a verified name
// with "no name", taking a live client's host(rw) rule away for 30 s.
TEST(ClientNamesTest, ANameOutlivesADnsOutageAtRefresh) {
  Fixture f;
  auto a = Ip(0x0a000003);
  ASSERT_EQ(f.names.NameOf(Sa(a)), "host3.example");
  f.names.NameOf(Sa(a));
  f.now += 250 * kSecond;
  f.dns_down = true;
  f.names.Refresh();
  EXPECT_EQ(f.reverse_calls, 2);
  EXPECT_EQ(f.names.NameOf(Sa(a)), "host3.example") << "a failed lookup is no verdict";
  f.names.Refresh();
  EXPECT_EQ(f.reverse_calls, 2) << "retried after the negative ttl, not every second";
  f.dns_down = false;
  f.now += 31 * kSecond;
  f.names.Refresh();
  EXPECT_EQ(f.reverse_calls, 3);
  EXPECT_EQ(f.names.NameOf(Sa(a)), "host3.example");
}

TEST(ClientNamesTest, ConcurrentMissesForOneAddressShareOneLookup) {
  Fixture f;
  std::mutex gate;
  std::unique_lock closed(gate);
  std::atomic<int> entered{0};
  f.during_reverse = [&] {
    ++entered;
    std::lock_guard wait(gate);  // held until every thread has asked
  };
  auto a = Ip(0x0a000005);
  std::vector<std::thread> threads;
  std::vector<std::string> got(8);
  for (size_t i = 0; i < got.size(); ++i) {
    threads.emplace_back([&, i] { got[i] = f.names.NameOf(Sa(a)); });
  }
  // Every thread has asked once it is either in the resolver or waiting for
  // another's answer; then the lookup may answer.
  while (entered.load() + static_cast<int>(f.names.shared_lookups()) < 8) {
    std::this_thread::yield();
  }
  closed.unlock();
  for (auto& t : threads) t.join();
  EXPECT_EQ(f.reverse_calls.load(), 1);
  for (const auto& name : got) EXPECT_EQ(name, "host5.example");
}

TEST(ClientNamesTest, CachedSaysWhetherDnsWouldBeAsked) {
  Fixture f;
  auto a = Ip(0x0a000006);
  EXPECT_FALSE(f.names.Cached(Sa(a)));
  f.names.NameOf(Sa(a));
  EXPECT_TRUE(f.names.Cached(Sa(a)));
  f.now += 301 * kSecond;
  EXPECT_FALSE(f.names.Cached(Sa(a)));
}

}  // namespace
}  // namespace nfsx::server
