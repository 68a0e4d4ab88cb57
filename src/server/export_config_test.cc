#include "server/export_config.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

namespace nfsx::server {
namespace {

// A sockaddr for an IPv4 or IPv6 address literal.
sockaddr_storage Addr(const char* ip, uint16_t port = 700) {
  sockaddr_storage ss{};
  auto* in = reinterpret_cast<sockaddr_in*>(&ss);
  auto* in6 = reinterpret_cast<sockaddr_in6*>(&ss);
  if (inet_pton(AF_INET, ip, &in->sin_addr) == 1) {
    in->sin_family = AF_INET;
    in->sin_port = htons(port);
  } else if (inet_pton(AF_INET6, ip, &in6->sin6_addr) == 1) {
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons(port);
  } else {
    ADD_FAILURE() << "bad address in test: " << ip;
  }
  return ss;
}

ExportTable MustParse(std::string_view text) {
  std::string error;
  auto table = ExportTable::Parse(text, &error);
  EXPECT_TRUE(table.has_value()) << error;
  return table.has_value() ? std::move(*table) : ExportTable();
}

// The parse error of `text`, which must fail.
std::string ParseError(std::string_view text) {
  std::string error;
  auto table = ExportTable::Parse(text, &error);
  EXPECT_FALSE(table.has_value()) << text;
  if (!table) {
    EXPECT_EQ(table.error().code, EINVAL);
  }
  return error;
}

// The options the first export of `t` gives `ip`, or nullptr.
const ExportOptions* MatchIp(const ExportTable& t, const char* ip, std::string_view hostname = {}) {
  sockaddr_storage ss = Addr(ip);
  return t.Match(t.exports().at(0), reinterpret_cast<const sockaddr*>(&ss), hostname);
}

// Options of the only client of a one-line `/x client(options)` file.
ExportOptions OptionsOf(std::string_view options) {
  ExportTable t = MustParse("/x *(" + std::string(options) + ")");
  if (t.exports().size() != 1 || t.exports()[0].clients.size() != 1) return {};
  return t.exports()[0].clients[0].options;
}

TEST(ExportConfigTest, ExampleLine) {
  ExportTable t = MustParse("/srv/a 127.0.0.1(rw,sync,root_squash) 192.0.2.0/24(ro)\n");
  ASSERT_EQ(t.exports().size(), 1u);
  const Export& e = t.exports()[0];
  EXPECT_EQ(e.path, "/srv/a");
  ASSERT_EQ(e.clients.size(), 2u);
  EXPECT_EQ(e.clients[0].spec, "127.0.0.1");
  EXPECT_EQ(e.clients[0].kind, ClientRule::Kind::kHost);
  EXPECT_EQ(e.clients[0].prefix_len, 128);
  EXPECT_EQ(e.clients[1].spec, "192.0.2.0/24");
  EXPECT_EQ(e.clients[1].kind, ClientRule::Kind::kNetwork);
  EXPECT_EQ(e.clients[1].prefix_len, 96 + 24);

  const ExportOptions* local = MatchIp(t, "127.0.0.1");
  ASSERT_NE(local, nullptr);
  EXPECT_FALSE(local->read_only);
  EXPECT_TRUE(local->sync);
  EXPECT_EQ(local->squash, Squash::kRoot);
  EXPECT_EQ(local, &e.clients[0].options);

  const ExportOptions* net = MatchIp(t, "192.0.2.77");
  ASSERT_NE(net, nullptr);
  EXPECT_TRUE(net->read_only);
  EXPECT_EQ(net, &e.clients[1].options);

  EXPECT_EQ(MatchIp(t, "127.0.0.2"), nullptr);
  EXPECT_EQ(MatchIp(t, "198.51.100.1"), nullptr);
  EXPECT_EQ(MatchIp(t, "::1"), nullptr);
}

TEST(ExportConfigTest, DefaultOptions) {
  ExportOptions o = MustParse("/x host1").exports()[0].clients[0].options;
  EXPECT_TRUE(o.read_only);  // as Linux: rw must be asked for
  EXPECT_EQ(o.squash, Squash::kRoot);
  EXPECT_EQ(o.anonuid, 65534u);
  EXPECT_EQ(o.anongid, 65534u);
  EXPECT_TRUE(o.secure);
  EXPECT_TRUE(o.sync);
  EXPECT_FALSE(o.fsid.has_value());
  EXPECT_EQ(o, ExportOptions{});
  EXPECT_EQ(OptionsOf(""), ExportOptions{});
}

TEST(ExportConfigTest, PathAloneExportsToEveryone) {
  ExportTable t = MustParse("/srv/pub\n");
  const Export& e = t.exports().at(0);
  ASSERT_EQ(e.clients.size(), 1u);
  EXPECT_EQ(e.clients[0].kind, ClientRule::Kind::kAnyone);
  EXPECT_EQ(e.clients[0].spec, "*");
  EXPECT_EQ(e.clients[0].options, ExportOptions{});
  EXPECT_NE(MatchIp(t, "203.0.113.9"), nullptr);
  EXPECT_NE(MatchIp(t, "2001:db8::9"), nullptr);
}

TEST(ExportConfigTest, EveryOption) {
  EXPECT_TRUE(OptionsOf("ro").read_only);
  EXPECT_FALSE(OptionsOf("ro,rw").read_only);
  EXPECT_TRUE(OptionsOf("rw,ro").read_only);
  EXPECT_EQ(OptionsOf("root_squash").squash, Squash::kRoot);
  EXPECT_EQ(OptionsOf("no_root_squash").squash, Squash::kNone);
  EXPECT_EQ(OptionsOf("no_root_squash,root_squash").squash, Squash::kRoot);
  EXPECT_EQ(OptionsOf("all_squash").squash, Squash::kAll);
  EXPECT_EQ(OptionsOf("all_squash,no_all_squash").squash, Squash::kRoot);
  EXPECT_EQ(OptionsOf("no_root_squash,all_squash,no_all_squash").squash, Squash::kNone);
  // all_squash is a separate switch: no_root_squash does not undo it, in either order.
  EXPECT_EQ(OptionsOf("all_squash,no_root_squash").squash, Squash::kAll);
  EXPECT_EQ(OptionsOf("no_root_squash,all_squash").squash, Squash::kAll);
  EXPECT_EQ(OptionsOf("anonuid=1000").anonuid, 1000u);
  EXPECT_EQ(OptionsOf("anonuid=1000").anongid, 65534u);
  EXPECT_EQ(OptionsOf("anongid=1001").anongid, 1001u);
  EXPECT_EQ(OptionsOf("anonuid=0").anonuid, 0u);
  EXPECT_EQ(OptionsOf("anonuid=4294967294").anonuid, 4294967294u);
  EXPECT_FALSE(OptionsOf("insecure").secure);
  EXPECT_TRUE(OptionsOf("insecure,secure").secure);
  EXPECT_FALSE(OptionsOf("async").sync);
  EXPECT_TRUE(OptionsOf("async,sync").sync);
  EXPECT_EQ(OptionsOf("fsid=7").fsid, 7u);
  EXPECT_EQ(OptionsOf("fsid=0").fsid, 0u);
  EXPECT_EQ(OptionsOf("fsid=root").fsid, 0u);
  EXPECT_EQ(OptionsOf("fsid=65535").fsid, 65535u);
  EXPECT_EQ(OptionsOf("sec=sys"), ExportOptions{});
  EXPECT_EQ(OptionsOf("sec=sys:sys"), ExportOptions{});
  for (const char* noop :
       {"no_subtree_check", "subtree_check", "wdelay", "no_wdelay", "crossmnt", "nohide", "hide"}) {
    EXPECT_EQ(OptionsOf(noop), ExportOptions{}) << noop;
  }

  ExportOptions all =
      OptionsOf("ro,all_squash,anonuid=5,anongid=6,insecure,async,fsid=9,no_subtree_check,sec=sys");
  EXPECT_TRUE(all.read_only);
  EXPECT_EQ(all.squash, Squash::kAll);
  EXPECT_EQ(all.anonuid, 5u);
  EXPECT_EQ(all.anongid, 6u);
  EXPECT_FALSE(all.secure);
  EXPECT_FALSE(all.sync);
  EXPECT_EQ(all.fsid, 9u);
}

TEST(ExportConfigTest, BlanksInsideOptionListAreIgnored) {
  ExportOptions o = OptionsOf(" ro , async ,,insecure, ");
  EXPECT_TRUE(o.read_only);
  EXPECT_FALSE(o.sync);
  EXPECT_FALSE(o.secure);
}

TEST(ExportConfigTest, LineDefaultOptions) {
  ExportTable t = MustParse("/srv -ro,async 192.0.2.1(rw) 192.0.2.2 -insecure 192.0.2.3\n");
  const auto& c = t.exports().at(0).clients;
  ASSERT_EQ(c.size(), 3u);
  EXPECT_FALSE(c[0].options.read_only);  // its own rw beats the line's ro
  EXPECT_FALSE(c[0].options.sync);
  EXPECT_TRUE(c[0].options.secure);
  EXPECT_TRUE(c[1].options.read_only);
  EXPECT_FALSE(c[1].options.sync);
  EXPECT_TRUE(c[1].options.secure);  // -insecure comes after it
  EXPECT_TRUE(c[2].options.read_only);
  EXPECT_FALSE(c[2].options.secure);

  // Defaults alone export to everyone with them.
  ExportTable only = MustParse("/pub -ro,all_squash");
  ASSERT_EQ(only.exports().at(0).clients.size(), 1u);
  const ClientRule& anyone = only.exports()[0].clients[0];
  EXPECT_EQ(anyone.kind, ClientRule::Kind::kAnyone);
  EXPECT_TRUE(anyone.options.read_only);
  EXPECT_EQ(anyone.options.squash, Squash::kAll);

  // They belong to their line only.
  ExportTable two = MustParse("/a -rw host1\n/b host1\n");
  EXPECT_FALSE(two.exports().at(0).clients[0].options.read_only);
  EXPECT_TRUE(two.exports().at(1).clients[0].options.read_only);
}

TEST(ExportConfigTest, ContinuationLines) {
  ExportTable t = MustParse(
      "/srv/a \\\n"
      "    127.0.0.1(rw) \\\t  \n"  // blanks after the backslash
      "    192.0.2.0/24(ro) \\  # the lab\n"
      "    198.51.100.7(rw,\\\n"
      "        async)\n"
      "/srv/b\n");
  ASSERT_EQ(t.exports().size(), 2u);
  const auto& c = t.exports()[0].clients;
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0].spec, "127.0.0.1");
  EXPECT_EQ(c[1].spec, "192.0.2.0/24");
  EXPECT_TRUE(c[1].options.read_only);
  EXPECT_EQ(c[2].spec, "198.51.100.7");
  EXPECT_FALSE(c[2].options.sync);
  EXPECT_EQ(t.exports()[1].path, "/srv/b");

