#include "client/page_index.h"

#include <gtest/gtest.h>

#include <vector>

namespace nfsx::client {
namespace {

// The index stores pointers only; fake ones are enough here.
Page* Fake(uintptr_t n) { return reinterpret_cast<Page*>(n * 8); }

TEST(PageIndexTest, FindsWhatWasSetAcrossEveryHeight) {
  PageIndex ix;
  EXPECT_EQ(ix.Find(0), nullptr);
  // Small indexes first, then ones that make the tree grow upwards (past 2^6,
  // 2^12, ... up to the 2^52 pages of a 64-bit file).
  std::vector<uint64_t> at = {5, 0, 63, 64, 4095, 4096, uint64_t{1} << 30, (uint64_t{1} << 52) - 1};
  for (size_t i = 0; i < at.size(); ++i) ix.Set(at[i], Fake(i + 1));
  for (size_t i = 0; i < at.size(); ++i) EXPECT_EQ(ix.Find(at[i]), Fake(i + 1)) << at[i];
  EXPECT_EQ(ix.Find(1), nullptr);
  EXPECT_EQ(ix.Find(65), nullptr);
  EXPECT_EQ(ix.Find(uint64_t{1} << 31), nullptr);

  ix.Set(64, nullptr);
  EXPECT_EQ(ix.Find(64), nullptr);
  std::vector<uint64_t> seen;
  ix.ForEach([&](uint64_t index, Page*) { seen.push_back(index); });
  EXPECT_EQ(seen, (std::vector<uint64_t>{0, 5, 63, 4095, 4096, uint64_t{1} << 30,
                                         (uint64_t{1} << 52) - 1}));
}

}  // namespace
}  // namespace nfsx::client
