// Export rules as clients meet them: ro, squashing, who may mount, secure ports.
#include <arpa/inet.h>
#include <sys/stat.h>

#include <future>
#include <mutex>
#include <thread>

#include "server/testing/server_fixture.h"

namespace nfsx::server::testing {
namespace {

class ExportRulesTest : public ServerTest {
 protected:
  void SetUp() override {}  // each test starts the server with its own exports
};

TEST_P(ExportRulesTest, ReadOnlyExportRefusesEveryChange) {
  StartServer("$DIR 127.0.0.1(ro,insecure,no_root_squash)");
  EXPECT_EQ(CreateIn(root_, "x").status, NFS3ERR_ROFS);
  MKDIR3args md;
  md.where = {root_, {"d"}};
  EXPECT_EQ(Call<MKDIR3res>(nfsproc3::MKDIR, md).status, NFS3ERR_ROFS);
  SETATTR3args sa;
  sa.object = root_;
  sa.new_attributes.mode = 0700;
  cred_ = rpc::testing::SysCred(0, 0);
  EXPECT_EQ(Call<SETATTR3res>(nfsproc3::SETATTR, sa).status, NFS3ERR_ROFS);
  auto acc = Call<ACCESS3res>(nfsproc3::ACCESS, ACCESS3args{root_, 0x3f});
  ASSERT_EQ(acc.status, NFS3_OK);
  EXPECT_EQ(acc.resok.access & (ACCESS3_MODIFY | ACCESS3_EXTEND | ACCESS3_DELETE), 0u);
  EXPECT_NE(acc.resok.access & ACCESS3_READ, 0u);
  EXPECT_EQ(Call<GETATTR3res>(nfsproc3::GETATTR, GETATTR3args{root_}).status, NFS3_OK);
}

TEST_P(ExportRulesTest, RootIsSquashedByDefault) {
  StartServer("$DIR 127.0.0.1(rw,insecure)");
  cred_ = rpc::testing::SysCred(0, 0);
  // Squashed root cannot chmod the root-owned export root...
  SETATTR3args sa;
  sa.object = root_;
  sa.new_attributes.mode = 0777;
  EXPECT_EQ(Call<SETATTR3res>(nfsproc3::SETATTR, sa).status, NFS3ERR_PERM);
  fattr3 root_attr = AttrOf(root_);
  ASSERT_EQ(root_attr.uid, 0u);
  ASSERT_EQ(root_attr.mode & 0002, 0u);
  auto acc = Call<ACCESS3res>(nfsproc3::ACCESS, ACCESS3args{root_, ACCESS3_MODIFY});
  EXPECT_EQ(acc.resok.access, 0u);
  EXPECT_EQ(CreateIn(root_, "x").status, NFS3ERR_ACCES);
}

TEST_P(ExportRulesTest, AllSquashMapsEveryoneToAnon) {
  if (GetParam() == BackendKind::kMemory) {
    GTEST_SKIP() << "needs a world-writable export root, which only the local backend can make";
  }
  StartServer("$DIR 127.0.0.1(rw,insecure,all_squash,anonuid=4242,anongid=4343)");
  ASSERT_EQ(chmod(harness_->dir().c_str(), 0777), 0);
  cred_ = rpc::testing::SysCred(1000, 1000);
  auto r = CreateIn(root_, "anon");
  ASSERT_EQ(r.status, NFS3_OK);
  EXPECT_EQ(r.resok.obj_attributes->uid, 4242u);
  EXPECT_EQ(r.resok.obj_attributes->gid, 4343u);
}

TEST_P(ExportRulesTest, SquashedRootCreatesAsAnonInAWritableDir) {
  if (GetParam() == BackendKind::kMemory) {
    GTEST_SKIP() << "needs a world-writable export root, which only the local backend can make";
  }
  StartServer("$DIR 127.0.0.1(rw,insecure,root_squash,anonuid=777,anongid=778)");
  ASSERT_EQ(chmod(harness_->dir().c_str(), 0777), 0);
  cred_ = rpc::testing::SysCred(0, 0);
  auto r = CreateIn(root_, "from-root");
  ASSERT_EQ(r.status, NFS3_OK);
  EXPECT_EQ(r.resok.obj_attributes->uid, 777u);
  EXPECT_EQ(r.resok.obj_attributes->gid, 778u);
}

TEST_P(ExportRulesTest, ClientOutsideTheAllowedSetIsRefusedAtMount) {
  harness_ = std::make_unique<ServerHarness>(GetParam(), "$DIR 192.0.2.0/24(rw,insecure)");
  harness_->Start();
  mnt_ = harness_->Connect(harness_->server().mount_port());
  auto m = Mount(harness_->dir());
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->fhs_status, mount3::MNT3ERR_ACCES);
}

TEST_P(ExportRulesTest, SecureExportNeedsAPrivilegedPort) {
  harness_ = std::make_unique<ServerHarness>(GetParam(), "$DIR 127.0.0.1(rw,secure)");
  harness_->Start();
  mnt_ = harness_->Connect(harness_->server().mount_port());
  auto m = Mount(harness_->dir());
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->fhs_status, mount3::MNT3ERR_ACCES);
  if (geteuid() != 0) GTEST_SKIP() << "binding a port below 1024 needs root";
  rpc::RpcClientOptions o;
  o.privileged_port = true;
  mnt_ = harness_->Connect(harness_->server().mount_port(), o);
  m = Mount(harness_->dir());
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->fhs_status, mount3::MNT3_OK);
  // The handle is refused on an unprivileged connection too.
  nfs_ = harness_->Connect(harness_->server().nfs_port());
  EXPECT_EQ(Call<GETATTR3res>(nfsproc3::GETATTR, GETATTR3args{m->mountinfo.fhandle}).status,
            NFS3ERR_PERM);
  nfs_ = harness_->Connect(harness_->server().nfs_port(), o);
  EXPECT_EQ(Call<GETATTR3res>(nfsproc3::GETATTR, GETATTR3args{m->mountinfo.fhandle}).status,
            NFS3_OK);
}