  // Errors name the physical line of the bad token, not the first line of the entry.
  EXPECT_EQ(ParseError("/srv/a \\\n  host1(rw) \\\n  host2(bogus)\n"),
            "line 3: unknown option 'bogus'");
  // A backslash at the very end of the file continues into nothing.
  EXPECT_EQ(MustParse("/srv/c host1 \\").exports().at(0).clients.size(), 1u);
  // A backslash inside a line is an ordinary character of the path.
  EXPECT_EQ(MustParse("/srv/a\\b *").exports().at(0).path, "/srv/a\\b");
}

TEST(ExportConfigTest, CommentsAndBlankLines) {
  ExportTable t = MustParse(
      "# exports for the lab\n"
      "\n"
      "   \t\n"
      "/srv/a 192.0.2.1(rw) # the build box\n"
      "  # indented comment\n"
      "/srv/b 192.0.2.2(ro)#no space before it\n"
      "/srv/c # a path alone, then a comment\n"
      "\"/srv/#d\" 192.0.2.3\n");
  ASSERT_EQ(t.exports().size(), 4u);
  EXPECT_EQ(t.exports()[0].path, "/srv/a");
  ASSERT_EQ(t.exports()[0].clients.size(), 1u);
  EXPECT_EQ(t.exports()[1].path, "/srv/b");
  ASSERT_EQ(t.exports()[1].clients.size(), 1u);
  EXPECT_TRUE(t.exports()[1].clients[0].options.read_only);
  EXPECT_EQ(t.exports()[2].path, "/srv/c");
  EXPECT_EQ(t.exports()[2].clients.at(0).kind, ClientRule::Kind::kAnyone);
  EXPECT_EQ(t.exports()[3].path, "/srv/#d");  // quoted: not a comment

  EXPECT_TRUE(MustParse("").exports().empty());
  EXPECT_TRUE(MustParse("# nothing\n\n").exports().empty());
  // Line numbers still count comment and blank lines.
  EXPECT_EQ(ParseError("# c\n\n/a host(rw)\n/b host(nope)\n"), "line 4: unknown option 'nope'");
}

