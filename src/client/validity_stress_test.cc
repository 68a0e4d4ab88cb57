// Seed 002: the cache-validity word is read without a lock and updated by OR-ing
// bits in. These tests fail when an update is a plain store (the patch's v1 bug)
// or a non-atomic read-modify-write, and TSan flags an unsynchronised fast path.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "client/inode.h"

namespace nfsx::client {
namespace {

nfs3::fattr3 RegularFile() {
  nfs3::fattr3 a;
  a.type = nfs3::NF3REG;
  a.fileid = 1;
  return a;
}

TEST(ValidityStressTest, SettingABitKeepsTheBitsAlreadySet) {
  // The v1 bug of seed 002's patch: the flags word was overwritten with the new
  // flags instead of OR-ing them in.
  CacheBudget budget(1 << 20);
  Inode ino(nfs3::nfs_fh3{}, RegularFile(), &budget);
  ino.SetInvalid(kInvalidAttr);
  ino.SetInvalid(kInvalidData);
  EXPECT_EQ(ino.validity() & (kInvalidAttr | kInvalidData), kInvalidAttr | kInvalidData);
}

TEST(ValidityStressTest, ConcurrentSettersNeverLoseABit) {
  // Two threads released at the same instant each set one bit. A store of the
  // new flags alone loses a bit every round; a non-atomic load-OR-store loses one
  // only when the two land within nanoseconds, which this catches by chance at best.
  CacheBudget budget(1 << 20);
  Inode ino(nfs3::nfs_fh3{}, RegularFile(), &budget);
  const uint32_t both = kInvalidData | kInvalidAttr;
  constexpr int kRounds = 20000;
  std::atomic<int> go{0}, arrived{0};
  auto setter = [&](uint32_t bit) {
    for (int r = 1; r <= kRounds; ++r) {
      // Spin briefly, then yield: on an oversubscribed machine pure spinning starves
      // the thread everyone waits for.
      for (int spins = 0; go.load(std::memory_order_acquire) != r; ++spins) {
        if (spins > 1000) std::this_thread::yield();
      }
      ino.SetInvalid(bit);
      arrived.fetch_add(1, std::memory_order_acq_rel);
    }
  };
  std::thread a(setter, kInvalidData), b(setter, kInvalidAttr);
  int lost = 0;
  for (int r = 1; r <= kRounds; ++r) {
    {
      std::lock_guard lock(ino.mu);
      ino.ClearInvalid(both);
    }
    go.store(r, std::memory_order_release);
    while (arrived.load(std::memory_order_acquire) != 2 * r) std::this_thread::yield();
    if ((ino.validity() & both) != both) ++lost;
  }
  a.join();
  b.join();
  EXPECT_EQ(lost, 0) << "invalidations were lost: flags must be OR-ed in atomically";
}

TEST(ValidityStressTest, ClearingOneBitKeepsTheOthers) {
  CacheBudget budget(1 << 20);
  Inode ino(nfs3::nfs_fh3{}, RegularFile(), &budget);
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> sets{0};
  std::thread setter([&] {
    while (!stop.load()) {
      ino.SetInvalid(kInvalidAttr);
      sets.fetch_add(1);
    }
  });
  for (int i = 0; i < 200000; ++i) {
    std::lock_guard lock(ino.mu);
    ino.ClearInvalid(kInvalidData);
    // kInvalidAttr, once set, must stay set until someone clears it.
    if (sets.load() > 0) {
      ASSERT_TRUE(ino.validity() & kInvalidAttr) << "iteration " << i;
    }
  }
  stop = true;
  setter.join();
}

TEST(ValidityStressTest, FastPathReadersNeverSeeATornPage) {
  // The pattern of the read path: readers check the flag without a lock and copy
  // from the page cache; the slow path replaces the pages under the inode lock and
  // clears the flag with release semantics. A reader that hits must get one whole
  // version of the page (TSan checks the synchronisation in the sanitizer run).
  CacheBudget budget(64 << 20);
  Inode ino(nfs3::nfs_fh3{}, RegularFile(), &budget);
  std::atomic<bool> done{false};
  std::atomic<int> torn{0};
  std::atomic<uint64_t> hits{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 3; ++t) {
    readers.emplace_back([&] {
      std::array<std::byte, 4096> buf;
      while (!done.load(std::memory_order_relaxed)) {
        if (ino.validity() & kInvalidData) continue;  // the lock-free fast-path check
        if (!ino.pages.ReadCached(0, buf)) continue;  // a miss goes to the server
        hits.fetch_add(1, std::memory_order_relaxed);
        for (std::byte b : buf) {
          if (b != buf[0]) {
            ++torn;
            break;
          }
        }
      }
    });
  }
  for (int round = 0; round < 1000; ++round) {
    ino.SetInvalid(kInvalidData);
    {
      std::lock_guard lock(ino.mu);
      ino.pages.InvalidateClean();
      std::array<std::byte, 4096> page;
      page.fill(std::byte(round));
      ino.pages.Fill(0, page, 4096, {ino.pages.generation()});
      ino.ClearInvalid(kInvalidData);
    }
    // Let a reader in before invalidating again, so readers race every round.
    uint64_t seen = hits.load();
    for (int spins = 0; hits.load() == seen && spins < 50; ++spins) std::this_thread::yield();
  }
  done = true;
  for (auto& t : readers) t.join();
  EXPECT_EQ(torn.load(), 0);
  EXPECT_GT(hits.load(), 0u) << "the readers never got to read: the test proved nothing";
}

}  // namespace
}  // namespace nfsx::client
