#include "rpc/message.h"

#include <gtest/gtest.h>

#include "rpc/test_util.h"

namespace nfsx::rpc {
namespace {

using testing::CallBytes;
using testing::SysCred;

TEST(MessageTest, CallHeaderRoundTripsWithAuthSys) {
  auto bytes = CallBytes(0x1234, 100003, 3, 6, SysCred(1000, 100, {4, 24, 27}),
                         [](xdr::XdrEncoder& e) { e(uint32_t{0xdead}); });
  xdr::XdrDecoder d(bytes);
  CallHeader h;
  ASSERT_EQ(DecodeCallHeader(d, &h), CallDecode::kOk);
  EXPECT_EQ(h.xid, 0x1234u);
  EXPECT_EQ(h.prog, 100003u);
  EXPECT_EQ(h.vers, 3u);
  EXPECT_EQ(h.proc, 6u);
  EXPECT_EQ(h.cred.flavor, auth_flavor::AUTH_SYS);
  EXPECT_EQ(h.cred.uid, 1000u);
  EXPECT_EQ(h.cred.gid, 100u);
  ASSERT_EQ(h.cred.ngids, 3u);
  EXPECT_EQ(h.cred.gids[2], 27u);
  EXPECT_EQ(h.cred.machinename, "test");
  uint32_t arg;
  d(arg);
  EXPECT_EQ(arg, 0xdeadu);
}

// Hand-encodes an AUTH_SYS credential with `ngroups` groups.
std::vector<std::byte> CallWithGroups(uint32_t ngroups) {
  OutBuffer out;
  xdr::XdrEncoder e(&out);
  e(uint32_t{7});
  e(msg_type::CALL);
  e(kRpcVersion);
  e(uint32_t{100003});
  e(uint32_t{3});
  e(uint32_t{0});
  OutBuffer body;
  xdr::XdrEncoder b(&body);
  b(uint32_t{0});
  b.String("m");
  b(uint32_t{0});
  b(uint32_t{0});
  b(ngroups);
  for (uint32_t i = 0; i < ngroups; ++i) b(i);
  e(auth_flavor::AUTH_SYS);
  e.Bytes(body.Flatten());
  e(auth_flavor::AUTH_NONE);
  e(uint32_t{0});
  return out.Flatten();
}

TEST(MessageTest, AuthSysWithSixteenGroupsIsAcceptedSeventeenIsBadCred) {
  CallHeader h;
  auto ok = CallWithGroups(16);
  xdr::XdrDecoder d1(ok);
  EXPECT_EQ(DecodeCallHeader(d1, &h), CallDecode::kOk);
  auto bad = CallWithGroups(17);
  xdr::XdrDecoder d2(bad);
  EXPECT_EQ(DecodeCallHeader(d2, &h), CallDecode::kBadCred);
}

TEST(MessageTest, UnknownFlavorIsBadCredAndWrongRpcVersionIsMismatch) {
  auto bytes = CallBytes(1, 100003, 3, 0);
  // Credential flavor sits at byte 24; make it RPCSEC_GSS (6).
  xdr::StoreBe32(bytes.data() + 24, 6);
  xdr::XdrDecoder d(bytes);
  CallHeader h;
  EXPECT_EQ(DecodeCallHeader(d, &h), CallDecode::kBadCred);

  bytes = CallBytes(1, 100003, 3, 0);
  xdr::StoreBe32(bytes.data() + 8, 3);  // rpcvers
  xdr::XdrDecoder d2(bytes);
  EXPECT_EQ(DecodeCallHeader(d2, &h), CallDecode::kRpcMismatch);
}

TEST(MessageTest, TruncatedHeadersNeverDecode) {
  auto bytes = CallBytes(9, 100005, 3, 1, SysCred(0, 0, {1, 2}));
  for (size_t n = 0; n < bytes.size(); ++n) {
    xdr::XdrDecoder d(std::span(bytes.data(), n));
    CallHeader h;
    EXPECT_NE(DecodeCallHeader(d, &h), CallDecode::kOk) << n;
  }
}

TEST(MessageTest, ReplyHeadersDecode) {
  OutBuffer out;
  xdr::XdrEncoder e(&out);
  EncodeProgMismatch(e, 5, 2, 3);
  ReplyHeader h;
  auto b1 = out.Flatten();
  xdr::XdrDecoder d1(b1);
  ASSERT_TRUE(DecodeReplyHeader(d1, &h));
  EXPECT_EQ(h.xid, 5u);
  EXPECT_EQ(h.accepted, accept_stat::PROG_MISMATCH);
  EXPECT_EQ(h.mismatch_low, 2u);
  EXPECT_EQ(h.mismatch_high, 3u);

  out.Reset();
  EncodeAuthError(e, 6, auth_stat::AUTH_TOOWEAK);
  auto b2 = out.Flatten();
  xdr::XdrDecoder d2(b2);
  ASSERT_TRUE(DecodeReplyHeader(d2, &h));
  EXPECT_EQ(h.stat, reply_stat::MSG_DENIED);
  EXPECT_EQ(h.rejected, reject_stat::AUTH_ERROR);
  EXPECT_EQ(h.auth, auth_stat::AUTH_TOOWEAK);
  EXPECT_FALSE(h.ok());
}

}  // namespace
}  // namespace nfsx::rpc