TEST(ExportConfigTest, CrLfLineEndings) {
  ExportTable t = MustParse("/srv/a 192.0.2.1(ro)\r\n/srv/b \\\r\n 192.0.2.2\r\n");
  ASSERT_EQ(t.exports().size(), 2u);
  EXPECT_TRUE(t.exports()[0].clients.at(0).options.read_only);
  EXPECT_EQ(t.exports()[1].clients.at(0).spec, "192.0.2.2");
}

TEST(ExportConfigTest, QuotedPathsAndEscapes) {
  ExportTable t = MustParse(
      "\"/srv/my files\" 192.0.2.1(ro)\n"
      "/srv/\"half quoted\"/dir *\n"
      "/srv/octal\\040space *\n");
  ASSERT_EQ(t.exports().size(), 3u);
  EXPECT_EQ(t.exports()[0].path, "/srv/my files");
  ASSERT_EQ(t.exports()[0].clients.size(), 1u);
  EXPECT_TRUE(t.exports()[0].clients[0].options.read_only);
  EXPECT_EQ(t.exports()[1].path, "/srv/half quoted/dir");
  EXPECT_EQ(t.exports()[2].path, "/srv/octal space");
  EXPECT_NE(t.FindByPath("/srv/my files/"), nullptr);

  EXPECT_EQ(ParseError("/a *\n\"/srv/open *\n"), "line 2: unterminated quote");
  EXPECT_EQ(ParseError("/srv/nul\\000 *"), "line 1: bad escape '\\000' in path");
}

TEST(ExportConfigTest, PathNormalisation) {
  ExportTable t = MustParse("//srv//a/./b/ *\n/ *\n");
  ASSERT_EQ(t.exports().size(), 2u);
  EXPECT_EQ(t.exports()[0].path, "/srv/a/b");
  EXPECT_EQ(t.exports()[1].path, "/");
  EXPECT_EQ(MustParse("/./ *").exports().at(0).path, "/");

  EXPECT_EQ(t.FindByPath("/srv/a/b"), &t.exports()[0]);
  EXPECT_EQ(t.FindByPath("/srv/a/b/"), &t.exports()[0]);
  EXPECT_EQ(t.FindByPath("/srv//a/./b"), &t.exports()[0]);
  EXPECT_EQ(t.FindByPath("/"), &t.exports()[1]);
  EXPECT_EQ(t.FindByPath("//"), &t.exports()[1]);
  EXPECT_EQ(t.FindByPath("/srv/a"), nullptr);  // exact match only, no prefixes
  EXPECT_EQ(t.FindByPath("/srv/a/b/c"), nullptr);
  EXPECT_EQ(t.FindByPath("srv/a/b"), nullptr);
  EXPECT_EQ(t.FindByPath("/srv/a/b/../b"), nullptr);
  EXPECT_EQ(t.FindByPath(""), nullptr);
  EXPECT_EQ(t.FindByPath(std::string_view("/srv/a/b\0", 9)), nullptr);

  EXPECT_EQ(ParseError("/srv/a/../b *"), "line 1: export path '/srv/a/../b' contains '..'");
  EXPECT_EQ(ParseError("/" + std::string(1024, 'x') + " *"),
            "line 1: export path is longer than 1024 bytes");
}

