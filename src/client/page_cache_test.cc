// PageSet: what READ replies may put into the cache (FillTicket).
#include "client/page_cache.h"

#include <gtest/gtest.h>

#include <array>
#include <vector>

namespace nfsx::client {
namespace {

std::array<std::byte, kPageSize> PageOf(uint8_t v) {
  std::array<std::byte, kPageSize> p;
  p.fill(std::byte{v});
  return p;
}

TEST(PageCacheTest, AReadSentBeforeAnInvalidationFillsNothing) {
  CacheBudget budget(1 << 20);
  PageSet pages(&budget);
  FillTicket sent{pages.generation()};
  pages.InvalidateClean();  // the READ's reply arrives after this
  pages.Fill(0, PageOf(1), kPageSize, sent);
  std::array<std::byte, kPageSize> out;
  EXPECT_FALSE(pages.ReadCached(0, out)) << "stale data entered the cache";
  EXPECT_EQ(pages.pages(), 0u);

  pages.Fill(0, PageOf(2), kPageSize, {pages.generation()});
  ASSERT_TRUE(pages.ReadCached(0, out));
  EXPECT_EQ(out[0], std::byte{2});
}

TEST(PageCacheTest, AReadSentBeforeALocalWriteCreatesNoPages) {
  CacheBudget budget(1 << 20);
  PageSet pages(&budget);
  std::atomic<uint64_t> write_seq{0};
  FillTicket sent{pages.generation(), &write_seq, write_seq.load()};
  write_seq.fetch_add(1);
  uint64_t dirty;
  ASSERT_EQ(pages.Write(kPageSize + 10, PageOf(9), &dirty), -1);  // pages 1 and 2
  std::vector<std::byte> read(2 * kPageSize, std::byte{1});       // pages 0 and 1, as READ
  pages.Fill(0, read, 3 * kPageSize, sent);
  std::array<std::byte, kPageSize> out;
  EXPECT_FALSE(pages.ReadCached(0, out)) << "a page was created from data older than a write";
  ASSERT_TRUE(pages.ReadCached(kPageSize, out)) << "an existing page was not filled";
  EXPECT_EQ(out[0], std::byte{1});
  EXPECT_EQ(out[10], std::byte{9}) << "the READ's bytes replaced newer written ones";
}

}  // namespace
}  // namespace nfsx::client
