#include "tools/libnfs-load/verify.h"

#include <fmt/format.h>

#include "tools/libnfs-load/block.h"
#include "tools/libnfs-load/track.h"

namespace nfsx::load {
namespace {

std::string Describe(uint64_t content) {
  if (content == FileTrack::kNever) return "nothing (never written)";
  if (content == FileTrack::kUnknown) return "a block written before this run";
  return fmt::format("generation {:#x}", content);
}

std::string JudgeShort(std::span<const std::byte> data, const ReadExpectation& want) {
  if (want.offset + want.block_size <= want.known_end) {
    return fmt::format("short read: {} of {} bytes, but the file is at least {} bytes long",
                       data.size(), want.block_size, want.known_end);
  }
  if (want.content != FileTrack::kNever) {
    return fmt::format("short read: {} of {} bytes (end of file), expected {}", data.size(),
                       want.block_size, Describe(want.content));
  }
  if (!IsZero(data)) return "short read past the written data returned non-zero bytes";
  return {};
}

}  // namespace

std::string JudgeRead(std::span<const std::byte> data, const ReadExpectation& want) {
  if (data.size() > want.block_size) {
    return fmt::format("read returned {} bytes, more than the {} asked for", data.size(),
                       want.block_size);
  }
  if (data.size() < want.block_size) return JudgeShort(data, want);
  if (IsZero(data)) {
    if (want.content == FileTrack::kNever) return {};
    return fmt::format("all zeros, expected {}", Describe(want.content));
  }
  BlockFault fault = CheckBlock(data, want.file_id, want.offset, want.full);
  BlockHeader h = ReadHeader(data);
  if (fault != BlockFault::kNone) {
    if (fault == BlockFault::kBadMagic) return FaultName(fault);
    return fmt::format("{} (header: file {} offset {} generation {:#x} writer {}), expected {}",
                       FaultName(fault), h.file_id, h.offset, h.generation, h.writer,
                       Describe(want.content));
  }
  if (want.content == FileTrack::kUnknown || h.generation == want.content) return {};
  if (want.content == FileTrack::kNever) {
    return fmt::format("holds generation {:#x} (writer {}) where nothing was written", h.generation,
                       h.writer);
  }
  return fmt::format("generation {:#x} (writer {}), expected {:#x}: stale or lost write",
                     h.generation, h.writer, want.content);
}

}  // namespace nfsx::load
