// The parts of nfsx-libnfs-load that decide pass or fail: if these are wrong, every interop
// test built on the driver is wrong too.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <vector>

#include "tools/libnfs-load/block.h"
#include "tools/libnfs-load/histogram.h"
#include "tools/libnfs-load/options.h"
#include "tools/libnfs-load/track.h"
#include "tools/libnfs-load/verify.h"

namespace nfsx::load {
namespace {

std::vector<std::byte> Block(size_t size, uint64_t file, uint64_t offset, uint64_t gen) {
  std::vector<std::byte> b(size);
  FillBlock(b, file, offset, gen, 3);
  return b;
}

TEST(Block, RoundTripsAndDescribesItself) {
  auto b = Block(4096, 7, 8192, 0x1234);
  EXPECT_EQ(CheckBlock(b, 7, 8192, true), BlockFault::kNone);
  BlockHeader h = ReadHeader(b);
  EXPECT_EQ(h.magic, kBlockMagic);
  EXPECT_EQ(h.file_id, 7u);
  EXPECT_EQ(h.offset, 8192u);
  EXPECT_EQ(h.generation, 0x1234u);
  EXPECT_EQ(h.block_size, 4096u);
  EXPECT_EQ(h.writer, 3u);
  EXPECT_EQ(std::memcmp(b.data(), "NFSXLOAD", 8), 0);
}

TEST(Block, PayloadDependsOnFileOffsetAndGeneration) {
  auto a = Block(4096, 1, 0, 5);
  EXPECT_NE(a, Block(4096, 2, 0, 5));
  EXPECT_NE(a, Block(4096, 1, 4096, 5));
  EXPECT_NE(a, Block(4096, 1, 0, 6));
  EXPECT_EQ(a, Block(4096, 1, 0, 5));
  // Not trivially repetitive: two payload halves differ.
  EXPECT_NE(std::memcmp(a.data() + 64, a.data() + 64 + 2016, 2016), 0);
}

TEST(Block, EveryFlippedByteIsCaught) {
  auto good = Block(512, 1, 512, 9);
  for (size_t i = 0; i < good.size(); ++i) {
    auto b = good;
    b[i] ^= std::byte{0x01};
    EXPECT_NE(CheckBlock(b, 1, 512, false), BlockFault::kNone) << "byte " << i;
  }
}

TEST(Block, WrongPlaceIsNamed) {
  auto b = Block(4096, 1, 4096, 9);
  EXPECT_EQ(CheckBlock(b, 2, 4096, false), BlockFault::kWrongFile);
  EXPECT_EQ(CheckBlock(b, 1, 0, false), BlockFault::kWrongOffset);
  std::vector<std::byte> zero(4096);
  EXPECT_EQ(CheckBlock(zero, 1, 0, false), BlockFault::kBadMagic);
  auto big = Block(8192, 1, 0, 9);
  EXPECT_EQ(CheckBlock(std::span(big).first(4096), 1, 0, false), BlockFault::kBadSize);
}

TEST(Block, FullCheckCatchesAForgedChecksum) {
  auto b = Block(4096, 1, 0, 9);
  b[100] ^= std::byte{0xff};
  uint64_t sum = BlockChecksum(b);
  std::memcpy(b.data() + 56, &sum, 8);  // little-endian host, as the test machines are
  EXPECT_EQ(CheckBlock(b, 1, 0, false), BlockFault::kNone);
  EXPECT_EQ(CheckBlock(b, 1, 0, true), BlockFault::kBadPayload);
}

ReadExpectation Want(uint64_t content, uint64_t offset = 4096, uint64_t known_end = 0) {
  return {1, offset, 4096, content, known_end, true};
}

TEST(JudgeRead, ExactGeneration) {
  auto b = Block(4096, 1, 4096, 0x500000001);
  EXPECT_EQ(JudgeRead(b, Want(0x500000001)), "");
  EXPECT_NE(JudgeRead(b, Want(0x500000002)).find("stale or lost write"), std::string::npos);
  EXPECT_EQ(JudgeRead(b, Want(FileTrack::kUnknown)), "");
  EXPECT_NE(JudgeRead(b, Want(FileTrack::kNever)).find("where nothing was written"),
            std::string::npos);
}

TEST(JudgeRead, ZerosOnlyWhereNothingWasWritten) {
  std::vector<std::byte> zero(4096);
  EXPECT_EQ(JudgeRead(zero, Want(FileTrack::kNever)), "");
  EXPECT_NE(JudgeRead(zero, Want(0x500000001)), "");
  EXPECT_NE(JudgeRead(zero, Want(FileTrack::kUnknown)), "");
}

TEST(JudgeRead, ShortReads) {
  std::vector<std::byte> none;
  // Past the end of what was written: fine for a never-written block.
  EXPECT_EQ(JudgeRead(none, Want(FileTrack::kNever, 8192, 8192)), "");
  // Inside the known size: the server must return the whole block.
  EXPECT_NE(JudgeRead(none, Want(FileTrack::kNever, 4096, 8192)).find("short read"),
            std::string::npos);
  // A written block must never come back short.
  EXPECT_NE(JudgeRead(none, Want(0x500000001, 8192, 8192)), "");
  auto b = Block(4096, 1, 4096, 0x500000001);
  EXPECT_NE(JudgeRead(std::span(b).first(100), Want(0x500000001)), "");
}

TEST(JudgeRead, BlockOfAnotherFile) {
  auto b = Block(4096, 2, 4096, 0x500000001);
  EXPECT_NE(JudgeRead(b, Want(0x500000001)).find("another file"), std::string::npos);
}

TEST(Histogram, QuantilesWithinOneBucket) {
  Histogram h;
  for (uint64_t v = 1; v <= 100000; ++v) h.Record(v);
  EXPECT_EQ(h.count(), 100000u);
  EXPECT_EQ(h.max(), 100000u);
  EXPECT_EQ(h.min(), 1u);
  auto near = [](uint64_t got, double want) {
    return std::abs(static_cast<double>(got) - want) <= want / 64 + 1;
  };
  EXPECT_TRUE(near(h.Quantile(0.5), 50000)) << h.Quantile(0.5);
  EXPECT_TRUE(near(h.Quantile(0.99), 99000)) << h.Quantile(0.99);
  EXPECT_EQ(h.Quantile(1.0), 100000u);
  EXPECT_EQ(h.Quantile(0.0), 1u);
  Histogram other;
  other.Record(5'000'000'000);
  h.Merge(other);
  EXPECT_EQ(h.max(), 5'000'000'000u);
  EXPECT_EQ(h.count(), 100001u);
  EXPECT_EQ(Histogram().Quantile(0.5), 0u);
}

TEST(Options, Sizes) {
  EXPECT_EQ(ParseSize("4096"), 4096u);
  EXPECT_EQ(ParseSize("4k"), 4096u);
  EXPECT_EQ(ParseSize("256K"), 256u << 10);
  EXPECT_EQ(ParseSize("1m"), 1u << 20);
  EXPECT_EQ(ParseSize("2G"), 2ull << 30);
  EXPECT_FALSE(ParseSize("4x"));
  EXPECT_FALSE(ParseSize(""));
  EXPECT_FALSE(ParseSize("k"));
  EXPECT_EQ(FormatSize(1u << 20), "1 MiB");
  EXPECT_EQ(FormatSize(1000), "1000 B");
}

TEST(Options, Modes) {
  auto m = ParseModes("randwrite,verify");
  ASSERT_TRUE(m);
  EXPECT_EQ(*m, (std::vector<Mode>{Mode::kRandWrite, Mode::kVerify}));
  EXPECT_FALSE(ParseModes("write,bogus"));
  EXPECT_FALSE(ParseModes(""));
}

TEST(FileTrack, ClaimIsExclusiveAndGenerationsUnique) {
  FileTrack t(1, "job-0.dat", 4, FileTrack::kNever, 0, 5);
  uint64_t content = 99;
  ASSERT_TRUE(t.TryClaim(2, &content));
  EXPECT_EQ(content, FileTrack::kNever);
  EXPECT_FALSE(t.TryClaim(2, &content));
  uint64_t g1 = t.NextGeneration(), g2 = t.NextGeneration();
  EXPECT_NE(g1, g2);
  EXPECT_EQ(g1 >> 32, 5u);
  t.Release(2, g1);
  ASSERT_TRUE(t.TryClaim(2, &content));
  EXPECT_EQ(content, g1);
  t.Release(2, content);
  t.NoteWriteEnd(8192);
  t.NoteWriteEnd(4096);
  EXPECT_EQ(t.known_end(), 8192u);
  EXPECT_TRUE(t.FullyKnown());
}

TEST(FileTrack, StateFileRoundTrip) {
  std::string path = ::testing::TempDir() + "/libnfs_load_state_test";
  FileTrack a(1, "job-0.dat", 20, FileTrack::kNever, 0, 5);
  for (uint64_t b = 0; b < 20; b += 3) a.Release(b, a.NextGeneration());
  a.Release(19, FileTrack::kUnknown);
  a.NoteWriteEnd(20 * 4096);
  std::string error;
  ASSERT_TRUE(FileTrack::Save(path, 4096, {&a}, &error)) << error;

  FileTrack b(1, "job-0.dat", 20, FileTrack::kUnknown, 0, 6);
  ASSERT_TRUE(FileTrack::Load(path, 4096, {&b}, &error)) << error;
  for (uint64_t i = 0; i < 20; ++i) EXPECT_EQ(b.Expected(i), a.Expected(i)) << i;
  EXPECT_EQ(b.known_end(), 20u * 4096);

  FileTrack other(1, "job-0.dat", 21, FileTrack::kUnknown, 0, 6);
  EXPECT_FALSE(FileTrack::Load(path, 4096, {&other}, &error));
  EXPECT_FALSE(FileTrack::Load(path, 8192, {&b}, &error));
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace nfsx::load