// The issue's own example: `localhost(rw)` used to refuse everyone, because no
// caller passed Match() a name. This goes through /etc/hosts.
TEST_P(ExportRulesTest, AHostNameRuleAdmitsThatHost) {
  StartServer("$DIR localhost(rw,insecure,no_root_squash) *(ro)");
  EXPECT_EQ(CreateIn(root_, "x").status, NFS3_OK);
}

// A resolver the test controls: 127.0.0.1 is `name` in reverse, and `name` is
// `forward` (by default 127.0.0.1 again) forward.
NameResolver FakeResolver(std::string name, std::string forward = "127.0.0.1",
                          std::atomic<int>* lookups = nullptr) {
  auto parse = [](const std::string& ip) {
    sockaddr_in in{};
    in.sin_family = AF_INET;
    inet_pton(AF_INET, ip.c_str(), &in.sin_addr);
    return *ClientAddress(reinterpret_cast<sockaddr*>(&in));
  };
  Address16 local = parse("127.0.0.1"), back = parse(forward);
  NameResolver r;
  r.reverse = [=](const Address16& a) {
    if (lookups) lookups->fetch_add(1);
    if (a != local) return ReverseAnswer{};
    return ReverseAnswer{ReverseAnswer::kName, name};
  };
  r.forward = [=](const std::string& n) {
    return ForwardAnswer{false,
                         n == name ? std::vector<Address16>{back} : std::vector<Address16>{}};
  };
  return r;
}

TEST_P(ExportRulesTest, WildcardRulesMatchTheClientsVerifiedName) {
  std::atomic<int> lookups{0};
  tune_ = [&](ServerOptions& o) {
    o.core.resolver = FakeResolver("PC1.Lab.Example.", "127.0.0.1", &lookups);
  };
  StartServer("$DIR *.lab.example(rw,insecure,no_root_squash) *(ro)");
  EXPECT_EQ(CreateIn(root_, "x").status, NFS3_OK);
  for (int i = 0; i < 20; ++i) ASSERT_EQ(AttrOf(root_).type, NF3DIR);
  EXPECT_EQ(lookups.load(), 1) << "the name is cached";
}

TEST_P(ExportRulesTest, ANameThatDoesNotResolveBackIsNotTrusted) {
  // The reverse zone says pc1.lab.example, but that name is another address.
  tune_ = [](ServerOptions& o) { o.core.resolver = FakeResolver("pc1.lab.example", "192.0.2.9"); };
  StartServer("$DIR *.lab.example(rw,insecure,no_root_squash) *(ro,insecure)");
  EXPECT_EQ(CreateIn(root_, "x").status, NFS3ERR_ROFS);
}

