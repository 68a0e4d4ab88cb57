#include "tools/libnfs-load/block.h"

#include <bit>
#include <cstring>

namespace nfsx::load {
namespace {

static_assert(std::endian::native == std::endian::little ||
              std::endian::native == std::endian::big);

constexpr uint64_t kPrime1 = 0x9e3779b185ebca87ULL;
constexpr uint64_t kPrime2 = 0xc2b2ae3d27d4eb4fULL;
constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ULL;
constexpr size_t kChecksumAt = 56;

uint64_t Load64(const std::byte* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  if constexpr (std::endian::native == std::endian::big) v = std::byteswap(v);
  return v;
}

void Store64(std::byte* p, uint64_t v) {
  if constexpr (std::endian::native == std::endian::big) v = std::byteswap(v);
  std::memcpy(p, &v, sizeof v);
}

uint32_t Load32(const std::byte* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  if constexpr (std::endian::native == std::endian::big) v = std::byteswap(v);
  return v;
}

void Store32(std::byte* p, uint32_t v) {
  if constexpr (std::endian::native == std::endian::big) v = std::byteswap(v);
  std::memcpy(p, &v, sizeof v);
}

uint64_t Mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Four independent lanes so the multiplies overlap; about 1 ns per 8 bytes here, which
// keeps verification well below the cost of the NFS round trip even at 1 MiB blocks.
uint64_t Hash(const std::byte* p, size_t n, uint64_t seed) {
  uint64_t lane[4] = {seed + kPrime1, seed + kPrime2, seed, seed - kPrime1};
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    for (int k = 0; k < 4; ++k) {
      lane[k] = std::rotl(lane[k] + Load64(p + i + 8 * k) * kPrime2, 31) * kPrime1;
    }
  }
  for (; i + 8 <= n; i += 8) lane[0] = std::rotl(lane[0] ^ Load64(p + i) * kPrime2, 27) * kPrime1;
  uint64_t h = std::rotl(lane[0], 1) + std::rotl(lane[1], 7) + std::rotl(lane[2], 12) +
               std::rotl(lane[3], 18);
  return Mix(h + n);
}

uint64_t PayloadSeed(uint64_t file_id, uint64_t offset, uint64_t generation) {
  return Mix(Mix(Mix(file_id + kGolden) ^ offset) ^ generation);
}

// Word k of the payload. Independent per word (a counter-based generator) so a verifier can
// regenerate any word without the ones before it, and the loop vectorises.
uint64_t PayloadWord(uint64_t seed, uint64_t k) { return Mix(seed + (k + 1) * kGolden); }

}  // namespace

uint64_t BlockChecksum(std::span<const std::byte> block) {
  uint64_t h = Hash(block.data(), kChecksumAt, 0);
  return Hash(block.data() + kHeaderSize, block.size() - kHeaderSize, h);
}

void FillBlock(std::span<std::byte> block, uint64_t file_id, uint64_t offset, uint64_t generation,
               uint32_t writer) {
  std::byte* p = block.data();
  Store64(p, kBlockMagic);
  Store64(p + 8, file_id);
  Store64(p + 16, offset);
  Store64(p + 24, generation);
  Store32(p + 32, static_cast<uint32_t>(block.size()));
  Store32(p + 36, writer);
  std::memset(p + 40, 0, 16);
  uint64_t seed = PayloadSeed(file_id, offset, generation);
  size_t words = (block.size() - kHeaderSize) / 8;
  for (size_t k = 0; k < words; ++k) Store64(p + kHeaderSize + 8 * k, PayloadWord(seed, k));
  Store64(p + kChecksumAt, BlockChecksum(block));
}

BlockHeader ReadHeader(std::span<const std::byte> block) {
  const std::byte* p = block.data();
  BlockHeader h;
  h.magic = Load64(p);
  h.file_id = Load64(p + 8);
  h.offset = Load64(p + 16);
  h.generation = Load64(p + 24);
  h.block_size = Load32(p + 32);
  h.writer = Load32(p + 36);
  h.checksum = Load64(p + kChecksumAt);
  return h;
}

bool IsZero(std::span<const std::byte> data) {
  const std::byte* p = data.data();
  size_t n = data.size();
  size_t i = 0;
  uint64_t acc = 0;
  for (; i + 8 <= n; i += 8) acc |= Load64(p + i);
  for (; i < n; ++i) acc |= static_cast<uint64_t>(p[i]);
  return acc == 0;
}

BlockFault CheckBlock(std::span<const std::byte> block, uint64_t file_id, uint64_t offset,
                      bool full) {
  BlockHeader h = ReadHeader(block);
  if (h.magic != kBlockMagic) return BlockFault::kBadMagic;
  if (h.block_size != block.size()) return BlockFault::kBadSize;
  if (BlockChecksum(block) != h.checksum) return BlockFault::kBadChecksum;
  if (h.file_id != file_id) return BlockFault::kWrongFile;
  if (h.offset != offset) return BlockFault::kWrongOffset;
  if (full) {
    uint64_t seed = PayloadSeed(file_id, offset, h.generation);
    size_t words = (block.size() - kHeaderSize) / 8;
    for (size_t k = 0; k < words; ++k) {
      if (Load64(block.data() + kHeaderSize + 8 * k) != PayloadWord(seed, k)) {
        return BlockFault::kBadPayload;
      }
    }
  }
  return BlockFault::kNone;
}

std::string FaultName(BlockFault fault) {
  switch (fault) {
    case BlockFault::kNone:
      return "ok";
    case BlockFault::kBadMagic:
      return "no block header (bad magic)";
    case BlockFault::kBadSize:
      return "header has another block size";
    case BlockFault::kWrongFile:
      return "block of another file";
    case BlockFault::kWrongOffset:
      return "block of another offset";
    case BlockFault::kBadChecksum:
      return "checksum mismatch (corrupted bytes)";
    case BlockFault::kBadPayload:
      return "payload differs from its generator";
  }
  return "?";
}

}  // namespace nfsx::load
