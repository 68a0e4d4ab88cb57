// randread / randwrite: T threads of small random I/O on one file, for T = 1, 2, 4, ...
// randread (seed 002) reads a file the client has cached (a warm-up pass reads it all
// first), so it measures the client's cache and how it scales with threads; --direct reads
// go to the server every time. randwrite writes with O_DIRECT by default, so every write is
// a WRITE on the wire. With T threads there are T calls in flight.
#include <fmt/format.h>

#include <atomic>
#include <latch>
#include <random>
#include <thread>

#include "bench/sequential.h"
#include "bench/table.h"
#include "bench/units.h"
#include "bench/workloads.h"

namespace nfsx::bench {
namespace {

constexpr uint64_t kPrepareRecord = 1 << 20;

struct ThreadResult {
  uint64_t ops = 0;
  uint64_t mismatches = 0;
  double loop_seconds = 0;
  double close_seconds = 0;
  load::Histogram latency_ns;
  std::string error;
};

std::string Count(const Json& wire, const char* proc) {
  return wire.is_null() ? "-" : fmt::format("{}", WireCalls(wire, proc));
}

// Microseconds of CPU per operation, or null when the CPU time was not measured.
Json CpuPerOp(const Json& seconds, uint64_t ops) {
  if (!seconds.is_number() || ops == 0) return Json();
  return seconds.AsNumber() * 1e6 / static_cast<double>(ops);
}

WorkloadOutcome RunRandom(Context& ctx, bool write) {
  const BenchOptions& o = ctx.options();
  const char* workload = write ? "randwrite" : "randread";
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  auto threads = ParseThreadList(o.threads.empty() ? fmt::format("{}", 2 * cores) : o.threads);
  if (!threads) return {Json(), "bad --threads (a count, or a list like 1,2,4)"};
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
  const bool direct = o.direct.value_or(write);
  const std::string name = ctx.FileName("random.dat");
  const uint64_t tag = FileTag(name);
  const uint64_t blocks = size / record;

  // The file, written sequentially (stamped every 4 KiB), then read once to cache it.
  WorkloadOutcome out;
  Json prepare = Json::MakeObject();
  {
    AlignedBuffer buf(std::min(size, kPrepareRecord));
    PassSpec spec{name, true, 0, true, size, std::min(size, kPrepareRecord)};
    ctx.progress().Phase(fmt::format("{}: writing the file", workload), size);
    PassResult w = SequentialPass(ctx.driver(), spec, buf, &ctx.progress());
    if (!w.error.empty()) return {Json(), w.error};
    prepare.Set("write_seconds", w.seconds);
    if (!direct) {
      spec.write = false;
      ctx.progress().Phase(fmt::format("{}: reading it into the cache", workload), size);
      PassResult r = SequentialPass(ctx.driver(), spec, buf, &ctx.progress());
      if (!r.error.empty()) return {Json(), r.error};
      prepare.Set("warm_read_seconds", r.seconds);
    }
  }

  std::vector<std::unique_ptr<Driver>> drivers;
  for (int i = 0; i < threads->back(); ++i) {
    auto d = ctx.driver().Fork();
    if (!d) return {Json(), fmt::format("cannot start thread {}: {}", i, ErrorString(d.error()))};
    drivers.push_back(std::move(*d));
  }

  Json points = Json::MakeArray();
  Table table({"threads", "IOPS", "MiB/s", "p50 us", "p99 us", "scaling", "srv CPU us/op",
               "cli CPU us/op", "READ", "WRITE", "COMMIT", "GETATTR"});
  double base_iops = 0;
  for (int t : *threads) {
    std::vector<ThreadResult> res(static_cast<size_t>(t));
    std::latch ready(t + 1);
    // CPU time is measured between go and the end of the last loop: opens, and the
    // COMMIT a client sends at close, are not the operations counted.
    std::latch looped(t);
    std::latch measured(1);
    std::atomic<bool> go{false};
    Clock::time_point deadline;
    ctx.progress().Phase(fmt::format("{} {} thread(s)", workload, t), 0, "ops");
    auto before = ctx.Take();
    std::vector<std::thread> workers;
    for (int i = 0; i < t; ++i) {
      workers.emplace_back([&, i] {
        ThreadResult& r = res[static_cast<size_t>(i)];
        AlignedBuffer buf(record);
        int flags = (write ? O_RDWR : O_RDONLY) | (direct ? O_DIRECT : 0);
        auto f = drivers[static_cast<size_t>(i)]->Open(name, flags);
        ready.arrive_and_wait();
        if (!f) {
          r.error = fmt::format("open {}: {}", name, ErrorString(f.error()));
          looped.count_down();
          return;
        }
        while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
        std::mt19937_64 rng(static_cast<uint64_t>(t) * 1000003 + static_cast<uint64_t>(i));
        auto start = Clock::now();
        uint64_t batch = 0;
        while (Clock::now() < deadline) {
          uint64_t off = (rng() % blocks) * record;
          auto rec = buf.span().first(record);
          if (write) Stamp(rec, off, tag, StampEvery(record));
          auto t0 = Clock::now();
          auto done = write ? (*f)->Pwrite(rec, off) : (*f)->Pread(rec, off);
          r.latency_ns.Record(static_cast<uint64_t>((Clock::now() - t0).count()));
          if (!done || *done != record) {
            r.error = fmt::format("{} {} at {}: {}", write ? "write" : "read", name, off,
                                  done ? "short" : ErrorString(done.error()));
            break;
          }
          if (!write) {
            uint64_t bad = CheckStamps(rec, off, tag, kMaxStampEvery);
            if (bad && r.mismatches == 0) {
              r.error =
                  fmt::format("read {}: {}", name, DescribeBadStamp(rec, off, tag, kMaxStampEvery));
              // Transient (a race in a cache) or on the server for good?
              auto again = (*f)->Pread(rec, off);
              r.error += again && CheckStamps(rec, off, tag, kMaxStampEvery) == 0
                             ? "; read again at once: right"
                             : "; read again at once: still wrong";
            }
            r.mismatches += bad;
          }
          ++r.ops;
          if (++batch == 256) {
            ctx.progress().Add(batch);
            batch = 0;
          }
        }
        r.loop_seconds = Since(start);
        looped.count_down();
        measured.wait();
        auto c0 = Clock::now();
        auto closed = (*f)->Close();
        r.close_seconds = Since(c0);
        if (!closed && r.error.empty())
          r.error = fmt::format("close: {}", ErrorString(closed.error()));
      });
    }
    ready.arrive_and_wait();
    deadline = Clock::now() +
               std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
    auto cpu_before = ctx.Take();
    go.store(true, std::memory_order_release);
    looped.wait();
    Json cpu = ctx.Between(cpu_before, ctx.Take());
    measured.count_down();
    for (auto& w : workers) w.join();
    Json counters = ctx.Since(before);

    uint64_t ops = 0, mismatches = 0;
    double loop = 0, close = 0;
    load::Histogram lat;
    for (const auto& r : res) {
      ops += r.ops;
      mismatches += r.mismatches;
      loop = std::max(loop, r.loop_seconds);
      close = std::max(close, r.close_seconds);
      lat.Merge(r.latency_ns);
      if (!r.error.empty() && out.error.empty()) out.error = r.error;
    }
    if (mismatches && out.error.empty()) {
      out.error = fmt::format("{}: {} stamp(s) read back wrong", name, mismatches);
    }
    double iops = loop > 0 ? static_cast<double>(ops) / loop : 0;
    if (base_iops == 0) base_iops = iops;
    Json p = Json::MakeObject();
    p.Set("threads", t);
    p.Set("ops", ops);
    p.Set("seconds", loop);
    p.Set("iops", iops);
    p.Set("mib_per_s", MiBPerSecond(ops * record, loop));
    p.Set("scaling", base_iops > 0 ? iops / base_iops : 0.0);
    p.Set("latency_us", LatencyJson(lat));
    p.Set("close_seconds", close);
    p.Set("mismatches", mismatches);
    const Json& wire = counters.Get("wire");
    p.Set("wire", wire);
    p.Set("server_calls", counters.Get("server_calls"));
    // CPU per operation: what each op costs the machine, beside what it costs in time.
    Json server_cpu = CpuPerOp(cpu.Get("server_cpu_seconds"), ops);
    Json client_cpu = CpuPerOp(cpu.Get("client_cpu_seconds"), ops);
    p.Set("server_cpu_us_per_op", server_cpu);
    p.Set("server_user_cpu_us_per_op", CpuPerOp(cpu.Get("server_user_cpu_seconds"), ops));
    p.Set("client_cpu_us_per_op", client_cpu);
    auto show = [](const Json& v) { return v.is_number() ? Fixed(v.AsNumber(), 1) : "-"; };
    table.Row({fmt::format("{}", t), Fixed(iops, 0), Fixed(p.Get("mib_per_s").AsNumber(), 1),
               Fixed(lat.Quantile(0.5) / 1000.0, 1), Fixed(lat.Quantile(0.99) / 1000.0, 1),
               Fixed(p.Get("scaling").AsNumber(), 2), show(server_cpu), show(client_cpu),
               Count(wire, "READ"), Count(wire, "WRITE"), Count(wire, "COMMIT"),
               Count(wire, "GETATTR")});
    points.Push(std::move(p));
    if (!out.error.empty()) break;
  }
  if (!o.keep_files) (void)ctx.driver().Unlink(name);
  ctx.progress().Clear();
  std::printf("%s: %s records at random offsets of a %s file, %s, %.1f s per point%s\n", workload,
              LongSize(record).c_str(), LongSize(size).c_str(), direct ? "O_DIRECT" : "buffered",
              seconds, write || direct ? "" : " (file read once before: cached)");
  table.Print(stdout);

  Json results = Json::MakeObject();
  results.Set("file_size", size);
  results.Set("record", record);
  results.Set("direct", direct);
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

WorkloadOutcome RunRandRead(Context& ctx) { return RunRandom(ctx, false); }
WorkloadOutcome RunRandWrite(Context& ctx) { return RunRandom(ctx, true); }

}  // namespace nfsx::bench
