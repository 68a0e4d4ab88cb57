#include "xdr/xdr.h"

#include <gtest/gtest.h>

namespace nfsx::xdr {
namespace {

struct Sample {
  uint32_t a = 0;
  uint64_t b = 0;
  bool c = false;
  BoundedString<8> name;
  std::optional<uint32_t> maybe;
  std::vector<uint32_t> list;
};
template <class X>
void Xdr(X& x, Sample& s) {
  x(s.a);
  x(s.b);
  x(s.c);
  x(s.name);
  x(s.maybe);
  x.Array(s.list, 4);
}

std::vector<std::byte> EncodeToBytes(const Sample& s) {
  OutBuffer out;
  Encode(&out, s);
  return out.Flatten();
}

TEST(XdrTest, RoundTripsAStruct) {
  Sample s{7, 0x0102030405060708ull, true, {"abc"}, 9u, {1, 2, 3}};
  auto bytes = EncodeToBytes(s);
  // a(4) + b(8) + c(4) + name(4 + "abc" padded to 4) + maybe(4 + 4) + list(4 + 12)
  EXPECT_EQ(bytes.size(), 48u);
  Sample back;
  ASSERT_TRUE(Decode(bytes, back));
  EXPECT_EQ(back.a, 7u);
  EXPECT_EQ(back.b, 0x0102030405060708ull);
  EXPECT_TRUE(back.c);
  EXPECT_EQ(back.name.value, "abc");
  EXPECT_EQ(back.maybe, 9u);
  EXPECT_EQ(back.list, (std::vector<uint32_t>{1, 2, 3}));
}

TEST(XdrTest, BigEndianOnTheWire) {
  OutBuffer out;
  XdrEncoder e(&out);
  e(uint32_t{0x11223344});
  auto b = out.Flatten();
  ASSERT_EQ(b.size(), 4u);
  EXPECT_EQ(b[0], std::byte{0x11});
  EXPECT_EQ(b[3], std::byte{0x44});
}

TEST(XdrTest, EveryTruncationFails) {
  Sample s{1, 2, false, {"abcdefg"}, std::nullopt, {5, 6}};
  auto bytes = EncodeToBytes(s);
  for (size_t n = 0; n < bytes.size(); ++n) {
    Sample back;
    EXPECT_FALSE(Decode(std::span(bytes.data(), n), back)) << "length " << n;
  }
}

TEST(XdrTest, StringLongerThanMaximumFails) {
  OutBuffer out;
  XdrEncoder e(&out);
  e(uint32_t{1});
  e(uint64_t{2});
  e(false);
  e.String("123456789");  // 9 > 8
  e(false);
  e(uint32_t{0});
  Sample back;
  EXPECT_FALSE(Decode(out.Flatten(), back));
}

TEST(XdrTest, ArrayCountBeyondMaximumOrInputFails) {
  for (uint32_t count : {5u, 1000000u}) {
    OutBuffer out;
    XdrEncoder e(&out);
    e(uint32_t{1});
    e(uint64_t{2});
    e(false);
    e.String("a");
    e(false);
    e(count);
    e(uint32_t{0});
    Sample back;
    EXPECT_FALSE(Decode(out.Flatten(), back)) << count;
  }
}

TEST(XdrTest, BoolOtherThanZeroOrOneFails) {
  OutBuffer out;
  XdrEncoder e(&out);
  e(uint32_t{2});
  auto bytes = out.Flatten();
  XdrDecoder d(bytes);
  bool v;
  d(v);
  EXPECT_FALSE(d.ok());
}

TEST(XdrTest, OpaqueIsZeroCopyBothWays) {
  auto data = std::make_shared<std::vector<std::byte>>(5, std::byte{0xab});
  OutBuffer out;
  XdrEncoder e(&out);
  e(Opaque{*data, data});
  EXPECT_EQ(out.total_size(), 12u);  // length + 5 bytes + 3 pad
  auto flat = out.Flatten();
  XdrDecoder d(flat);
  Opaque back;
  d(back);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(back.bytes.size(), 5u);
  EXPECT_EQ(back.bytes.data(), flat.data() + 4);  // a view into the input, not a copy
  EXPECT_EQ(d.remaining(), 0u);
}

TEST(XdrTest, BoundedOpaqueRejectsOversize) {
  OutBuffer out;
  XdrEncoder e(&out);
  e.Bytes(std::vector<std::byte>(65));
  BoundedOpaque<64> fh;
  EXPECT_FALSE(Decode(out.Flatten(), fh));
}

}  // namespace
}  // namespace nfsx::xdr
