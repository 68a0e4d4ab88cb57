// throughput: N threads each write, rewrite and then read a file of their own, as
// `iozone -i0 -i1 -t N -s SIZE -r 256k -I` (seed 003). Besides the rates it reports how many
// bytes went over the wire per byte the application wrote: 1.00 is right, and seed 003's
// bug (every O_DIRECT WRITE sent twice) shows as 2.00.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <latch>
#include <thread>

#include "bench/sequential.h"
#include "bench/table.h"
#include "bench/units.h"
#include "bench/workloads.h"

namespace nfsx::bench {

WorkloadOutcome RunThroughput(Context& ctx) {
  const BenchOptions& o = ctx.options();
  int threads = 12;
  if (!o.threads.empty()) {
    auto t = ParseThreadList(o.threads);
    if (!t) return {Json(), "bad --threads"};
    threads = t->back();
  }
  uint64_t size = 1ull << 30;
  if (!o.size.empty()) {
    auto s = ParseSize(o.size);
    if (!s || *s == 0) return {Json(), "bad --size"};
    size = *s;
  }
  uint64_t record = 256 << 10;
  if (!o.records.empty()) {
    auto r = ParseSizeList(o.records);
    if (!r) return {Json(), "bad --record"};
    record = r->front();
  }
  const bool direct = o.direct.value_or(true);

  std::vector<std::unique_ptr<Driver>> drivers;
  for (int i = 0; i < threads; ++i) {
    auto d = ctx.driver().Fork();
    if (!d) return {Json(), fmt::format("cannot start thread {}: {}", i, ErrorString(d.error()))};
    drivers.push_back(std::move(*d));
  }
  std::vector<AlignedBuffer> bufs;
  for (int i = 0; i < threads; ++i) bufs.emplace_back(std::min(record, size));

  WorkloadOutcome out;
  Json phases = Json::MakeObject();
  Table table({"phase", "MiB/s", "min thread", "max thread", "seconds", "wire/app", "resent",
               "WRITE", "COMMIT", "READ"});
  for (const char* phase : {"write", "rewrite", "read"}) {
    std::string p = phase;
    std::vector<PassResult> results(static_cast<size_t>(threads));
    std::latch ready(threads + 1);
    std::atomic<bool> go{false};
    ctx.progress().Phase(fmt::format("throughput {} x{}", p, threads),
                         size * static_cast<uint64_t>(threads));
    auto before = ctx.Take();
    std::vector<std::thread> workers;
    for (int i = 0; i < threads; ++i) {
      workers.emplace_back([&, i] {
        PassSpec spec;
        spec.name = ctx.FileName(fmt::format("throughput-{}.dat", i));
        spec.write = p != "read";
        spec.truncate = p == "write";
        spec.open_flags = direct ? O_DIRECT : 0;
        spec.size = size;
        spec.record = record;
        ready.arrive_and_wait();
        while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
        results[static_cast<size_t>(i)] = SequentialPass(
            *drivers[static_cast<size_t>(i)], spec, bufs[static_cast<size_t>(i)], &ctx.progress());
      });
    }
    ready.arrive_and_wait();
    auto start = Clock::now();
    go.store(true, std::memory_order_release);
    for (auto& w : workers) w.join();
    double seconds = Since(start);
    Json counters = ctx.Since(before);

    uint64_t bytes = 0;
    double min_rate = 1e300, max_rate = 0;
    Json per_thread = Json::MakeArray();
    for (const auto& r : results) {
      bytes += r.bytes;
      double rate = MiBPerSecond(r.bytes, r.seconds);
      min_rate = std::min(min_rate, rate);
      max_rate = std::max(max_rate, rate);
      per_thread.Push(r.ToJson());
      if (!r.error.empty() && out.error.empty()) out.error = r.error;
    }
    Json pj = Json::MakeObject();
    pj.Set("bytes", bytes);
    pj.Set("seconds", seconds);
    pj.Set("mib_per_s", MiBPerSecond(bytes, seconds));
    pj.Set("thread_min_mib_per_s", min_rate);
    pj.Set("thread_max_mib_per_s", max_rate);
    const Json& wire = counters.Get("wire");
    Json ratio;
    if (!wire.is_null() && p != "read" && bytes > 0) {
      ratio = wire.Get("write_bytes").AsNumber() / static_cast<double>(bytes);
    }
    pj.Set("wire_write_bytes_per_app_byte", ratio);
    pj.Set("wire", wire);
    pj.Set("server_calls", counters.Get("server_calls"));
    pj.Set("threads", std::move(per_thread));
    table.Row({p, Fixed(pj.Get("mib_per_s").AsNumber(), 1), Fixed(min_rate, 1), Fixed(max_rate, 1),
               Fixed(seconds, 2), ratio.is_null() ? "-" : Fixed(ratio.AsNumber(), 2),
               wire.is_null() ? "-" : fmt::format("{}", wire.Get("resent_bytes").AsNumber()),
               wire.is_null() ? "-" : fmt::format("{}", WireCalls(wire, "WRITE")),
               wire.is_null() ? "-" : fmt::format("{}", WireCalls(wire, "COMMIT")),
               wire.is_null() ? "-" : fmt::format("{}", WireCalls(wire, "READ"))});
    phases.Set(p, std::move(pj));
    if (!out.error.empty()) break;
  }
  if (!o.keep_files) {
    for (int i = 0; i < threads; ++i) {
      (void)ctx.driver().Unlink(ctx.FileName(fmt::format("throughput-{}.dat", i)));
    }
  }
  ctx.progress().Clear();
  std::printf("throughput: %d threads x %s in %s records, %s\n", threads, LongSize(size).c_str(),
              LongSize(record).c_str(), direct ? "O_DIRECT" : "buffered");
  table.Print(stdout);

  Json results = Json::MakeObject();
  results.Set("threads", threads);
  results.Set("file_size", size);
  results.Set("record", record);
  results.Set("direct", direct);
  results.Set("wire_write_bytes_per_app_byte", phases.Path("write.wire_write_bytes_per_app_byte"));
  results.Set("phases", std::move(phases));
  out.results = std::move(results);
  return out;
}

}  // namespace nfsx::bench
