// Self-describing block content for nfsx-libnfs-load.
//
// Every block the driver writes starts with a 64-byte header, little endian:
//
//   offset  size  field
//        0     8  magic "NFSXLOAD"
//        8     8  file id (job-<i>.dat has id i + 1, shared.dat has id 0)
//       16     8  byte offset of the block in its file
//       24     8  generation: unique per write of this file in this run (see track.h)
//       32     4  block size in bytes
//       36     4  index of the job that wrote it
//       40    16  zero (reserved)
//       56     8  checksum of bytes [0, 56) and [64, block size)
//
// followed by a pseudo-random payload that is a pure function of (file id, offset,
// generation). A block that comes back from the server therefore says by itself which
// file, offset and write it belongs to, and whether any byte of it changed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace nfsx::load {

inline constexpr size_t kHeaderSize = 64;
inline constexpr uint64_t kBlockMagic = 0x44414f4c5853464eULL;  // "NFSXLOAD" little endian

struct BlockHeader {
  uint64_t magic = 0;
  uint64_t file_id = 0;
  uint64_t offset = 0;
  uint64_t generation = 0;
  uint32_t block_size = 0;
  uint32_t writer = 0;
  uint64_t checksum = 0;
};

// Fills `block` with the header and payload of write `generation` of (file_id, offset).
// REQUIRES: block.size() >= kHeaderSize and a multiple of 8.
void FillBlock(std::span<std::byte> block, uint64_t file_id, uint64_t offset, uint64_t generation,
               uint32_t writer);

// Decodes the header fields as stored; says nothing about whether they are right.
// REQUIRES: block.size() >= kHeaderSize.
BlockHeader ReadHeader(std::span<const std::byte> block);

// The checksum FillBlock stores for `block` (over everything but the checksum field).
// REQUIRES: block.size() >= kHeaderSize and a multiple of 8.
uint64_t BlockChecksum(std::span<const std::byte> block);

// True if every byte is zero.
bool IsZero(std::span<const std::byte> data);

enum class BlockFault {
  kNone,
  kBadMagic,     // not written by this tool (or overwritten by something else)
  kBadSize,      // written with another block size
  kWrongFile,    // a block of another file
  kWrongOffset,  // a block of this file, from another offset
  kBadChecksum,  // header plausible, some byte differs
  kBadPayload,   // checksum right but payload is not the one (file, offset, generation) gives
};

// Checks that `block` is an intact block of (file_id, offset) of any generation. With
// `full`, also regenerates the payload and compares it byte for byte (twice the CPU;
// catches nothing the checksum misses except a forged checksum). The generation is the
// caller's to judge.
BlockFault CheckBlock(std::span<const std::byte> block, uint64_t file_id, uint64_t offset,
                      bool full);

std::string FaultName(BlockFault fault);

}  // namespace nfsx::load
