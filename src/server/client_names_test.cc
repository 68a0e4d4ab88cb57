#include "server/client_names.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>

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

// Every address 10.0.0.N is hostN.example, both ways; N = 0 has no name.
struct Fixture {
  int64_t now = 0;
  int reverse_calls = 0;
  ClientNames names;
  Fixture()
      : names(Resolver(), ClientNamesOptions{std::chrono::seconds(300), std::chrono::seconds(30), 4,
                                             [this] { return now; }}) {}
  NameResolver Resolver() {
    NameResolver r;
    r.reverse = [this](const Address16& a) -> std::optional<std::string> {
      ++reverse_calls;
      if (a[15] == 0) return std::nullopt;
      return "Host" + std::to_string(a[15]) + ".Example.";
    };
    r.forward = [](const std::string& name) {
      int n = std::stoi(name.substr(4));
      auto in = Ip(0x0a000000u | static_cast<uint32_t>(n));
      return std::vector<Address16>{*ClientAddress(Sa(in))};
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

}  // namespace
}  // namespace nfsx::server
