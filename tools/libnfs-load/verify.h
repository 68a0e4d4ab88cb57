// The verdict on one block read back from the server.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace nfsx::load {

struct ReadExpectation {
  uint64_t file_id = 0;
  uint64_t offset = 0;
  uint64_t block_size = 0;
  // A generation, FileTrack::kNever or FileTrack::kUnknown.
  uint64_t content = 0;
  // File size known when the READ was sent: a block below it must come back whole.
  uint64_t known_end = 0;
  // Also compare the payload with its generator (verify mode).
  bool full = false;
};

// Returns the empty string when `data` (what the READ returned) is what `want` says the
// block holds, else a one-line description of the difference for the report.
std::string JudgeRead(std::span<const std::byte> data, const ReadExpectation& want);

}  // namespace nfsx::load