TEST(ExportConfigTest, Ipv4NetworkEdges) {
  ExportTable all = MustParse("/x 0.0.0.0/0(ro)");
  EXPECT_NE(MatchIp(all, "0.0.0.0"), nullptr);
  EXPECT_NE(MatchIp(all, "1.2.3.4"), nullptr);
  EXPECT_NE(MatchIp(all, "255.255.255.255"), nullptr);
  EXPECT_NE(MatchIp(all, "::ffff:10.0.0.1"), nullptr);
  EXPECT_EQ(MatchIp(all, "2001:db8::1"), nullptr);  // all of IPv4 is not all of IPv6

  ExportTable host = MustParse("/x 192.0.2.7/32");
  EXPECT_NE(MatchIp(host, "192.0.2.7"), nullptr);
  EXPECT_EQ(MatchIp(host, "192.0.2.6"), nullptr);
  EXPECT_EQ(MatchIp(host, "192.0.2.8"), nullptr);

  ExportTable c24 = MustParse("/x 192.0.2.0/24");
  EXPECT_NE(MatchIp(c24, "192.0.2.0"), nullptr);
  EXPECT_NE(MatchIp(c24, "192.0.2.255"), nullptr);
  EXPECT_EQ(MatchIp(c24, "192.0.1.255"), nullptr);
  EXPECT_EQ(MatchIp(c24, "192.0.3.0"), nullptr);

  // A prefix that does not end on a byte boundary.
  ExportTable c25 = MustParse("/x 192.0.2.128/25");
  EXPECT_NE(MatchIp(c25, "192.0.2.128"), nullptr);
  EXPECT_NE(MatchIp(c25, "192.0.2.255"), nullptr);
  EXPECT_EQ(MatchIp(c25, "192.0.2.127"), nullptr);

  // Host bits in the base address are dropped, as exportfs does.
  ExportTable sloppy = MustParse("/x 192.0.2.77/24");
  EXPECT_NE(MatchIp(sloppy, "192.0.2.1"), nullptr);
  EXPECT_EQ(MatchIp(sloppy, "192.0.3.77"), nullptr);
}

TEST(ExportConfigTest, NetmaskForm) {
  ExportTable t = MustParse("/x 10.1.0.0/255.255.0.0");
  const ClientRule& r = t.exports().at(0).clients.at(0);
  EXPECT_EQ(r.kind, ClientRule::Kind::kNetwork);
  EXPECT_EQ(r.prefix_len, 96 + 16);
  EXPECT_NE(MatchIp(t, "10.1.0.0"), nullptr);
  EXPECT_NE(MatchIp(t, "10.1.255.255"), nullptr);
  EXPECT_EQ(MatchIp(t, "10.2.0.0"), nullptr);
  EXPECT_EQ(MatchIp(t, "10.0.255.255"), nullptr);

  // exports(5)'s own example: /255.255.252.0 and /22 are the same network.
  ClientRule mask = MustParse("/x 192.0.4.0/255.255.252.0").exports()[0].clients[0];
  ClientRule len = MustParse("/x 192.0.4.0/22").exports()[0].clients[0];
  EXPECT_EQ(mask.addr, len.addr);
  EXPECT_EQ(mask.prefix_len, len.prefix_len);
  EXPECT_EQ(MustParse("/x 0.0.0.0/0.0.0.0").exports()[0].clients[0].prefix_len, 96);
  EXPECT_EQ(MustParse("/x 192.0.2.1/255.255.255.255").exports()[0].clients[0].prefix_len, 128);
}

TEST(ExportConfigTest, Ipv6Networks) {
  ExportTable t = MustParse("/x 2001:db8:1:2::/64(ro) ::1(rw)");
  const auto& c = t.exports().at(0).clients;
  EXPECT_EQ(c[0].prefix_len, 64);
  EXPECT_EQ(c[1].kind, ClientRule::Kind::kHost);
  const ExportOptions* in = MatchIp(t, "2001:db8:1:2:ffff:ffff:ffff:ffff");
  ASSERT_NE(in, nullptr);
  EXPECT_TRUE(in->read_only);
  EXPECT_NE(MatchIp(t, "2001:db8:1:2::"), nullptr);
  EXPECT_EQ(MatchIp(t, "2001:db8:1:3::1"), nullptr);
  EXPECT_EQ(MatchIp(t, "2001:db8:1:1:ffff:ffff:ffff:ffff"), nullptr);
  EXPECT_EQ(MatchIp(t, "192.0.2.1"), nullptr);
  const ExportOptions* lo = MatchIp(t, "::1");
  ASSERT_NE(lo, nullptr);
  EXPECT_FALSE(lo->read_only);
  EXPECT_EQ(MatchIp(t, "::2"), nullptr);

  ExportTable odd = MustParse("/x 2001:db8::/33");
  EXPECT_NE(MatchIp(odd, "2001:db8:7fff::1"), nullptr);
  EXPECT_EQ(MatchIp(odd, "2001:db8:8000::1"), nullptr);

  // IPv4 lives at ::ffff:0:0/96, so ::/0 covers IPv4 clients too.
  ExportTable all = MustParse("/x ::/0");
  EXPECT_NE(MatchIp(all, "2001:db8::5"), nullptr);
  EXPECT_NE(MatchIp(all, "198.51.100.1"), nullptr);
}

