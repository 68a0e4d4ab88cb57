#include "bench/sequential.h"

#include <fmt/format.h>

#include <algorithm>

#include "bench/units.h"

namespace nfsx::bench {

Json PassResult::ToJson() const {
  Json j = Json::MakeObject();
  j.Set("calls", calls);
  j.Set("bytes", bytes);
  j.Set("seconds", seconds);
  j.Set("call_seconds", call_seconds);
  j.Set("open_seconds", open_seconds);
  j.Set("close_seconds", close_seconds);
  j.Set("us_per_call", calls ? call_seconds * 1e6 / static_cast<double>(calls) : 0.0);
  j.Set("mib_per_s", MiBPerSecond(bytes, seconds));
  j.Set("mib_per_s_calls", MiBPerSecond(bytes, call_seconds));
  j.Set("latency_us", LatencyJson(latency_ns));
  j.Set("mismatches", mismatches);
  return j;
}

PassResult SequentialPass(Driver& driver, const PassSpec& spec, AlignedBuffer& buf,
                          Progress* progress) {
  PassResult r;
  const uint64_t tag = FileTag(spec.name);
  const size_t every = StampEvery(spec.record);
  int flags = spec.open_flags;
  flags |= spec.write ? (O_WRONLY | O_CREAT | (spec.truncate ? O_TRUNC : 0)) : O_RDONLY;

  auto start = Clock::now();
  auto f = driver.Open(spec.name, flags);
  r.open_seconds = Since(start);
  if (!f) {
    r.error = fmt::format("open {}: {}", spec.name, ErrorString(f.error()));
    return r;
  }
  uint64_t batch = 0;
  for (uint64_t off = 0; off < spec.size; off += spec.record) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(spec.record, spec.size - off));
    auto rec = buf.first(n);
    if (spec.write) Stamp(rec, off, tag, every);
    auto t0 = Clock::now();
    Result<size_t> done = spec.write ? (*f)->Pwrite(rec, off) : (*f)->Pread(rec, off);
    auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count();
    r.latency_ns.Record(static_cast<uint64_t>(ns));
    r.call_seconds += static_cast<double>(ns) / 1e9;
    ++r.calls;
    if (!done) {
      r.error = fmt::format("{} {} at offset {}: {}", spec.write ? "write" : "read", spec.name, off,
                            ErrorString(done.error()));
      break;
    }
    if (*done != n) {
      r.error = fmt::format("{} {} at offset {}: {} of {} bytes", spec.write ? "write" : "read",
                            spec.name, off, *done, n);
      break;
    }
    if (!spec.write) {
      uint64_t bad = CheckStamps(rec, off, tag, every);
      if (bad && r.mismatches == 0) {
        r.first_mismatch = DescribeBadStamp(rec, off, tag, every);
      }
      r.mismatches += bad;
    }
    r.bytes += n;
    batch += n;
    if (progress && batch >= (1u << 20)) {
      progress->Add(batch);
      batch = 0;
    }
  }
  if (progress) progress->Add(batch);
  auto close_start = Clock::now();
  auto closed = (*f)->Close();
  r.close_seconds = Since(close_start);
  r.seconds = Since(start);
  if (!closed && r.error.empty()) {
    r.error = fmt::format("close {}: {}", spec.name, ErrorString(closed.error()));
  }
  if (r.error.empty() && r.mismatches) {
    r.error = fmt::format("{}: {} stamp(s) read back wrong, the first {}", spec.name, r.mismatches,
                          r.first_mismatch);
  }
  return r;
}

}  // namespace nfsx::bench