// exports(5): a host may be given "by an abbreviated name recognized by the
// resolver". `build` is build.lab.example to the resolver's search domains, and
// that is the client's verified name: as exportfs does, the rule's name is looked
// up when the export is set up and admits the address it names. A name that
// resolves elsewhere admits nobody new.
TEST_P(ExportRulesTest, AnAbbreviatedHostNameAdmitsTheHostItResolvesTo) {
  auto resolver = [](std::string other) {
    NameResolver r = FakeResolver("build.lab.example");
    NameResolver full = r;
    r.forward = [full, other](const std::string& n) {
      if (n == "build") return full.forward("build.lab.example");
      if (n == other) return FakeResolver("elsewhere", "192.0.2.9").forward("elsewhere");
      return full.forward(n);
    };
    return r;
  };
  tune_ = [&](ServerOptions& o) { o.core.resolver = resolver("other"); };
  StartServer("$DIR build(rw,insecure,no_root_squash) *(ro,insecure)");
  EXPECT_EQ(CreateIn(root_, "x").status, NFS3_OK);
  tune_ = [&](ServerOptions& o) { o.core.resolver = resolver("other"); };
  StartServer("$DIR other(rw,insecure,no_root_squash) *(ro,insecure)");
  EXPECT_EQ(CreateIn(root_, "y").status, NFS3ERR_ROFS);
}

TEST_P(ExportRulesTest, AnAddressRuleBeatsAMatchingName) {
  tune_ = [](ServerOptions& o) { o.core.resolver = FakeResolver("pc1.lab.example"); };
  StartServer("$DIR *.lab.example(rw,insecure) 127.0.0.1(ro,insecure,no_root_squash)");
  EXPECT_EQ(CreateIn(root_, "x").status, NFS3ERR_ROFS);
}

// From the review: a client whose name is not cached used to have its DNS
// lookup done on the I/O thread, stalling every connection on it. Its calls now
// run on a worker while the lookup waits.
TEST_P(ExportRulesTest, AClientWaitingForDnsDoesNotHoldUpOthers) {
  std::mutex gate;
  std::unique_lock closed(gate);
  std::atomic<int> slow_lookups{0};
  tune_ = [&](ServerOptions& o) {
    o.transport.io_threads = 1;
    NameResolver r = FakeResolver("pc1.lab.example");
    r.reverse = [&, fast = r.reverse](const Address16& a) {
      if (a[15] != 2) return fast(a);
      ++slow_lookups;
      std::lock_guard wait(gate);  // DNS does not answer for 127.0.0.2
      return ReverseAnswer{};
    };
    o.core.resolver = r;
  };
  StartServer("$DIR *.lab.example(rw,insecure,no_root_squash) 127.0.0.0/8(ro,insecure)");
  int fd = rpc::testing::RawLoopbackSocket(harness_->server().nfs_port(), "127.0.0.2");
  std::vector<std::byte> out;
  rpc::testing::AppendRecord(
      &out,
      rpc::testing::CallBytes(77, NFS_PROGRAM, NFS_V3, static_cast<uint32_t>(nfsproc3::GETATTR),
                              cred_, [&](xdr::XdrEncoder& e) { e(GETATTR3args{root_}); }));
  ASSERT_TRUE(rpc::testing::WriteAll(fd, out));
  while (slow_lookups.load() == 0) std::this_thread::yield();
  auto served = std::async(std::launch::async, [&] { return AttrOf(root_).type; });
  bool done = served.wait_for(std::chrono::seconds(30)) == std::future_status::ready;
  closed.unlock();  // either way, so that the test ends
  EXPECT_TRUE(done) << "127.0.0.1 waited for 127.0.0.2's DNS lookup";
  EXPECT_EQ(served.get(), NF3DIR);
  auto reply = rpc::testing::ReadRecord(fd);
  close(fd);
  xdr::XdrDecoder d(reply);
  rpc::ReplyHeader h;
  ASSERT_TRUE(rpc::DecodeReplyHeader(d, &h));
  GETATTR3res res;
  d(res);
  EXPECT_EQ(res.status, NFS3_OK) << "127.0.0.2 is admitted by its network once DNS answers";
}

INSTANTIATE_TEST_SUITE_P(Backends, ExportRulesTest,
                         ::testing::Values(BackendKind::kMemory, BackendKind::kLocal), BackendName);

}  // namespace
}  // namespace nfsx::server::testing