TEST(ExportConfigTest, V4MappedClientsMatchIpv4Rules) {
  ExportTable t = MustParse("/x 192.0.2.5(rw) 192.0.2.0/24(ro)");
  const ExportOptions* exact = MatchIp(t, "::ffff:192.0.2.5");
  ASSERT_NE(exact, nullptr);
  EXPECT_FALSE(exact->read_only);
  const ExportOptions* net = MatchIp(t, "::ffff:192.0.2.200");
  ASSERT_NE(net, nullptr);
  EXPECT_TRUE(net->read_only);
  EXPECT_EQ(MatchIp(t, "::ffff:192.0.3.1"), nullptr);
  // Not v4-mapped: the same low 32 bits under another prefix are another address.
  EXPECT_EQ(MatchIp(t, "::192.0.2.5"), nullptr);
  EXPECT_EQ(MatchIp(t, "64:ff9b::192.0.2.5"), nullptr);

  // And the reverse: a rule written in mapped form matches plain IPv4 clients.
  ExportTable mapped = MustParse("/x ::ffff:192.0.2.0/120");
  EXPECT_NE(MatchIp(mapped, "192.0.2.9"), nullptr);
  EXPECT_EQ(MatchIp(mapped, "192.0.3.9"), nullptr);
}

TEST(ExportConfigTest, StarMatchesEveryone) {
  ExportTable t = MustParse("/x *(ro,insecure)");
  for (const char* ip : {"127.0.0.1", "203.0.113.250", "::1", "2001:db8::1", "::ffff:10.0.0.1"}) {
    const ExportOptions* o = MatchIp(t, ip);
    ASSERT_NE(o, nullptr) << ip;
    EXPECT_TRUE(o->read_only);
    EXPECT_FALSE(o->secure);
  }
  const Export& e = t.exports()[0];
  sockaddr_un local{};
  local.sun_family = AF_UNIX;
  EXPECT_NE(t.Match(e, reinterpret_cast<const sockaddr*>(&local)), nullptr);
  EXPECT_EQ(t.Match(e, nullptr), nullptr);
}

TEST(ExportConfigTest, AddressRulesNeverMatchOtherFamilies) {
  ExportTable t = MustParse("/x 0.0.0.0/0 ::/0");
  sockaddr_un local{};
  local.sun_family = AF_UNIX;
  EXPECT_EQ(t.Match(t.exports()[0], reinterpret_cast<const sockaddr*>(&local)), nullptr);
}

TEST(ExportConfigTest, FirstMatchWinsAmongRulesOfOneKind) {
  ExportTable nets = MustParse("/x 192.0.2.0/24(ro) 192.0.0.0/16(rw,async) 192.0.2.0/25(insecure)");
  const ExportOptions* a = MatchIp(nets, "192.0.2.5");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a, &nets.exports()[0].clients[0].options);  // not the narrower /25 written later
  EXPECT_TRUE(a->read_only);
  const ExportOptions* b = MatchIp(nets, "192.0.3.1");
  ASSERT_NE(b, nullptr);
  EXPECT_FALSE(b->read_only);
  EXPECT_FALSE(b->sync);

  ExportTable stars = MustParse("/x *(ro) *(rw)");
  ASSERT_NE(MatchIp(stars, "192.0.2.1"), nullptr);
  EXPECT_TRUE(MatchIp(stars, "192.0.2.1")->read_only);

  ExportTable hosts = MustParse("/x 192.0.2.1(ro) 192.0.2.1(rw)");
  EXPECT_TRUE(MatchIp(hosts, "192.0.2.1")->read_only);
}

TEST(ExportConfigTest, MoreSpecificKindWinsWhateverTheOrder) {
  // exports(5): single host, then networks, then wildcards, then "*", regardless of order.
  ExportTable t = MustParse(
      "/x *(ro) 192.0.2.0/24(rw,async) 192.0.2.5(rw,no_root_squash) *.lab.example(anonuid=7)");
  const auto& c = t.exports()[0].clients;
  EXPECT_EQ(MatchIp(t, "192.0.2.5"), &c[2].options);
  EXPECT_EQ(MatchIp(t, "192.0.2.5")->squash, Squash::kNone);
  EXPECT_EQ(MatchIp(t, "192.0.2.6"), &c[1].options);
  EXPECT_EQ(MatchIp(t, "192.0.2.6", "pc1.lab.example"), &c[1].options);
  EXPECT_EQ(MatchIp(t, "198.51.100.1", "pc1.lab.example"), &c[3].options);
  EXPECT_EQ(MatchIp(t, "198.51.100.1"), &c[0].options);
  EXPECT_TRUE(MatchIp(t, "198.51.100.1")->read_only);

  // A wide network written first does not hand its rights to a host listed after it.
  ExportTable narrow = MustParse("/x 10.0.0.0/8(rw,no_root_squash) 10.0.0.5(ro)");
  ASSERT_NE(MatchIp(narrow, "10.0.0.5"), nullptr);
  EXPECT_TRUE(MatchIp(narrow, "10.0.0.5")->read_only);
  EXPECT_EQ(MatchIp(narrow, "10.0.0.5")->squash, Squash::kRoot);
  EXPECT_EQ(MatchIp(narrow, "10.0.0.6")->squash, Squash::kNone);
}

