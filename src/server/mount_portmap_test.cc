// MOUNT v3 and the built-in port mapper.
#include "proto/portmap_types.h"
#include "server/testing/server_fixture.h"

namespace nfsx::server::testing {
namespace {

class MountTest : public ServerTest {};

TEST_P(MountTest, ExportDumpUmnt) {
  auto ex = client::DecodeReply<mount3::exports>(
      mnt_->CallSync(mount3::MOUNT_PROGRAM, mount3::MOUNT_V3, 5, cred_, nullptr));
  ASSERT_TRUE(ex.has_value());
  ASSERT_EQ(ex->entries.size(), 1u);
  EXPECT_EQ(ex->entries[0].ex_dir.value, harness_->dir());
  ASSERT_EQ(ex->entries[0].ex_groups.size(), 1u);
  EXPECT_EQ(ex->entries[0].ex_groups[0].value, "127.0.0.1");

  auto dump = [&] {
    auto d = mnt_->CallSync(mount3::MOUNT_PROGRAM, mount3::MOUNT_V3, 2, cred_, nullptr);
    EXPECT_TRUE(d.has_value());
    mount3::mountlist list;
    EXPECT_TRUE(xdr::Decode(d->results, list));
    return list;
  };
  auto list = dump();
  ASSERT_EQ(list.entries.size(), 1u);
  EXPECT_EQ(list.entries[0].ml_hostname.value, "127.0.0.1");
  mount3::dirpath p{harness_->dir()};
  ASSERT_TRUE(mnt_->CallSync(mount3::MOUNT_PROGRAM, mount3::MOUNT_V3, 3, cred_,
                             [&](xdr::XdrEncoder& e) { e(p); }));
  EXPECT_TRUE(dump().entries.empty());
  Mount(harness_->dir());
  ASSERT_TRUE(mnt_->CallSync(mount3::MOUNT_PROGRAM, mount3::MOUNT_V3, 4, cred_, nullptr));
  EXPECT_TRUE(dump().entries.empty());
}

TEST_P(MountTest, SubdirectoryMountsAndErrors) {
  MKDIR3args md;
  md.where = {root_, {"sub"}};
  auto sub = Call<MKDIR3res>(nfsproc3::MKDIR, md);
  ASSERT_EQ(sub.status, NFS3_OK);
  MustCreate("file");
  auto m = Mount(harness_->dir() + "/sub/");
  ASSERT_TRUE(m.has_value());
  ASSERT_EQ(m->fhs_status, mount3::MNT3_OK);
  EXPECT_EQ(m->mountinfo.fhandle, *sub.resok.obj);
  EXPECT_EQ(Mount(harness_->dir() + "/file")->fhs_status, mount3::MNT3ERR_NOTDIR);
  EXPECT_EQ(Mount(harness_->dir() + "/missing")->fhs_status, mount3::MNT3ERR_NOENT);
  EXPECT_EQ(Mount(harness_->dir() + "/../")->fhs_status, mount3::MNT3ERR_ACCES);
  EXPECT_EQ(Mount("/definitely/not/exported")->fhs_status, mount3::MNT3ERR_NOENT);
  auto flavors = Mount(harness_->dir())->mountinfo.auth_flavors;
  EXPECT_EQ(flavors, (std::vector<uint32_t>{1, 0}));
}

mount3::mountlist Dump(rpc::RpcClient& mnt, const rpc::Credential& cred) {
  auto d = mnt.CallSync(mount3::MOUNT_PROGRAM, mount3::MOUNT_V3, 2, cred, nullptr);
  EXPECT_TRUE(d.has_value());
  mount3::mountlist list;
  if (d) {
    EXPECT_TRUE(xdr::Decode(d->results, list));
  }
  return list;
}

TEST_P(MountTest, PathSpellingsAreOneEntryAndUmntOfAnySpellingRemovesIt) {
  const std::string dir = harness_->dir();
  const std::string variants[] = {
      dir, dir + "/", dir + "//", "/" + dir + "///",
      dir.substr(0, dir.rfind('/')) + "//" + dir.substr(dir.rfind('/') + 1)};
  for (int i = 0; i < 10'000; ++i) {
    auto m = Mount(variants[i % std::size(variants)]);
    ASSERT_TRUE(m.has_value());
    ASSERT_EQ(m->fhs_status, mount3::MNT3_OK) << variants[i % std::size(variants)];
  }
  auto list = Dump(*mnt_, cred_);
  ASSERT_EQ(list.entries.size(), 1u);
  EXPECT_EQ(list.entries[0].ml_directory.value, dir);
  mount3::dirpath p{dir + "//"};
  ASSERT_TRUE(mnt_->CallSync(mount3::MOUNT_PROGRAM, mount3::MOUNT_V3, 3, cred_,
                             [&](xdr::XdrEncoder& e) { e(p); }));
  EXPECT_TRUE(Dump(*mnt_, cred_).entries.empty());
}

class BoundedMountListTest : public MountTest {
 protected:
  BoundedMountListTest() {
    tune_ = [](ServerOptions& o) { o.max_mounts = 3; };
  }
};

TEST_P(BoundedMountListTest, MountsBeyondTheBoundSucceedUnlisted) {
  for (int i = 0; i < 6; ++i) {
    MKDIR3args md;
    md.where = {root_, {"d" + std::to_string(i)}};
    ASSERT_EQ(Call<MKDIR3res>(nfsproc3::MKDIR, md).status, NFS3_OK);
    auto m = Mount(harness_->dir() + "/d" + std::to_string(i));
    ASSERT_TRUE(m.has_value());
    EXPECT_EQ(m->fhs_status, mount3::MNT3_OK);
  }
  EXPECT_EQ(Dump(*mnt_, cred_).entries.size(), 3u);
}

INSTANTIATE_TEST_SUITE_P(Backends, BoundedMountListTest, ::testing::Values(BackendKind::kMemory),
                         BackendName);

INSTANTIATE_TEST_SUITE_P(Backends, MountTest, ::testing::Values(BackendKind::kMemory), BackendName);

TEST(PortmapTest, GetportAndDump) {
  std::string dir = MakeTempDir("pm"), state = MakeTempDir("pmstate");
  ServerOptions o;
  o.nfs_port = o.mount_port = 0;
  o.portmap = true;
  o.portmap_port = 0;
  o.state_dir = state;
  o.backend = Backend::kMemory;
  std::string error;
  auto s = Server::Create(ExportTable::Single(dir), o, &error);
  ASSERT_TRUE(s.has_value()) << error;
  ASSERT_TRUE((*s)->Start(&error).has_value()) << error;
  auto c = rpc::RpcClient::Connect("127.0.0.1", (*s)->portmap_port());
  ASSERT_TRUE(c.has_value());
  portmap::mapping want{NFS_PROGRAM, NFS_V3, portmap::IPPROTO_TCP_, 0};
  auto port =
      client::CallSync<uint32_t>(**c, portmap::PMAP_PROGRAM, portmap::PMAP_VERS, 3, {}, want);
  ASSERT_TRUE(port.has_value());
  EXPECT_EQ(*port, (*s)->nfs_port());
  want.prog = 100021;  // NLM: not offered
  EXPECT_EQ(
      *client::CallSync<uint32_t>(**c, portmap::PMAP_PROGRAM, portmap::PMAP_VERS, 3, {}, want), 0u);
  auto dump = (*c)->CallSync(portmap::PMAP_PROGRAM, portmap::PMAP_VERS, 4, {}, nullptr);
  ASSERT_TRUE(dump.has_value());
  portmap::pmaplist list;
  ASSERT_TRUE(xdr::Decode(dump->results, list));
  EXPECT_EQ(list.entries.size(), 3u);
  auto callit = (*c)->CallSync(portmap::PMAP_PROGRAM, portmap::PMAP_VERS, 5, {}, nullptr);
  EXPECT_EQ(callit->header.accepted, rpc::accept_stat::PROC_UNAVAIL);
}

}  // namespace
}  // namespace nfsx::server::testing
