// The NFSv3 procedures over the wire, against both backends.
#include <thread>

#include "server/testing/server_fixture.h"

namespace nfsx::server::testing {
namespace {

class Nfs3Test : public ServerTest {};

TEST_P(Nfs3Test, NullAndFsinfo) {
  auto null = nfs_->CallSync(NFS_PROGRAM, NFS_V3, 0, cred_, nullptr);
  ASSERT_TRUE(null.has_value());
  EXPECT_TRUE(null->header.ok());
  auto fi = Call<FSINFO3res>(nfsproc3::FSINFO, FSINFO3args{root_});
  ASSERT_EQ(fi.status, NFS3_OK);
  EXPECT_GE(fi.resok.rtmax, 1u << 20);
  EXPECT_GE(fi.resok.wtmax, 1u << 20);
  EXPECT_EQ(fi.resok.time_delta, (nfstime3{0, 1}));
  EXPECT_TRUE(fi.resok.properties & FSF3_SYMLINK);
  auto pc = Call<PATHCONF3res>(nfsproc3::PATHCONF, PATHCONF3args{root_});
  ASSERT_EQ(pc.status, NFS3_OK);
  EXPECT_EQ(pc.resok.name_max, 255u);
  auto fs = Call<FSSTAT3res>(nfsproc3::FSSTAT, FSSTAT3args{root_});
  ASSERT_EQ(fs.status, NFS3_OK);
  EXPECT_GT(fs.resok.tbytes, 0u);
}

TEST_P(Nfs3Test, WriteReadCommitRoundTrip) {
  nfs_fh3 fh = MustCreate("data.bin");
  std::string payload(100000, '\0');
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<char>(i * 7 + 3);
  auto w = WriteTo(fh, 0, payload);
  ASSERT_EQ(w.status, NFS3_OK);
  EXPECT_EQ(w.resok.count, payload.size());
  EXPECT_EQ(w.resok.committed, UNSTABLE);
  auto c = Call<COMMIT3res>(nfsproc3::COMMIT, COMMIT3args{fh, 0, 0});
  ASSERT_EQ(c.status, NFS3_OK);
  EXPECT_EQ(c.resok.verf, w.resok.verf);  // no restart, no error: same verifier

  bool eof = false;
  EXPECT_EQ(ReadFrom(fh, 0, 200000, &eof), payload);
  EXPECT_TRUE(eof);
  EXPECT_EQ(ReadFrom(fh, 1000, 10, &eof), payload.substr(1000, 10));
  EXPECT_FALSE(eof);
  EXPECT_EQ(ReadFrom(fh, 200000, 10, &eof), "");
  EXPECT_TRUE(eof);
  EXPECT_EQ(AttrOf(fh).size, payload.size());
}

TEST_P(Nfs3Test, StableWritesReportWhatTheyReached) {
  nfs_fh3 fh = MustCreate("stable.bin");
  EXPECT_EQ(WriteTo(fh, 0, "abc", FILE_SYNC).resok.committed, FILE_SYNC);
  EXPECT_EQ(WriteTo(fh, 3, "def", DATA_SYNC).resok.committed, DATA_SYNC);
  EXPECT_EQ(ReadFrom(fh, 0, 10), "abcdef");
}

// A write or truncation by anyone but root clears setuid, and setgid when the file is
// group-executable, as on a local file; root's do not. The FUSE mount relies on this
// (it leaves clearing them to the server, as the kernel NFS client does).
TEST_P(Nfs3Test, WritesByNonRootClearSetuidAndSetgid) {
  AsUser(0, 0);
  nfs_fh3 f = MustCreate("suid", 0777);
  auto set_mode = [&](uint32_t mode) {
    AsUser(0, 0);
    SETATTR3args sa;
    sa.object = f;
    sa.new_attributes.mode = mode;
    ASSERT_EQ(Call<SETATTR3res>(nfsproc3::SETATTR, sa).status, NFS3_OK);
  };
  set_mode(06777);
  ASSERT_EQ(WriteTo(f, 0, "root").status, NFS3_OK);
  EXPECT_EQ(AttrOf(f).mode & 07777, 06777u) << "root's write kept the bits";
  AsUser(1000, 1000);
  auto w = WriteTo(f, 0, "user");
  ASSERT_EQ(w.status, NFS3_OK);
  ASSERT_TRUE(w.resok.file_wcc.after.has_value());
  EXPECT_EQ(w.resok.file_wcc.after->mode & 07777, 0777u) << "the reply shows the new mode";
  EXPECT_EQ(AttrOf(f).mode & 07777, 0777u);
  set_mode(06767);  // setgid without group execute is not a privilege: it stays
  AsUser(1000, 1000);
  ASSERT_EQ(WriteTo(f, 0, "user").status, NFS3_OK);
  EXPECT_EQ(AttrOf(f).mode & 07777, 02767u);
  set_mode(06777);
  AsUser(1000, 1000);
  SETATTR3args truncate;
  truncate.object = f;
  truncate.new_attributes.size = 0;
  ASSERT_EQ(Call<SETATTR3res>(nfsproc3::SETATTR, truncate).status, NFS3_OK);
  EXPECT_EQ(AttrOf(f).mode & 07777, 0777u) << "truncation by a user";
}

// Nobody makes a file setgid to a group they are not in. A user with write access
// to a setgid directory of another group used to be able to create (or chmod) a
// setgid binary of that group: the backends act as root, whom the kernel lets keep
// the bit. Now as on Linux: chmod drops it unless the caller is in the file's group
// (after a chown in the same call), a new group-executable file drops it unless the
// caller is in the group it gets; root and members keep it.
TEST_P(Nfs3Test, SetgidOnlyForMembersOfTheFilesGroup) {
  AsUser(0, 0);
  MKDIR3args md;
  md.where = {root_, {"sgid-dir"}};
  md.attributes.mode = 02777;
  auto made = Call<MKDIR3res>(nfsproc3::MKDIR, md);
  ASSERT_EQ(made.status, NFS3_OK);
  nfs_fh3 dir = *made.resok.obj;
  SETATTR3args to_group;
  to_group.object = dir;
  to_group.new_attributes.gid = 500;
  to_group.new_attributes.mode = 02777;  // chown clears setgid on some backends: set it again
  ASSERT_EQ(Call<SETATTR3res>(nfsproc3::SETATTR, to_group).status, NFS3_OK);
  ASSERT_EQ(AttrOf(dir).gid, 500u);
  ASSERT_EQ(AttrOf(dir).mode & 02000, 02000u);

  auto create = [&](const std::string& name, uint32_t mode) {
    auto r = CreateIn(dir, name, UNCHECKED, mode);
    EXPECT_EQ(r.status, NFS3_OK) << name;
    return r.resok.obj ? *r.resok.obj : nfs_fh3{};
  };
  auto chmod = [&](const nfs_fh3& f, uint32_t mode) {
    SETATTR3args sa;
    sa.object = f;
    sa.new_attributes.mode = mode;
    EXPECT_EQ(Call<SETATTR3res>(nfsproc3::SETATTR, sa).status, NFS3_OK);
  };
  AsUser(1000, 1000);  // not in group 500
  nfs_fh3 outsider = create("outsider", 02755);
  EXPECT_EQ(AttrOf(outsider).gid, 500u) << "a setgid directory passes its group on";
  EXPECT_EQ(AttrOf(outsider).mode & 07777, 0755u) << "created setgid to a group not its own";
  chmod(outsider, 02755);
  EXPECT_EQ(AttrOf(outsider).mode & 07777, 0755u) << "chmod g+s to a group not its own";
  nfs_fh3 plain = create("not-exec", 02644);  // setgid without group exec: mandatory locking
  EXPECT_EQ(AttrOf(plain).mode & 07777, 02644u);

  cred_ = rpc::testing::SysCred(1001, 1001, {500});  // a member of 500
  nfs_fh3 member = create("member", 02755);
  EXPECT_EQ(AttrOf(member).mode & 07777, 02755u);
  chmod(member, 02750);
  EXPECT_EQ(AttrOf(member).mode & 07777, 02750u);

  AsUser(0, 0);
  chmod(outsider, 02755);
  EXPECT_EQ(AttrOf(outsider).mode & 07777, 02755u) << "root may";
}

// mkdir(2) on Linux keeps only the permission and sticky bits it is given
// (vfs_prepare_mode), for root too; a new directory is setgid only by inheriting
// it from a setgid parent. knfsd's MKDIR goes through the same call.
TEST_P(Nfs3Test, MkdirKeepsNoSetIdBitsItWasAskedFor) {
  auto mkdir = [&](const nfs_fh3& in, const std::string& name, uint32_t mode) {
    MKDIR3args md;
    md.where = {in, {name}};
    md.attributes.mode = mode;
    auto made = Call<MKDIR3res>(nfsproc3::MKDIR, md);
    EXPECT_EQ(made.status, NFS3_OK) << name;
    return made.resok.obj ? *made.resok.obj : nfs_fh3{};
  };
  AsUser(0, 0);
  nfs_fh3 open_dir = mkdir(root_, "open", 0777);
  SETATTR3args wide;
  wide.object = open_dir;
  wide.new_attributes.mode = 0777;  // whatever the umask-free backend made of it
  ASSERT_EQ(Call<SETATTR3res>(nfsproc3::SETATTR, wide).status, NFS3_OK);
  EXPECT_EQ(AttrOf(mkdir(open_dir, "by-root", 07755)).mode & 07777, 01755u);
  AsUser(1000, 1000);
  EXPECT_EQ(AttrOf(mkdir(open_dir, "by-user", 06755)).mode & 07777, 0755u)
      << "a user made a setuid/setgid directory";
  AsUser(0, 0);
  wide.new_attributes.mode = 02777;
  ASSERT_EQ(Call<SETATTR3res>(nfsproc3::SETATTR, wide).status, NFS3_OK);
  AsUser(1000, 1000);
  EXPECT_EQ(AttrOf(mkdir(open_dir, "inherits", 04755)).mode & 07777, 02755u)
      << "setgid is inherited from the parent, setuid never given";
}

TEST_P(Nfs3Test, ReadAndWriteRefuseDirectories) {
  EXPECT_EQ(Call<READ3res>(nfsproc3::READ, READ3args{root_, 0, 10}).status, NFS3ERR_ISDIR);
  EXPECT_EQ(WriteTo(root_, 0, "x").status, NFS3ERR_ISDIR);
}

TEST_P(Nfs3Test, WriteCountMustMatchData) {
  nfs_fh3 fh = MustCreate("count.bin");
  WRITE3args a;
  a.file = fh;
  a.count = 10;
  auto owner = std::make_shared<std::string>("abc");
  a.data = {std::as_bytes(std::span(*owner)), owner};
  EXPECT_EQ(Call<WRITE3res>(nfsproc3::WRITE, a).status, NFS3ERR_INVAL);
}

TEST_P(Nfs3Test, SetattrTruncatesAndHonoursGuard) {
  nfs_fh3 fh = MustCreate("trunc.bin");
  WriteTo(fh, 0, "0123456789");
  fattr3 before = AttrOf(fh);
  SETATTR3args a;
  a.object = fh;
  a.new_attributes.size = 4;
  a.guard = nfstime3{before.ctime.seconds, before.ctime.nseconds + 1};
  auto wrong = Call<SETATTR3res>(nfsproc3::SETATTR, a);
  EXPECT_EQ(wrong.status, NFS3ERR_NOT_SYNC);
  a.guard = before.ctime;
  auto ok = Call<SETATTR3res>(nfsproc3::SETATTR, a);
  ASSERT_EQ(ok.status, NFS3_OK);
  ASSERT_TRUE(ok.resok.obj_wcc.after.has_value());
  EXPECT_EQ(ok.resok.obj_wcc.after->size, 4u);
  EXPECT_GT(ok.resok.obj_wcc.after->mtime, before.mtime);
  EXPECT_EQ(ReadFrom(fh, 0, 100), "0123");
}

TEST_P(Nfs3Test, SetattrClientTimeIsExact) {
  nfs_fh3 fh = MustCreate("times.bin");
  SETATTR3args a;
  a.object = fh;
  a.new_attributes.mtime = {SET_TO_CLIENT_TIME, {1000000, 42}};
  a.new_attributes.atime = {SET_TO_CLIENT_TIME, {2000000, 7}};
  ASSERT_EQ(Call<SETATTR3res>(nfsproc3::SETATTR, a).status, NFS3_OK);
  fattr3 f = AttrOf(fh);
  EXPECT_EQ(f.mtime, (nfstime3{1000000, 42}));
  EXPECT_EQ(f.atime, (nfstime3{2000000, 7}));
}

TEST_P(Nfs3Test, CreateModes) {
  nfs_fh3 fh = MustCreate("c.txt");
  WriteTo(fh, 0, "keep me");
  // UNCHECKED on an existing file opens it as is...
  auto again = CreateIn(root_, "c.txt", UNCHECKED);
  ASSERT_EQ(again.status, NFS3_OK);
  EXPECT_EQ(*again.resok.obj, fh);
  EXPECT_EQ(ReadFrom(fh, 0, 100), "keep me");
  // ...and with size 0 truncates it (O_TRUNC).
  CREATE3args trunc;
  trunc.where = {root_, {"c.txt"}};
  trunc.how.obj_attributes.size = 0;
  ASSERT_EQ(Call<CREATE3res>(nfsproc3::CREATE, trunc).status, NFS3_OK);
  EXPECT_EQ(AttrOf(fh).size, 0u);
  EXPECT_EQ(CreateIn(root_, "c.txt", GUARDED).status, NFS3ERR_EXIST);

  CREATE3args ex;
  ex.where = {root_, {"excl.txt"}};
  ex.how.mode = EXCLUSIVE;
  ex.how.verf = {std::byte{1}, std::byte{2}, std::byte{3}, std::byte{4},
                 std::byte{5}, std::byte{6}, std::byte{7}, std::byte{8}};
  auto first = Call<CREATE3res>(nfsproc3::CREATE, ex);
  ASSERT_EQ(first.status, NFS3_OK);
  // A retransmission with the same verifier succeeds with the same file...
  auto retry = Call<CREATE3res>(nfsproc3::CREATE, ex);
  ASSERT_EQ(retry.status, NFS3_OK);
  EXPECT_EQ(*retry.resok.obj, *first.resok.obj);
  // ...another verifier is another client's create: EXIST.
  ex.how.verf[0] = std::byte{9};
  EXPECT_EQ(Call<CREATE3res>(nfsproc3::CREATE, ex).status, NFS3ERR_EXIST);
}

TEST_P(Nfs3Test, CreateSetsOwnerFromCredential) {
  auto r = CreateIn(root_, "owned.txt");
  ASSERT_EQ(r.status, NFS3_OK);
  ASSERT_TRUE(r.resok.obj_attributes.has_value());
  EXPECT_EQ(r.resok.obj_attributes->uid, 1000u);
  EXPECT_EQ(r.resok.obj_attributes->gid, 1000u);
  EXPECT_EQ(r.resok.obj_attributes->mode, 0644u);
}

TEST_P(Nfs3Test, LookupErrorsAndDots) {
  EXPECT_EQ(LookupIn(root_, "missing").status, NFS3ERR_NOENT);
  EXPECT_EQ(LookupIn(root_, std::string(256, 'n')).status, NFS3ERR_NAMETOOLONG);
  EXPECT_EQ(LookupIn(root_, "a/b").status, NFS3ERR_ACCES);
  nfs_fh3 file = MustCreate("plain");
  EXPECT_EQ(LookupIn(file, "x").status, NFS3ERR_NOTDIR);
  auto dot = LookupIn(root_, ".");
  ASSERT_EQ(dot.status, NFS3_OK);
  EXPECT_EQ(dot.resok.object, root_);
  // ".." of the export root is the root: nothing above the export is reachable.
  auto up = LookupIn(root_, "..");
  ASSERT_EQ(up.status, NFS3_OK);
  EXPECT_EQ(up.resok.object, root_);
}

TEST_P(Nfs3Test, NamespaceOperations) {
  MKDIR3args md;
  md.where = {root_, {"dir"}};
  md.attributes.mode = 0755;
  auto mk = Call<MKDIR3res>(nfsproc3::MKDIR, md);
  ASSERT_EQ(mk.status, NFS3_OK);
  nfs_fh3 dir = *mk.resok.obj;
  EXPECT_EQ(mk.resok.obj_attributes->type, NF3DIR);
  EXPECT_EQ(Call<MKDIR3res>(nfsproc3::MKDIR, md).status, NFS3ERR_EXIST);
  auto sub = LookupIn(dir, "..");
  ASSERT_EQ(sub.status, NFS3_OK);
  EXPECT_EQ(sub.resok.object, root_);

  auto f = CreateIn(dir, "f");
  ASSERT_EQ(f.status, NFS3_OK);
  RMDIR3args rd{{root_, {"dir"}}};
  EXPECT_EQ(Call<RMDIR3res>(nfsproc3::RMDIR, rd).status, NFS3ERR_NOTEMPTY);
  EXPECT_EQ(Call<REMOVE3res>(nfsproc3::REMOVE, REMOVE3args{{root_, {"dir"}}}).status,
            NFS3ERR_ISDIR);
  EXPECT_EQ(Call<RMDIR3res>(nfsproc3::RMDIR, RMDIR3args{{dir, {"f"}}}).status, NFS3ERR_NOTDIR);

  // LINK: both names reach the same file, nlink goes to 2.
  LINK3args ln{*f.resok.obj, {root_, {"hard"}}};
  auto link = Call<LINK3res>(nfsproc3::LINK, ln);
  ASSERT_EQ(link.status, NFS3_OK);
  EXPECT_EQ(link.resok.file_attributes->nlink, 2u);
  EXPECT_EQ(LookupIn(root_, "hard").resok.object, *f.resok.obj);

  // RENAME over an existing file replaces it.
  MustCreate("victim");
  RENAME3args rn{{root_, {"hard"}}, {root_, {"victim"}}};
  ASSERT_EQ(Call<RENAME3res>(nfsproc3::RENAME, rn).status, NFS3_OK);
  EXPECT_EQ(LookupIn(root_, "hard").status, NFS3ERR_NOENT);
  EXPECT_EQ(LookupIn(root_, "victim").resok.object, *f.resok.obj);

  // REMOVE both names: the handle goes stale.
  ASSERT_EQ(Call<REMOVE3res>(nfsproc3::REMOVE, REMOVE3args{{root_, {"victim"}}}).status, NFS3_OK);
  ASSERT_EQ(Call<REMOVE3res>(nfsproc3::REMOVE, REMOVE3args{{dir, {"f"}}}).status, NFS3_OK);
  EXPECT_EQ(Call<GETATTR3res>(nfsproc3::GETATTR, GETATTR3args{*f.resok.obj}).status, NFS3ERR_STALE);
  EXPECT_EQ(Call<READ3res>(nfsproc3::READ, READ3args{*f.resok.obj, 0, 1}).status, NFS3ERR_STALE);
  ASSERT_EQ(Call<RMDIR3res>(nfsproc3::RMDIR, rd).status, NFS3_OK);
  EXPECT_EQ(Call<GETATTR3res>(nfsproc3::GETATTR, GETATTR3args{dir}).status, NFS3ERR_STALE);
  EXPECT_EQ(Call<REMOVE3res>(nfsproc3::REMOVE, REMOVE3args{{root_, {"victim"}}}).status,
            NFS3ERR_NOENT);
}

TEST_P(Nfs3Test, SymlinkReadlinkAndMknod) {
  SYMLINK3args s;
  s.where = {root_, {"link"}};
  s.symlink_data.value = "../../etc/passwd";
  auto made = Call<SYMLINK3res>(nfsproc3::SYMLINK, s);
  ASSERT_EQ(made.status, NFS3_OK);
  auto rl = Call<READLINK3res>(nfsproc3::READLINK, READLINK3args{*made.resok.obj});
  ASSERT_EQ(rl.status, NFS3_OK);
  EXPECT_EQ(rl.resok.data.value, "../../etc/passwd");
  // The server never follows it: LOOKUP gives the link, READ refuses it.
  auto lk = LookupIn(root_, "link");
  ASSERT_EQ(lk.status, NFS3_OK);
  EXPECT_EQ(lk.resok.obj_attributes->type, NF3LNK);
  EXPECT_EQ(Call<READ3res>(nfsproc3::READ, READ3args{lk.resok.object, 0, 10}).status,
            NFS3ERR_INVAL);
  EXPECT_EQ(Call<READLINK3res>(nfsproc3::READLINK, READLINK3args{root_}).status, NFS3ERR_INVAL);

  MKNOD3args mk;
  mk.where = {root_, {"fifo"}};
  mk.type = NF3FIFO;
  mk.attributes.mode = 0600;
  auto fifo = Call<MKNOD3res>(nfsproc3::MKNOD, mk);
  ASSERT_EQ(fifo.status, NFS3_OK);
  EXPECT_EQ(fifo.resok.obj_attributes->type, NF3FIFO);
  mk.where.name.value = "reg";
  mk.type = NF3REG;
  EXPECT_EQ(Call<MKNOD3res>(nfsproc3::MKNOD, mk).status, NFS3ERR_BADTYPE);
  mk.where.name.value = "chr";
  mk.type = NF3CHR;
  EXPECT_EQ(Call<MKNOD3res>(nfsproc3::MKNOD, mk).status, NFS3ERR_PERM);  // uid 1000
}

TEST_P(Nfs3Test, AccessAgreesWithOperations) {
  cred_ = rpc::testing::SysCred(0, 0);
  nfs_fh3 fh = MustCreate("root-only", 0600);
  cred_ = rpc::testing::SysCred(1000, 1000);
  auto acc = Call<ACCESS3res>(nfsproc3::ACCESS, ACCESS3args{fh, 0x3f});
  ASSERT_EQ(acc.status, NFS3_OK);
  EXPECT_EQ(acc.resok.access & (ACCESS3_READ | ACCESS3_MODIFY), 0u);
  EXPECT_EQ(Call<READ3res>(nfsproc3::READ, READ3args{fh, 0, 1}).status, NFS3ERR_ACCES);
  EXPECT_EQ(WriteTo(fh, 0, "x").status, NFS3ERR_ACCES);

  // The owner may write a file it made read-only (an open file survives chmod).
  nfs_fh3 mine = MustCreate("mine", 0444);
  auto mine_acc = Call<ACCESS3res>(nfsproc3::ACCESS, ACCESS3args{mine, ACCESS3_READ});
  EXPECT_EQ(mine_acc.resok.access, ACCESS3_READ);
  EXPECT_EQ(WriteTo(mine, 0, "owner").status, NFS3_OK);

  // chmod by someone else: PERM; chown to another user: PERM.
  SETATTR3args chmod;
  chmod.object = fh;
  chmod.new_attributes.mode = 0777;
  EXPECT_EQ(Call<SETATTR3res>(nfsproc3::SETATTR, chmod).status, NFS3ERR_PERM);
  SETATTR3args chown;
  chown.object = mine;
  chown.new_attributes.uid = 0;
  EXPECT_EQ(Call<SETATTR3res>(nfsproc3::SETATTR, chown).status, NFS3ERR_PERM);
}

TEST_P(Nfs3Test, StickyDirectoryProtectsOthersFiles) {
  cred_ = rpc::testing::SysCred(0, 0);
  MKDIR3args md;
  md.where = {root_, {"tmp"}};
  md.attributes.mode = 01777;
  nfs_fh3 tmp = *Call<MKDIR3res>(nfsproc3::MKDIR, md).resok.obj;
  cred_ = rpc::testing::SysCred(1000, 1000);
  ASSERT_EQ(CreateIn(tmp, "alice").status, NFS3_OK);
  cred_ = rpc::testing::SysCred(1001, 1001);
  EXPECT_EQ(Call<REMOVE3res>(nfsproc3::REMOVE, REMOVE3args{{tmp, {"alice"}}}).status,
            NFS3ERR_ACCES);
  RENAME3args rn{{tmp, {"alice"}}, {tmp, {"bob"}}};
  EXPECT_EQ(Call<RENAME3res>(nfsproc3::RENAME, rn).status, NFS3ERR_ACCES);
  cred_ = rpc::testing::SysCred(1000, 1000);
  EXPECT_EQ(Call<REMOVE3res>(nfsproc3::REMOVE, REMOVE3args{{tmp, {"alice"}}}).status, NFS3_OK);
}

// A client's count/maxcount is a wish, not an order: asking for 4 GiB in one
// reply gets at most the server's dtmax (1 MiB by default; 64 KiB here, so that a
// few hundred KiB of names show it), and cookies page on through the rest.
// Before, the server built one reply of the whole directory: a directory of
// millions of names, or many such calls, took gigabytes.
class ReaddirCapTest : public ServerTest {
 protected:
  static constexpr size_t kCap = 64u << 10;
  ReaddirCapTest() {
    tune_ = [](server::ServerOptions& o) { o.core.dtmax = kCap; };
  }
};

TEST_P(ReaddirCapTest, RepliesAreCappedWhateverTheClientAsks) {
  MKDIR3args md;
  md.where = {root_, {"wide"}};
  nfs_fh3 wide = *Call<MKDIR3res>(nfsproc3::MKDIR, md).resok.obj;
  constexpr int kFiles = 1200;
  const std::string pad(200, 'n');  // long names: ~240 bytes per READDIR entry
  for (int i = 0; i < kFiles; ++i) {
    ASSERT_EQ(CreateIn(wide, pad + std::to_string(i)).status, NFS3_OK);
  }
  for (bool plus : {false, true}) {
    size_t names = 0, calls = 0;
    uint64_t cookie = 0;
    cookieverf3 verf{};
    for (bool eof = false; !eof && calls < 100; ++calls) {
      size_t bytes = 0;
      if (plus) {
        auto r = Call<READDIRPLUS3res>(
            nfsproc3::READDIRPLUS, READDIRPLUS3args{wide, cookie, verf, UINT32_MAX, UINT32_MAX});
        ASSERT_EQ(r.status, NFS3_OK);
        for (auto& e : r.resok.entries) {
          // The entry as encoded (RFC 1813 entryplus3).
          size_t name = (e.name.value.size() + 3) / 4 * 4;
          bytes += 4 + 8 + 4 + name + 8 + 4 + kFattr3Size + 4 + 4 + e.name_handle->size;
          names += e.name.value.size() > 200;
          cookie = e.cookie;
        }
        verf = r.resok.cookieverf;
        eof = r.resok.eof;
      } else {
        auto r = Call<READDIR3res>(nfsproc3::READDIR, READDIR3args{wide, cookie, verf, UINT32_MAX});
        ASSERT_EQ(r.status, NFS3_OK);
        for (auto& e : r.resok.entries) {
          bytes += 4 + 8 + 4 + (e.name.value.size() + 3) / 4 * 4 + 8;  // entry3
          names += e.name.value.size() > 200;
          cookie = e.cookie;
        }
        verf = r.resok.cookieverf;
        eof = r.resok.eof;
      }
      EXPECT_LE(bytes, kCap) << (plus ? "READDIRPLUS" : "READDIR") << " call " << calls;
    }
    EXPECT_EQ(names, static_cast<size_t>(kFiles)) << "paging on by cookie lists every name";
    EXPECT_GT(calls, plus ? 3u : 1u) << "one call returned everything";
  }
}

TEST_P(Nfs3Test, ReaddirPagesThroughABigDirectory) {
  MKDIR3args md;
  md.where = {root_, {"big"}};
  nfs_fh3 big = *Call<MKDIR3res>(nfsproc3::MKDIR, md).resok.obj;
  constexpr int kFiles = 700;
  for (int i = 0; i < kFiles; ++i) {
    ASSERT_EQ(CreateIn(big, "file-" + std::to_string(i)).status, NFS3_OK);
  }
  for (bool plus : {false, true}) {
    std::map<std::string, int> seen;
    uint64_t cookie = 0;
    cookieverf3 verf{};
    int calls = 0;
    for (bool eof = false; !eof; ++calls) {
      ASSERT_LT(calls, 1000);
      if (plus) {
        READDIRPLUS3args a{big, cookie, verf, 1024, 4096};
        auto r = Call<READDIRPLUS3res>(nfsproc3::READDIRPLUS, a);
        ASSERT_EQ(r.status, NFS3_OK);
        for (auto& e : r.resok.entries) {
          ++seen[e.name.value];
          if (e.name.value != "." && e.name.value != "..") {
            ASSERT_TRUE(e.name_handle.has_value()) << e.name.value;
            ASSERT_TRUE(e.name_attributes.has_value());
            EXPECT_EQ(e.name_attributes->fileid, e.fileid);
          }
          cookie = e.cookie;
        }
        verf = r.resok.cookieverf;
        eof = r.resok.eof;
      } else {
        auto r = Call<READDIR3res>(nfsproc3::READDIR, READDIR3args{big, cookie, verf, 1024});
        ASSERT_EQ(r.status, NFS3_OK);
        for (auto& e : r.resok.entries) {
          ++seen[e.name.value];
          cookie = e.cookie;
        }
        verf = r.resok.cookieverf;
        eof = r.resok.eof;
      }
    }
    EXPECT_GT(calls, 5) << "paging was exercised";
    EXPECT_EQ(seen.size(), static_cast<size_t>(kFiles + 2));
    for (auto& [name, count] : seen) EXPECT_EQ(count, 1) << name;
    EXPECT_EQ(seen.count("."), 1u);
    EXPECT_EQ(seen.count("file-699"), 1u);
  }
  auto tiny = Call<READDIR3res>(nfsproc3::READDIR, READDIR3args{big, 0, {}, 50});
  EXPECT_EQ(tiny.status, NFS3ERR_TOOSMALL);
}

TEST_P(Nfs3Test, HandleOfAHandleFromAnotherExportIdIsRefused) {
  nfs_fh3 fh = MustCreate("h");
  nfs_fh3 forged = fh;
  forged.data[3] = std::byte(static_cast<uint8_t>(forged.data[3]) ^ 1);  // export id
  EXPECT_EQ(Call<GETATTR3res>(nfsproc3::GETATTR, GETATTR3args{forged}).status, NFS3ERR_BADHANDLE);
  for (size_t i = 0; i < fh.size; i += 5) {
    nfs_fh3 bad = fh;
    bad.data[i] = std::byte(static_cast<uint8_t>(bad.data[i]) ^ 0x40);
    EXPECT_EQ(Call<GETATTR3res>(nfsproc3::GETATTR, GETATTR3args{bad}).status, NFS3ERR_BADHANDLE)
        << "byte " << i;
  }
  nfs_fh3 truncated = fh;
  truncated.size -= 1;
  EXPECT_EQ(Call<GETATTR3res>(nfsproc3::GETATTR, GETATTR3args{truncated}).status,
            NFS3ERR_BADHANDLE);
  EXPECT_EQ(Call<GETATTR3res>(nfsproc3::GETATTR, GETATTR3args{nfs_fh3{}}).status,
            NFS3ERR_BADHANDLE);
}

TEST_P(Nfs3Test, GarbageArgumentsAreRejectedAndServerCarriesOn) {
  // A READ whose arguments stop after the handle.
  auto r = nfs_->CallSync(NFS_PROGRAM, NFS_V3, static_cast<uint32_t>(nfsproc3::READ), cred_,
                          [&](xdr::XdrEncoder& e) { e(root_); });
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->header.accepted, rpc::accept_stat::GARBAGE_ARGS);
  auto bad_proc = nfs_->CallSync(NFS_PROGRAM, NFS_V3, 22, cred_, nullptr);
  ASSERT_TRUE(bad_proc.has_value());
  EXPECT_EQ(bad_proc->header.accepted, rpc::accept_stat::PROC_UNAVAIL);
  auto v2 = nfs_->CallSync(NFS_PROGRAM, 2, 0, cred_, nullptr);
  ASSERT_TRUE(v2.has_value());
  EXPECT_EQ(v2->header.accepted, rpc::accept_stat::PROG_MISMATCH);
  EXPECT_EQ(v2->header.mismatch_low, 3u);
  auto acl = nfs_->CallSync(100227, 3, 0, cred_, nullptr);  // NFS_ACL: not offered
  ASSERT_TRUE(acl.has_value());
  EXPECT_EQ(acl->header.accepted, rpc::accept_stat::PROG_UNAVAIL);
  EXPECT_EQ(Call<GETATTR3res>(nfsproc3::GETATTR, GETATTR3args{root_}).status, NFS3_OK);
}

INSTANTIATE_TEST_SUITE_P(Backends, Nfs3Test,
                         ::testing::Values(BackendKind::kMemory, BackendKind::kLocal), BackendName);
INSTANTIATE_TEST_SUITE_P(Backends, ReaddirCapTest,
                         ::testing::Values(BackendKind::kMemory, BackendKind::kLocal), BackendName);

}  // namespace
}  // namespace nfsx::server::testing
