#include "base/out_buffer.h"

#include <gtest/gtest.h>

#include <string>

namespace nfsx {
namespace {

std::span<const std::byte> Bytes(const std::string& s) { return std::as_bytes(std::span(s)); }

std::string Str(const std::vector<std::byte>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size());
}

TEST(OutBufferTest, InlineAndExternalSegmentsKeepOrder) {
  OutBuffer buf;
  buf.Append(Bytes("head-"));
  auto payload = std::make_shared<std::string>("PAYLOAD");
  buf.AppendExternal(Bytes(*payload), payload);
  buf.Append(Bytes("-tail"));
  EXPECT_EQ(buf.total_size(), 17u);
  EXPECT_EQ(Str(buf.Flatten()), "head-PAYLOAD-tail");

  std::vector<iovec> iov;
  buf.GatherIovecs(0, &iov);
  ASSERT_EQ(iov.size(), 3u);
  EXPECT_EQ(iov[1].iov_base, payload->data());

  iov.clear();
  buf.GatherIovecs(7, &iov);  // skips "head-" and "PA"
  ASSERT_EQ(iov.size(), 2u);
  EXPECT_EQ(std::string(static_cast<char*>(iov[0].iov_base), iov[0].iov_len), "YLOAD");
}

TEST(OutBufferTest, TruncateDropsLaterExternals) {
  OutBuffer buf;
  buf.Append(Bytes("abc"));
  size_t mark = buf.inline_size();
  auto payload = std::make_shared<std::string>("xyz");
  buf.AppendExternal(Bytes(*payload), payload);
  buf.Append(Bytes("def"));
  buf.Truncate(mark);
  EXPECT_EQ(Str(buf.Flatten()), "abc");
  EXPECT_EQ(buf.total_size(), 3u);
}

TEST(OutBufferTest, GrowsAndPatches) {
  OutBuffer buf;
  buf.Extend(4);
  std::string big(10000, 'q');
  buf.Append(Bytes(big));
  buf.PatchU32(0, 0x80002710);
  auto flat = buf.Flatten();
  ASSERT_EQ(flat.size(), 10004u);
  EXPECT_EQ(flat[0], std::byte{0x80});
  EXPECT_EQ(flat[3], std::byte{0x10});
  EXPECT_EQ(flat[10003], std::byte{'q'});
}

}  // namespace
}  // namespace nfsx
