#include "client/page_memory.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <thread>
#include <vector>

namespace nfsx::client {
namespace {

constexpr size_t kBlock = PageMemory::kBlock;

// Blocks are aligned and never overlap in part, so the first, middle and last words
// of a block tell whether someone else was handed it.
constexpr size_t kStampAt[] = {0, kBlock / 2, kBlock - sizeof(uint32_t)};
void Stamp(std::byte* b, uint32_t v) {
  for (size_t at : kStampAt) std::memcpy(b + at, &v, sizeof v);
}
bool HasStamp(const std::byte* b, uint32_t v) {
  for (size_t at : kStampAt) {
    if (std::memcmp(b + at, &v, sizeof v) != 0) return false;
  }
  return true;
}

TEST(PageMemoryTest, BlocksAreAlignedDistinctAndReused) {
  auto& mem = PageMemory::Instance();
  std::vector<std::byte*> blocks;
  for (uint32_t i = 0; i < 3000; ++i) {  // more than one slab
    std::byte* b = mem.Allocate();
    ASSERT_EQ(reinterpret_cast<uintptr_t>(b) % kBlock, 0u);
    Stamp(b, i);
    blocks.push_back(b);
  }
  for (uint32_t i = 0; i < blocks.size(); ++i) ASSERT_TRUE(HasStamp(blocks[i], i)) << i;
  std::byte* freed = blocks[1234];
  mem.Free(freed);
  EXPECT_EQ(mem.Allocate(), freed) << "a freed block is handed out before new memory";
  for (std::byte* b : blocks) mem.Free(b);
}

TEST(PageMemoryTest, FreeSlabsGoBackToTheSystemButOne) {
  auto& mem = PageMemory::Instance();
  size_t before = mem.slabs();
  std::vector<std::byte*> blocks;
  for (size_t i = 0; i < 8 * PageMemory::kSlab / kBlock; ++i) blocks.push_back(mem.Allocate());
  EXPECT_GE(mem.slabs(), before + 7);
  for (std::byte* b : blocks) mem.Free(b);
  EXPECT_LE(mem.slabs(), before + 1);
}

// The page cache's lock-free readers may copy from a block freed under them:
// the memory of free slabs goes back to the system, but their addresses stay
// readable. With munmap this read crashed.
TEST(PageMemoryTest, FreedBlocksStayReadableAfterTheirSlabIsGivenBack) {
  auto& mem = PageMemory::Instance();
  size_t before = mem.slabs();
  std::vector<std::byte*> blocks;
  for (size_t i = 0; i < 4 * PageMemory::kSlab / kBlock; ++i) blocks.push_back(mem.Allocate());
  for (std::byte* b : blocks) Stamp(b, 5);
  for (std::byte* b : blocks) mem.Free(b);
  ASSERT_LE(mem.slabs(), before + 1) << "the memory was not given back";
  uint64_t sum = 0;
  for (std::byte* b : blocks) sum += static_cast<uint64_t>(std::to_integer<uint8_t>(b[0]));
  // Given-back memory reads as zeros; the spare slab still holds the stamps.
  EXPECT_LT(sum, blocks.size() * 5);
}

// Threads allocate, stamp, check and free blocks at random: a block handed to two
// owners at once shows as a wrong stamp.
TEST(PageMemoryTest, ConcurrentOwnersNeverShareABlock) {
  auto& mem = PageMemory::Instance();
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(t);
      std::vector<std::pair<std::byte*, uint32_t>> mine;
      for (uint32_t i = 0; i < 40000; ++i) {
        if (mine.size() < 600 && (mine.empty() || rng() % 2)) {
          std::byte* b = mem.Allocate();
          uint32_t v = (t << 24) | i;
          Stamp(b, v);
          mine.emplace_back(b, v);
        } else {
          size_t k = rng() % mine.size();
          if (!HasStamp(mine[k].first, mine[k].second)) ++wrong;
          mem.Free(mine[k].first);
          mine[k] = mine.back();
          mine.pop_back();
        }
      }
      for (auto& [b, v] : mine) {
        if (!HasStamp(b, v)) ++wrong;
        mem.Free(b);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
}  // namespace nfsx::client