TEST(ExportConfigTest, HostnamesMatchOnlyAResolvedName) {
  ExportTable t =
      MustParse("/x Build.Example.COM(rw) *.lab.example.com(ro) pc?.example.com(async)");
  const auto& c = t.exports()[0].clients;
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0].kind, ClientRule::Kind::kHost);
  EXPECT_EQ(c[0].hostname, "build.example.com");
  EXPECT_EQ(c[0].spec, "Build.Example.COM");
  EXPECT_EQ(c[1].kind, ClientRule::Kind::kWildcard);
  EXPECT_EQ(c[2].kind, ClientRule::Kind::kWildcard);

  EXPECT_EQ(MatchIp(t, "192.0.2.1"), nullptr);  // no name, no match
  EXPECT_EQ(MatchIp(t, "192.0.2.1", "build.example.com"), &c[0].options);
  EXPECT_EQ(MatchIp(t, "192.0.2.1", "BUILD.example.com."), &c[0].options);
  EXPECT_EQ(MatchIp(t, "192.0.2.1", "a.lab.example.com"), &c[1].options);
  EXPECT_EQ(MatchIp(t, "192.0.2.1", "a.b.lab.example.com"), &c[1].options);
  EXPECT_EQ(MatchIp(t, "192.0.2.1", "lab.example.com"), nullptr);
  EXPECT_EQ(MatchIp(t, "192.0.2.1", "pc7.example.com"), &c[2].options);
  EXPECT_EQ(MatchIp(t, "192.0.2.1", "pc17.example.com"), nullptr);
  EXPECT_EQ(MatchIp(t, "192.0.2.1", "other.example.com"), nullptr);

  // An exact name beats a pattern written before it.
  ExportTable order = MustParse("/x *.example.com(ro) db.example.com(rw)");
  ASSERT_NE(MatchIp(order, "192.0.2.1", "db.example.com"), nullptr);
  EXPECT_FALSE(MatchIp(order, "192.0.2.1", "db.example.com")->read_only);
}

TEST(ExportConfigTest, ErrorUnknownOption) {
  EXPECT_EQ(ParseError("/a 192.0.2.1(rw)\n/b 192.0.2.1(rw,frobnicate)\n"),
            "line 2: unknown option 'frobnicate'");
  EXPECT_EQ(ParseError("/a -no_such_default host"), "line 1: unknown option 'no_such_default'");
  EXPECT_EQ(ParseError("/a host(rw=host2)"), "line 1: unknown option 'rw=host2'");
  EXPECT_EQ(ParseError("/a host(RW)"), "line 1: unknown option 'RW'");
  EXPECT_EQ(ParseError("/a host(mountpoint)"), "line 1: unknown option 'mountpoint'");
}

TEST(ExportConfigTest, ErrorBadAnonuid) {
  auto uid_error = [](std::string_view option) {
    return "line 2: bad anonuid in '" + std::string(option) +
           "': expected a number from 0 to 4294967294";
  };
  for (const char* bad : {"anonuid=abc", "anonuid=-2", "anonuid=", "anonuid", "anonuid=12x",
                          "anonuid=4294967295", "anonuid=4294967296", "anonuid=+5"}) {
    EXPECT_EQ(ParseError("/a *\n/b host(" + std::string(bad) + ")"), uid_error(bad)) << bad;
  }
  EXPECT_EQ(ParseError("/a host(anongid=x)"),
            "line 1: bad anongid in 'anongid=x': expected a number from 0 to 4294967294");
}

TEST(ExportConfigTest, ErrorBadNetwork) {
  EXPECT_EQ(ParseError("/a 192.0.2.0/33"),
            "line 1: bad network '192.0.2.0/33': prefix length must be 0 to 32");
  EXPECT_EQ(ParseError("/a 2001:db8::/129"),
            "line 1: bad network '2001:db8::/129': prefix length must be 0 to 128");
  EXPECT_EQ(ParseError("/a\n/b 192.0.2.0/"),
            "line 2: bad network '192.0.2.0/': expected /length or /a.b.c.d netmask");
  EXPECT_EQ(ParseError("/a 192.0.2.0/-1"),
            "line 1: bad network '192.0.2.0/-1': expected /length or /a.b.c.d netmask");
  EXPECT_EQ(ParseError("/a 192.0.2.0/255.0.255.0"),
            "line 1: bad network '192.0.2.0/255.0.255.0': netmask is not contiguous");
  EXPECT_EQ(ParseError("/a 2001:db8::/ffff::"),
            "line 1: bad network '2001:db8::/ffff::': expected /length");
  EXPECT_EQ(ParseError("/a 300.0.2.0/24"),
            "line 1: bad network '300.0.2.0/24': '300.0.2.0' is not an IP address");
  EXPECT_EQ(ParseError("/a 192.0.2/24"),
            "line 1: bad network '192.0.2/24': '192.0.2' is not an IP address");
  EXPECT_EQ(ParseError("/a 192.0.2.256"), "line 1: bad IP address '192.0.2.256'");
  EXPECT_EQ(ParseError("/a 2001:db8::zz"), "line 1: bad IP address '2001:db8::zz'");
  EXPECT_EQ(ParseError("/a [::1]"), "line 1: bad IP address '[::1]'");
  // Address patterns would match host names such as 192.168.1.evil.example.
  EXPECT_EQ(ParseError("/a *(ro)\n/b 192.168.1.*(rw)"),
            "line 2: '192.168.1.*' looks like an address pattern, but patterns match host "
            "names: use a network (192.0.2.0/24)");
  EXPECT_NE(ParseError("/a 10.0.0.?"), "");
  std::string error;
  EXPECT_TRUE(ExportTable::Parse("/a *.10.example(rw)", &error).has_value()) << error;
}

TEST(ExportConfigTest, ErrorRelativeAndDuplicatePaths) {
  EXPECT_EQ(ParseError("srv/a *"), "line 1: export path 'srv/a' is not absolute");
  EXPECT_EQ(ParseError("/ok *\n./srv *"), "line 2: export path './srv' is not absolute");
  EXPECT_EQ(ParseError("\"\" *"), "line 1: export path '' is not absolute");
  EXPECT_EQ(ParseError("/srv/a 192.0.2.1\n/srv/b\n/srv//a/ 192.0.2.2\n"),
            "line 3: /srv/a is already exported on line 1");
}

