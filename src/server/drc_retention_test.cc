// The duplicate request cache under write load: namespace calls retransmitted
// from a new source port after 100,000 WRITEs, from their client and another,
// still get their original replies.
#include <unistd.h>

#include <thread>

#include "server/testing/server_fixture.h"

namespace nfsx::server::testing {
namespace {

using rpc::testing::AppendRecord;
using rpc::testing::CallBytes;
using rpc::testing::RawLoopbackSocket;
using rpc::testing::ReadRecord;
using rpc::testing::WriteAll;

class DrcRetentionTest : public ServerTest {
 protected:
  // 127.0.0.2 is a second client.
  void SetUp() override { StartServer("$DIR 127.0.0.0/8(rw,insecure,no_root_squash)"); }

  template <class Args>
  std::vector<std::byte> Encode(uint32_t xid, nfsproc3 proc, const Args& args) {
    return CallBytes(xid, NFS_PROGRAM, NFS_V3, static_cast<uint32_t>(proc), cred_,
                     [&](xdr::XdrEncoder& e) { e(const_cast<Args&>(args)); });
  }

  // One call on a new connection (a new source port), its reply record.
  std::vector<std::byte> OnNewConnection(const std::vector<std::byte>& call) {
    int fd = RawLoopbackSocket(harness_->server().nfs_port());
    std::vector<std::byte> out;
    AppendRecord(&out, call);
    EXPECT_TRUE(WriteAll(fd, out));
    auto reply = ReadRecord(fd);
    close(fd);
    return reply;
  }

  // `n` 64-byte UNSTABLE WRITEs from `source`, 256 in flight; how many succeeded.
  size_t Writes(const char* source, const nfs_fh3& fh, uint32_t xid_base, size_t n) {
    int fd = RawLoopbackSocket(harness_->server().nfs_port(), source);
    auto data = std::make_shared<std::string>(64, 'w');
    size_t ok = 0;
    constexpr size_t kBatch = 256;
    for (size_t done = 0; done < n; done += kBatch) {
      std::vector<std::byte> out;
      size_t count = std::min(kBatch, n - done);
      for (size_t i = 0; i < count; ++i) {
        WRITE3args a;
        a.file = fh;
        a.offset = ((done + i) % 1024) * 64;
        a.count = 64;
        a.stable = UNSTABLE;
        a.data = {std::as_bytes(std::span(*data)), data};
        AppendRecord(&out, Encode(xid_base + static_cast<uint32_t>(done + i), nfsproc3::WRITE, a));
      }
      if (!WriteAll(fd, out)) break;
      for (size_t i = 0; i < count; ++i) {
        auto reply = ReadRecord(fd);
        xdr::XdrDecoder d(reply);
        rpc::ReplyHeader h;
        WRITE3res res;
        if (!rpc::DecodeReplyHeader(d, &h)) continue;
        d(res);
        if (d.ok() && res.status == NFS3_OK) ++ok;
      }
    }
    close(fd);
    return ok;
  }

  static nfsstat3 StatusOf(const std::vector<std::byte>& reply) {
    xdr::XdrDecoder d(reply);
    rpc::ReplyHeader h;
    if (!rpc::DecodeReplyHeader(d, &h)) return NFS3ERR_SERVERFAULT;
    uint32_t status = 0;
    d(status);
    return d.ok() ? static_cast<nfsstat3>(status) : NFS3ERR_SERVERFAULT;
  }
};

TEST_P(DrcRetentionTest, NamespaceRepliesOutliveAHundredThousandWrites) {
  MustCreate("old");
  MustCreate("victim");
  nfs_fh3 target = MustCreate("target");
  CREATE3args guarded;
  guarded.where = {root_, {"made"}};
  guarded.how.mode = GUARDED;
  guarded.how.obj_attributes.mode = 0644;
  MKDIR3args mkdir;
  mkdir.where = {root_, {"dir"}};
  mkdir.attributes.mode = 0755;
  CREATE3args exclusive;
  exclusive.where = {root_, {"excl"}};
  exclusive.how.mode = EXCLUSIVE;
  exclusive.how.verf = {std::byte{1}, std::byte{2}, std::byte{3}, std::byte{4},
                        std::byte{5}, std::byte{6}, std::byte{7}, std::byte{8}};
  // Each of these, run a second time, answers an error: NOENT, NOENT, EXIST, EXIST, and
  // EXIST for the EXCLUSIVE CREATE once the client's SETATTR replaced the verifier
  // the server kept in the file's times.
  std::vector<std::vector<std::byte>> calls = {
      Encode(0x5eed0001, nfsproc3::RENAME, RENAME3args{{root_, {"old"}}, {root_, {"new"}}}),
      Encode(0x5eed0002, nfsproc3::REMOVE, REMOVE3args{{root_, {"victim"}}}),
      Encode(0x5eed0003, nfsproc3::CREATE, guarded),
      Encode(0x5eed0004, nfsproc3::MKDIR, mkdir),
      Encode(0x5eed0005, nfsproc3::CREATE, exclusive),
  };
  std::vector<std::vector<std::byte>> first;
  for (const auto& c : calls) {
    first.push_back(OnNewConnection(c));
    ASSERT_EQ(StatusOf(first.back()), NFS3_OK);
  }
  // What a client does after an EXCLUSIVE CREATE: set the times the verifier held.
  auto made = LookupIn(root_, "excl");
  ASSERT_EQ(made.status, NFS3_OK);
  SETATTR3args times;
  times.object = made.resok.object;
  times.new_attributes.atime.set_it = SET_TO_SERVER_TIME;
  times.new_attributes.mtime.set_it = SET_TO_SERVER_TIME;
  ASSERT_EQ(Call<SETATTR3res>(nfsproc3::SETATTR, times).status, NFS3_OK);

  constexpr size_t kEach = 50'000;
  size_t ours = 0, theirs = 0;
  std::thread other([&] { theirs = Writes("127.0.0.2", target, 0x10000000, kEach); });
  ours = Writes("127.0.0.1", target, 0x20000000, kEach);
  other.join();
  ASSERT_EQ(ours, kEach);
  ASSERT_EQ(theirs, kEach);

  for (size_t i = 0; i < calls.size(); ++i) {
    auto again = OnNewConnection(calls[i]);
    EXPECT_EQ(StatusOf(again), NFS3_OK) << "call " << i << " ran a second time";
    EXPECT_EQ(again, first[i]) << "call " << i;
  }
  auto stats = harness_->server().dispatcher().drc().stats();
  EXPECT_EQ(stats.early_evictions, 0u);
  EXPECT_LE(stats.bytes[1], rpc::DrcOptions{}.write_bytes);
}

INSTANTIATE_TEST_SUITE_P(Backends, DrcRetentionTest, ::testing::Values(BackendKind::kMemory),
                         BackendName);

}  // namespace
}  // namespace nfsx::server::testing
