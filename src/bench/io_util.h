// Buffers, record stamps and latency summaries shared by the workloads.
//
// Every record a workload writes carries a 16-byte stamp (a tag of the file, the byte
// offset) at every multiple of its stamp granularity, min(record, 4 KiB). Reads check the
// stamps they cover: two compares per 4 KiB, cheap enough not to disturb the figures, and
// enough to catch data from the wrong file or the wrong offset, or zeros where data was.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "bench/json.h"
#include "tools/libnfs-load/histogram.h"

namespace nfsx::bench {

// Page-aligned (O_DIRECT on a local filesystem wants it), filled with a non-zero pattern.
class AlignedBuffer {
 public:
  explicit AlignedBuffer(size_t size);
  std::span<std::byte> span() { return {data_.get(), size_}; }
  std::span<std::byte> first(size_t n) { return {data_.get(), n}; }

 private:
  struct Free {
    void operator()(std::byte* p) const;
  };
  std::unique_ptr<std::byte, Free> data_;
  size_t size_;
};

inline constexpr size_t kMaxStampEvery = 4096;
inline constexpr size_t StampEvery(size_t record) {
  return record < kMaxStampEvery ? record : kMaxStampEvery;
}

// A tag for a file name, so that one file's stamps never pass as another's.
uint64_t FileTag(std::string_view name);

// Stamps `rec`, which goes at `offset` of the file, at every multiple of `every`.
void Stamp(std::span<std::byte> rec, uint64_t offset, uint64_t tag, size_t every);
// Counts the stamps in `rec` (read from `offset`) that are not what Stamp wrote.
uint64_t CheckStamps(std::span<const std::byte> rec, uint64_t offset, uint64_t tag, size_t every);
// The first wrong stamp in `rec`, described for a report ("at 8192: zeros"); "" if none.
std::string DescribeBadStamp(std::span<const std::byte> rec, uint64_t offset, uint64_t tag,
                             size_t every);

// {"min", "mean", "p50", "p90", "p99", "max"} in microseconds, of nanosecond samples.
Json LatencyJson(const load::Histogram& ns);

}  // namespace nfsx::bench