TEST(ExportConfigTest, ErrorUnsupportedSecurity) {
  EXPECT_EQ(ParseError("/a host(sec=krb5)"), "line 1: sec=krb5 is not supported (only sec=sys)");
  EXPECT_EQ(ParseError("/a\n/b host(rw,sec=sys:krb5p)"),
            "line 2: sec=krb5p is not supported (only sec=sys)");
  EXPECT_EQ(ParseError("/a host(sec=)"), "line 1: sec= is not supported (only sec=sys)");
  EXPECT_EQ(ParseError("/a gss/krb5"),
            "line 1: 'gss/krb5' is not supported; only AUTH_SYS (sec=sys) is");
  EXPECT_EQ(ParseError("/a @trusted(rw)"), "line 1: netgroups are not supported: '@trusted'");
}

TEST(ExportConfigTest, ErrorMalformedClients) {
  // With a space, Linux would give everyone rw; refuse instead.
  EXPECT_EQ(ParseError("/a host (rw)"),
            "line 1: options '(rw)' must follow a client with no space between, as in "
            "client(rw)");
  EXPECT_EQ(ParseError("/a host(rw"), "line 1: missing ')' in 'host(rw'");
  EXPECT_EQ(ParseError("/a host(rw)x"), "line 1: missing ')' in 'host(rw)x'");
  EXPECT_EQ(ParseError("/a host(rw(ro))"), "line 1: bad option list in 'host(rw(ro))'");
  EXPECT_EQ(ParseError("/a ho$t"), "line 1: bad client 'ho$t'");
  // Verified names have no empty label, so these could never match anyone: a typo.
  // (Found by exports_parser_fuzz: "r.." kept "r." as its name, which no client has.)
  EXPECT_EQ(ParseError("/a build..example.com"),
            "line 1: bad host name 'build..example.com': empty label");
  EXPECT_EQ(ParseError("/a r.."), "line 1: bad host name 'r..': empty label");
  EXPECT_EQ(ParseError("/a .example.com(rw)"), "line 1: bad host name '.example.com': empty label");
  EXPECT_EQ(ParseError("/a *..example.com"), "line 1: bad host name '*..example.com': empty label");
  // One trailing dot is a fully qualified name, and fine.
  EXPECT_EQ(MustParse("/a host.example.(rw)").exports()[0].clients[0].hostname, "host.example");
  EXPECT_EQ(ParseError(std::string_view("/a h\0st", 7)), "line 1: NUL byte in file");
}

TEST(ExportConfigTest, ErrorBadFsid) {
  EXPECT_EQ(ParseError("/a host(fsid=65536)"),
            "line 1: bad fsid in 'fsid=65536': expected a number from 0 to 65535, or root");
  EXPECT_EQ(ParseError("/a host(fsid=6f2e1b6c-0000-0000-0000-000000000000)"),
            "line 1: bad fsid in 'fsid=6f2e1b6c-0000-0000-0000-000000000000': expected a "
            "number from 0 to 65535, or root");
  EXPECT_EQ(ParseError("/a host(fsid=5)\n/b\n/c -fsid=5\n"),
            "line 3: fsid 5 is already used by /a on line 1");
  EXPECT_EQ(ParseError("/a h1(fsid=1) h2(fsid=2)"),
            "line 1: conflicting fsid values 1 and 2 for /a");
}

TEST(ExportConfigTest, NullErrorPointerIsAllowed) {
  auto bad = ExportTable::Parse("relative *", nullptr);
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().code, EINVAL);
  EXPECT_TRUE(ExportTable::Parse("/ok *", nullptr).has_value());
}

TEST(ExportConfigTest, ExportIdsAreStable) {
  const char* text =
      "/srv/a 192.0.2.1\n"
      "/srv/b *(ro)\n"
      "/\n"
      "/srv/vol1\n/srv/vol2\n/srv/vol3\n";
  ExportTable first = MustParse(text);
  ExportTable second = MustParse(text);
  ASSERT_EQ(first.exports().size(), 6u);
  for (size_t i = 0; i < first.exports().size(); ++i) {
    EXPECT_EQ(first.exports()[i].export_id, second.exports()[i].export_id);
    EXPECT_NE(first.exports()[i].export_id, 0);
  }
  // Pinned: these ids live in file handles that clients keep across restarts, so a change
  // to the hash breaks every mounted client. Do not update these numbers to make it pass.
  EXPECT_EQ(first.exports()[0].export_id, 4723);  // /srv/a
  EXPECT_EQ(first.exports()[1].export_id, 4014);  // /srv/b
  EXPECT_EQ(first.exports()[2].export_id, 720);   // /
  // Paths differing only in their last byte still get ids of their own.
  EXPECT_NE(first.exports()[3].export_id, first.exports()[4].export_id);
  EXPECT_NE(first.exports()[4].export_id, first.exports()[5].export_id);
  EXPECT_NE(first.exports()[3].export_id, first.exports()[5].export_id);

  // Options, clients and unrelated lines do not move an id.
  EXPECT_EQ(MustParse("/x\n/srv/a 10.0.0.0/8(ro,async)").exports()[1].export_id, 4723);

  EXPECT_EQ(first.FindById(4723), &first.exports()[0]);
  EXPECT_EQ(first.FindById(720), &first.exports()[2]);
  EXPECT_EQ(first.FindById(1), nullptr);
}

