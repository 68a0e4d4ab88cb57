// asyncread / asyncwrite: ONE thread keeps D O_DIRECT records (4 KiB) at random offsets of
// one file in flight through the driver's asynchronous calls (nfsx's PreadAsync and
// PwriteAsync, libnfs's nfs_pread_async and nfs_pwrite_async), for D = 1, 4, 16, 64, 256.
// It measures what a program that links the client gets from one thread (issue #11): with
// a thread per call in flight, IOPS stop growing at the worker count; without, they grow
// with D until the wire or the server is the limit. Every read is checked against the
// file's stamps; writes stamp what they write, and the file is read back and checked once
// all points ran.
#include <fmt/format.h>

#include <random>

#include "bench/sequential.h"
#include "bench/table.h"
#include "bench/units.h"
#include "bench/workloads.h"

namespace nfsx::bench {
namespace {

constexpr uint64_t kPrepareRecord = 1 << 20;

struct Point {
  uint64_t ops = 0;
  uint64_t mismatches = 0;
  double seconds = 0;
  bool unsupported = false;  // the driver has no asynchronous calls
  load::Histogram latency_ns;
  std::string error;
};

// D calls in flight from this thread until `seconds` passed, then the last ones reaped.
Point RunDepth(BenchFile& f, bool write, int depth, uint64_t record, uint64_t blocks, uint64_t tag,
               double seconds, const std::string& name, Progress& progress) {
  Point p;
  const auto slots = static_cast<size_t>(depth);
  AlignedBuffer buf(slots * record);
  std::vector<uint64_t> offset(slots);
  std::vector<Clock::time_point> sent(slots);
  std::mt19937_64 rng(static_cast<uint64_t>(depth) * 1000003);
  auto start_one = [&](size_t s) -> Result<void> {
    offset[s] = (rng() % blocks) * record;
    auto rec = buf.span().subspan(s * record, record);
    sent[s] = Clock::now();
    if (!write) return f.StartPread(rec, offset[s], s);
    Stamp(rec, offset[s], tag, StampEvery(record));
    return f.StartPwrite(rec, offset[s], s);
  };
  const auto start = Clock::now();
  const auto deadline =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  size_t in_flight = 0;
  for (size_t s = 0; s < slots; ++s) {
    if (auto r = start_one(s); !r) {
      p.error = fmt::format("start {}: {}", name, ErrorString(r.error()));
      p.unsupported = r.error().code == ENOTSUP;
      break;
    }
    ++in_flight;
  }
  std::vector<BenchFile::Completion> done;
  uint64_t batch = 0;
  while (in_flight > 0) {
    done.clear();
    if (auto r = f.Reap(&done); !r) {
      if (p.error.empty()) p.error = fmt::format("reap {}: {}", name, ErrorString(r.error()));
      break;
    }
    const bool more = p.error.empty() && Clock::now() < deadline;
    for (auto& c : done) {
      --in_flight;
      const auto s = static_cast<size_t>(c.tag);
      p.latency_ns.Record(static_cast<uint64_t>((Clock::now() - sent[s]).count()));
      if (!c.result || *c.result != record) {
        if (p.error.empty()) {
          p.error = fmt::format("{} {} at {}: {}", write ? "write" : "read", name, offset[s],
                                c.result ? "short" : ErrorString(c.result.error()));
        }
        continue;
      }
      if (!write) {
        auto rec = buf.span().subspan(s * record, record);
        uint64_t bad = CheckStamps(rec, offset[s], tag, kMaxStampEvery);
        if (bad && p.mismatches == 0) {
          p.error = fmt::format("read {}: {}", name,
                                DescribeBadStamp(rec, offset[s], tag, kMaxStampEvery));
        }
        p.mismatches += bad;
      }
      ++p.ops;
      if (more) {
        if (auto r = start_one(s); !r) {
          p.error = fmt::format("start {}: {}", name, ErrorString(r.error()));
        } else {
          ++in_flight;
        }
      }
    }
    batch += done.size();
    if (batch >= 256) {
      progress.Add(batch);
      batch = 0;
    }
  }
  p.seconds = Since(start);
  return p;
}

std::string Count(const Json& wire, const char* proc) {
  return wire.is_null() ? "-" : fmt::format("{}", WireCalls(wire, proc));
}

WorkloadOutcome RunAsync(Context& ctx, bool write) {
  const BenchOptions& o = ctx.options();
  const char* workload = write ? "asyncwrite" : "asyncread";
  std::vector<int> depths = {1, 4, 16, 64, 256};
  if (o.depth > 0) depths = {o.depth};
  uint64_t size = 64ull << 20;
  if (!o.size.empty()) {
    auto s = ParseSize(o.size);
    if (!s || *s == 0) return {Json(), "bad --size"};
    size = *s;
  }
  uint64_t record = 4096;
  if (!o.records.empty()) {
    auto r = ParseSizeList(o.records);
    if (!r || r->front() > size) return {Json(), "bad --record"};
    record = r->front();
  }
  const double seconds = o.seconds > 0 ? o.seconds : 3;
  const std::string name = ctx.FileName("async.dat");
  const uint64_t tag = FileTag(name);
  const uint64_t blocks = size / record;

  Json prepare = Json::MakeObject();
  AlignedBuffer pass_buf(std::min(size, kPrepareRecord));
  PassSpec spec{name, true, O_DIRECT, true, size, std::min(size, kPrepareRecord)};
  ctx.progress().Phase(fmt::format("{}: writing the file", workload), size);
  PassResult w = SequentialPass(ctx.driver(), spec, pass_buf, &ctx.progress());
  if (!w.error.empty()) return {Json(), w.error};
  prepare.Set("write_seconds", w.seconds);

  auto f = ctx.driver().Open(name, (write ? O_RDWR : O_RDONLY) | O_DIRECT);
  if (!f) return {Json(), fmt::format("open {}: {}", name, ErrorString(f.error()))};

  WorkloadOutcome out;
  Json points = Json::MakeArray();
  Table table(
      {"in flight", "IOPS", "MiB/s", "p50 us", "p99 us", "vs 1", "READ", "WRITE", "COMMIT"});
  double base_iops = 0;
  for (int d : depths) {
    ctx.progress().Phase(fmt::format("{}, {} in flight from one thread", workload, d), 0, "ops");
    auto before = ctx.Take();
    Point p = RunDepth(**f, write, d, record, blocks, tag, seconds, name, ctx.progress());
    Json counters = ctx.Since(before);
    if (p.unsupported) {
      out.error =
          fmt::format("the {} driver has no asynchronous reads and writes", ctx.driver().kind());
      break;
    }
    if (!p.error.empty() && out.error.empty()) out.error = p.error;
    double iops = p.seconds > 0 ? static_cast<double>(p.ops) / p.seconds : 0;
    if (base_iops == 0) base_iops = iops;
    Json j = Json::MakeObject();
    j.Set("depth", d);
    j.Set("ops", p.ops);
    j.Set("seconds", p.seconds);
    j.Set("iops", iops);
    j.Set("mib_per_s", MiBPerSecond(p.ops * record, p.seconds));
    j.Set("vs_depth_1", base_iops > 0 ? iops / base_iops : 0.0);
    j.Set("latency_us", LatencyJson(p.latency_ns));
    j.Set("mismatches", p.mismatches);
    const Json& wire = counters.Get("wire");
    j.Set("wire", wire);
    j.Set("server_calls", counters.Get("server_calls"));
    table.Row({fmt::format("{}", d), Fixed(iops, 0), Fixed(j.Get("mib_per_s").AsNumber(), 1),
               Fixed(p.latency_ns.Quantile(0.5) / 1000.0, 1),
               Fixed(p.latency_ns.Quantile(0.99) / 1000.0, 1),
               Fixed(j.Get("vs_depth_1").AsNumber(), 2), Count(wire, "READ"), Count(wire, "WRITE"),
               Count(wire, "COMMIT")});
    points.Push(std::move(j));
    if (!out.error.empty()) break;
  }
  if (auto c = (*f)->Close(); !c && out.error.empty()) {
    out.error = fmt::format("close {}: {}", name, ErrorString(c.error()));
  }
  // What the writes left must read back as the file: every record stamped for its offset.
  if (write && out.error.empty()) {
    spec.write = false;
    ctx.progress().Phase(fmt::format("{}: reading the file back", workload), size);
    PassResult r = SequentialPass(ctx.driver(), spec, pass_buf, &ctx.progress());
    if (!r.error.empty()) {
      out.error = r.error;
    } else if (r.mismatches) {
      out.error = fmt::format("{}: {} stamp(s) read back wrong after the writes, first {}", name,
                              r.mismatches, r.first_mismatch);
    }
    prepare.Set("verified", out.error.empty());
  }
  if (!o.keep_files) (void)ctx.driver().Unlink(name);
  ctx.progress().Clear();
  if (points.AsArray().empty()) return out;
  std::printf(
      "%s: one thread, %s O_DIRECT records at random offsets of a %s file, %.1f s per "
      "point\n",
      workload, LongSize(record).c_str(), LongSize(size).c_str(), seconds);
  table.Print(stdout);

  Json results = Json::MakeObject();
  results.Set("file_size", size);
  results.Set("record", record);
  results.Set("seconds_per_point", seconds);
  results.Set("prepare", std::move(prepare));
  double best = 0;
  for (const Json& p : points.AsArray()) best = std::max(best, p.Get("iops").AsNumber());
  results.Set("max_iops", best);
  results.Set("points", std::move(points));
  out.results = std::move(results);
  return out;
}

}  // namespace

WorkloadOutcome RunAsyncRead(Context& ctx) { return RunAsync(ctx, false); }
WorkloadOutcome RunAsyncWrite(Context& ctx) { return RunAsync(ctx, true); }

}  // namespace nfsx::bench
