#include <gtest/gtest.h>

#include "proto/mount3_types.h"
#include "proto/nfs3_types.h"
#include "proto/nfsstat.h"
#include "proto/portmap_types.h"

namespace nfsx::nfs3 {
namespace {

template <class T>
std::vector<std::byte> Bytes(const T& v) {
  OutBuffer out;
  xdr::Encode(&out, v);
  return out.Flatten();
}

nfs_fh3 Fh(uint8_t fill, size_t n = 28) {
  nfs_fh3 fh;
  std::vector<std::byte> b(n, std::byte{fill});
  fh.assign(b);
  return fh;
}

TEST(Nfs3XdrTest, CreateArgsAllModesRoundTrip) {
  for (createmode3 mode : {UNCHECKED, GUARDED, EXCLUSIVE}) {
    CREATE3args a;
    a.where.dir = Fh(1);
    a.where.name.value = "file.txt";
    a.how.mode = mode;
    a.how.obj_attributes.mode = 0644;
    a.how.obj_attributes.mtime = {SET_TO_CLIENT_TIME, {5, 6}};
    a.how.verf[0] = std::byte{9};
    CREATE3args b;
    auto bytes = Bytes(a);
    ASSERT_TRUE(xdr::Decode(bytes, b));
    EXPECT_EQ(b.where.dir, a.where.dir);
    EXPECT_EQ(b.where.name.value, "file.txt");
    EXPECT_EQ(b.how.mode, mode);
    if (mode == EXCLUSIVE) {
      EXPECT_EQ(b.how.verf, a.how.verf);
    } else {
      EXPECT_EQ(b.how.obj_attributes.mode, 0644u);
      EXPECT_EQ(b.how.obj_attributes.mtime.set_it, SET_TO_CLIENT_TIME);
      EXPECT_EQ(b.how.obj_attributes.mtime.time.seconds, 5u);
      EXPECT_FALSE(b.how.obj_attributes.uid.has_value());
    }
  }
}

TEST(Nfs3XdrTest, InvalidDiscriminantsFail) {
  CREATE3args a;
  a.where.dir = Fh(1);
  a.where.name.value = "x";
  auto bytes = Bytes(a);
  // createmode3 follows the 4+28 handle and 4+4 name: make it 3.
  xdr::StoreBe32(bytes.data() + 40, 3);
  CREATE3args b;
  EXPECT_FALSE(xdr::Decode(bytes, b));

  SETATTR3args s;
  s.object = Fh(2);
  s.new_attributes.atime.set_it = SET_TO_SERVER_TIME;
  bytes = Bytes(s);
  // atime's time_how sits after the handle (32) and four empty optionals (16).
  xdr::StoreBe32(bytes.data() + 48, 7);
  SETATTR3args t;
  EXPECT_FALSE(xdr::Decode(bytes, t));
}

TEST(Nfs3XdrTest, ResultUnionPicksOkOrFail) {
  LOOKUP3res ok;
  ok.resok.object = Fh(3);
  ok.resok.obj_attributes = fattr3{};
  LOOKUP3res back;
  auto bytes = Bytes(ok);
  ASSERT_TRUE(xdr::Decode(bytes, back));
  EXPECT_EQ(back.resok.object, ok.resok.object);
  EXPECT_TRUE(back.resok.obj_attributes.has_value());

  LOOKUP3res fail;
  fail.status = NFS3ERR_NOENT;
  bytes = Bytes(fail);
  EXPECT_EQ(bytes.size(), 8u);  // status + absent dir_attributes
  ASSERT_TRUE(xdr::Decode(bytes, back));
  EXPECT_EQ(back.status, NFS3ERR_NOENT);
}

TEST(Nfs3XdrTest, FattrIs84Bytes) {
  EXPECT_EQ(Bytes(fattr3{}).size(), kFattr3Size);
}

TEST(Nfs3XdrTest, EntrySizesMatchEncoding) {
  READDIRPLUS3resok r;
  size_t predicted = 0;
  for (int i = 0; i < 5; ++i) {
    entryplus3 e;
    e.fileid = i;
    e.name.value = std::string(i * 3, 'n');
    e.cookie = i + 1;
    if (i % 2) e.name_attributes = fattr3{};
    if (i % 3) e.name_handle = Fh(7, 20 + i);
    predicted += EntryPlus3Size(e);
    r.entries.push_back(e);
  }
  size_t empty = Bytes(READDIRPLUS3resok{}).size();
  EXPECT_EQ(Bytes(r).size() - empty, predicted);

  READDIR3resok d;
  entry3 e{1, {"abcde"}, 2};
  d.entries = {e, e};
  EXPECT_EQ(Bytes(d).size() - Bytes(READDIR3resok{}).size(), 2 * Entry3Size(e));
}

TEST(Nfs3XdrTest, ReaddirplusListRoundTrips) {
  READDIRPLUS3res r;
  entryplus3 e;
  e.name.value = "a";
  e.name_handle = Fh(1);
  r.resok.entries = {e, e, e};
  r.resok.eof = true;
  READDIRPLUS3res back;
  auto bytes = Bytes(r);
  ASSERT_TRUE(xdr::Decode(bytes, back));
  EXPECT_EQ(back.resok.entries.size(), 3u);
  EXPECT_TRUE(back.resok.eof);
  // Cut anywhere: never decodes.
  for (size_t n = 0; n < bytes.size(); n += 3) {
    EXPECT_FALSE(xdr::Decode(std::span(bytes.data(), n), back)) << n;
  }
}

TEST(Nfs3XdrTest, WriteDataIsAViewIntoTheCall) {
  WRITE3args w;
  w.file = Fh(4);
  auto payload = std::make_shared<std::vector<std::byte>>(1000, std::byte{0x5a});
  w.data = {*payload, payload};
  w.count = 1000;
  w.stable = FILE_SYNC;
  auto bytes = Bytes(w);
  WRITE3args back;
  ASSERT_TRUE(xdr::Decode(bytes, back));
  EXPECT_EQ(back.stable, FILE_SYNC);
  ASSERT_EQ(back.data.bytes.size(), 1000u);
  EXPECT_GE(back.data.bytes.data(), bytes.data());
  EXPECT_LT(back.data.bytes.data(), bytes.data() + bytes.size());
}

TEST(Nfs3XdrTest, MountAndPortmapTypes) {
  mount3::mountres3 m;
  m.mountinfo.fhandle = Fh(8);
  m.mountinfo.auth_flavors = {1, 0};
  mount3::mountres3 mb;
  auto bytes = Bytes(m);
  ASSERT_TRUE(xdr::Decode(bytes, mb));
  EXPECT_EQ(mb.mountinfo.auth_flavors, (std::vector<uint32_t>{1, 0}));

  mount3::exports ex;
  ex.entries.push_back({{"/srv/a"}, {{"127.0.0.1"}, {"10.0.0.0/8"}}});
  ex.entries.push_back({{"/srv/b"}, {}});
  mount3::exports exb;
  bytes = Bytes(ex);
  ASSERT_TRUE(xdr::Decode(bytes, exb));
  ASSERT_EQ(exb.entries.size(), 2u);
  EXPECT_EQ(exb.entries[0].ex_groups[1].value, "10.0.0.0/8");

  portmap::pmaplist pl;
  pl.entries = {{100003, 3, 6, 2049}, {100005, 3, 6, 20048}};
  portmap::pmaplist plb;
  bytes = Bytes(pl);
  ASSERT_TRUE(xdr::Decode(bytes, plb));
  EXPECT_EQ(plb.entries, pl.entries);
}

TEST(NfsStatTest, ErrnoMappingsRoundTripForPosixCodes) {
  for (int e : {EPERM, ENOENT, EIO, EACCES, EEXIST, EXDEV, ENOTDIR, EISDIR, EINVAL, EFBIG, ENOSPC,
                EROFS, EMLINK, ENAMETOOLONG, ENOTEMPTY, EDQUOT, ESTALE}) {
    EXPECT_EQ(ErrnoFromNfsStat(NfsStatFromErrno(e)), e) << e;
  }
  EXPECT_EQ(NfsStatFromErrno(12345), NFS3ERR_IO);
  EXPECT_STREQ(NfsStatName(NFS3ERR_STALE), "NFS3ERR_STALE");
}

}  // namespace
}  // namespace nfsx::nfs3