TEST(ExportConfigTest, ExportIdCollisionsProbeInFileOrder) {
  // /c368 and /c511 both hash to 19442; the later line takes the next id.
  ExportTable t = MustParse("/c368\n/c511\n");
  EXPECT_EQ(t.exports()[0].export_id, 19442);
  EXPECT_EQ(t.exports()[1].export_id, 19443);
  ExportTable swapped = MustParse("/c511\n/c368\n");
  EXPECT_EQ(swapped.exports()[0].export_id, 19442);
  EXPECT_EQ(swapped.exports()[1].export_id, 19443);

  // /z42919 hashes to 0, which is never handed out.
  EXPECT_EQ(MustParse("/z42919").exports()[0].export_id, 1);
}

TEST(ExportConfigTest, ExplicitFsid) {
  ExportTable t = MustParse("/srv/a *(fsid=42)\n/srv/b -fsid=root\n/srv/c h1(fsid=9) h2\n");
  EXPECT_EQ(t.exports()[0].export_id, 42);
  EXPECT_EQ(t.exports()[1].export_id, 0);
  EXPECT_EQ(t.exports()[2].export_id, 9);
  EXPECT_EQ(t.exports()[2].clients[0].options.fsid, 9u);
  EXPECT_FALSE(t.exports()[2].clients[1].options.fsid.has_value());
  EXPECT_EQ(t.FindById(42), &t.exports()[0]);
  EXPECT_EQ(t.FindById(0), &t.exports()[1]);
  // The same fsid on every client of a line is no conflict.
  EXPECT_EQ(MustParse("/a h1(fsid=3) h2(fsid=3)").exports()[0].export_id, 3);

  // An fsid on a later line keeps its number; the hashed export moves out of its way.
  ExportTable clash = MustParse("/srv/a\n/srv/other *(fsid=4723)\n");
  EXPECT_EQ(clash.exports()[1].export_id, 4723);
  EXPECT_EQ(clash.exports()[0].export_id, 4724);
}

TEST(ExportConfigTest, Single) {
  ExportTable t = ExportTable::Single("/home/me/share/");
  ASSERT_EQ(t.exports().size(), 1u);
  const Export& e = t.exports()[0];
  EXPECT_EQ(e.path, "/home/me/share");
  EXPECT_EQ(e.export_id, MustParse("/home/me/share").exports()[0].export_id);
  ASSERT_EQ(e.clients.size(), 2u);
  EXPECT_EQ(e.clients[0].spec, "127.0.0.1");
  EXPECT_EQ(e.clients[1].spec, "::1");
  for (const ClientRule& c : e.clients) {
    EXPECT_EQ(c.kind, ClientRule::Kind::kHost);
    EXPECT_FALSE(c.options.read_only);
    EXPECT_EQ(c.options.squash, Squash::kRoot);
    EXPECT_FALSE(c.options.secure);
    EXPECT_TRUE(c.options.sync);
    EXPECT_EQ(c.options.anonuid, 65534u);
  }
  EXPECT_NE(MatchIp(t, "127.0.0.1"), nullptr);
  EXPECT_NE(MatchIp(t, "::1"), nullptr);
  EXPECT_NE(MatchIp(t, "::ffff:127.0.0.1"), nullptr);
  EXPECT_EQ(MatchIp(t, "127.0.0.2"), nullptr);
  EXPECT_EQ(MatchIp(t, "192.0.2.1"), nullptr);
  EXPECT_EQ(MatchIp(t, "::2"), nullptr);
  EXPECT_EQ(t.FindByPath("/home/me/share"), &e);
  EXPECT_EQ(t.FindById(e.export_id), &e);
}

TEST(ExportConfigDeathTest, SingleRejectsRelativePath) {
  EXPECT_DEATH(ExportTable::Single("share"), "not absolute");
}

class ExportConfigFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/nfsx_exports_XXXXXX";
    int fd = mkstemp(tmpl);
    ASSERT_GE(fd, 0);
    close(fd);
    path_ = tmpl;
  }
  void TearDown() override { unlink(path_.c_str()); }
  void Write(const std::string& text) { std::ofstream(path_) << text; }

  std::string path_;
};

TEST_F(ExportConfigFileTest, Loads) {
  Write("# test\n/srv/a 127.0.0.1(rw) 192.0.2.0/24(ro)\n");
  std::string error;
  auto t = ExportTable::Load(path_, &error);
  ASSERT_TRUE(t.has_value()) << error;
  ASSERT_EQ(t->exports().size(), 1u);
  EXPECT_EQ(t->exports()[0].path, "/srv/a");
  EXPECT_EQ(t->exports()[0].export_id, 4723);
  EXPECT_EQ(t->exports()[0].clients.size(), 2u);
}

TEST_F(ExportConfigFileTest, ParseErrorsNameTheFile) {
  Write("/srv/a *\n/srv/b *(bogus)\n");
  std::string error;
  auto t = ExportTable::Load(path_, &error);
  ASSERT_FALSE(t.has_value());
  EXPECT_EQ(t.error().code, EINVAL);
  EXPECT_EQ(error, path_ + ": line 2: unknown option 'bogus'");
}

TEST_F(ExportConfigFileTest, MissingFile) {
  std::string error;
  auto t = ExportTable::Load(path_ + ".missing", &error);
  ASSERT_FALSE(t.has_value());
  EXPECT_EQ(t.error().code, ENOENT);
  EXPECT_EQ(error, path_ + ".missing: No such file or directory");

  auto dir = ExportTable::Load("/tmp", &error);
  ASSERT_FALSE(dir.has_value());
  EXPECT_EQ(dir.error().code, EISDIR);
}

}  // namespace
}  // namespace nfsx::server
