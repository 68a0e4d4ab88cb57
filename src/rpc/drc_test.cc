#include "rpc/drc.h"

#include <gtest/gtest.h>

namespace nfsx::rpc {
namespace {

DuplicateRequestCache::Key K(uint32_t xid) {
  DuplicateRequestCache::Key k;
  k.client = "c";
  k.xid = xid;
  return k;
}

TEST(DrcTest, BoundedByEntryCount) {
  DuplicateRequestCache drc(4);
  std::vector<std::byte> reply;
  for (uint32_t x = 0; x < 10; ++x) {
    ASSERT_EQ(drc.Begin(K(x), &reply), DuplicateRequestCache::Lookup::kNew);
    drc.Finish(K(x), {std::byte(x)});
  }
  EXPECT_EQ(drc.size(), 4u);
  EXPECT_EQ(drc.Begin(K(9), &reply), DuplicateRequestCache::Lookup::kDone);
  EXPECT_EQ(reply, std::vector<std::byte>{std::byte(9)});
  EXPECT_EQ(drc.Begin(K(0), &reply), DuplicateRequestCache::Lookup::kNew);  // evicted
}

TEST(DrcTest, ChecksumDistinguishesReusedXid) {
  CallHeader h;
  h.xid = 5;
  Peer p;
  p.host = "x";
  std::vector<std::byte> a(10, std::byte{1}), b(10, std::byte{2});
  EXPECT_FALSE(DuplicateRequestCache::MakeKey(h, p, a) == DuplicateRequestCache::MakeKey(h, p, b));
  EXPECT_TRUE(DuplicateRequestCache::MakeKey(h, p, a) == DuplicateRequestCache::MakeKey(h, p, a));
}

TEST(DrcTest, AbandonForgetsInProgress) {
  DuplicateRequestCache drc(4);
  std::vector<std::byte> reply;
  drc.Begin(K(1), &reply);
  drc.Abandon(K(1));
  EXPECT_EQ(drc.Begin(K(1), &reply), DuplicateRequestCache::Lookup::kNew);
}

}  // namespace
}  // namespace nfsx::rpc
