// append: 10,000 O_APPEND writes (seed 001), three ways:
//   one_open    open once, N appends, close
//   open_close  open, one append, close, N times
//   naive       what a client without a proper append does: learn the size (GETATTR), write
//               there, flush (fsync) -- for every record
// Each file is read back and checked record by record afterwards (not timed, not counted).
#include <fmt/format.h>

#include <cstring>

#include "bench/io_util.h"
#include "bench/table.h"
#include "bench/units.h"
#include "bench/workloads.h"

namespace nfsx::bench {
namespace {

constexpr uint64_t kMagic = 0x4150504e44525843ULL;

struct Variant {
  const char* name;
  const char* what;
};
constexpr Variant kVariants[] = {
    {"one_open", "open once, N O_APPEND writes, close"},
    {"open_close", "open O_APPEND, write, close; N times"},
    {"naive", "fstat (GETATTR), pwrite at the size, fsync; N times"},
};

void Fill(std::span<std::byte> rec, uint64_t tag, uint64_t index) {
  uint64_t a = kMagic ^ tag;
  std::memcpy(rec.data(), &a, 8);
  std::memcpy(rec.data() + 8, &index, 8);
}

// Reads the file back: every record present once, in order, and nothing else.
std::string Verify(Driver& d, const std::string& name, uint64_t tag, uint64_t n, size_t rec) {
  auto f = d.Open(name, O_RDONLY);
  if (!f) return fmt::format("open {} to verify: {}", name, ErrorString(f.error()));
  const uint64_t want = n * rec;
  auto size = (*f)->Size();
  if (!size) return fmt::format("fstat {}: {}", name, ErrorString(size.error()));
  if (*size != want) return fmt::format("{} is {} bytes, {} expected", name, *size, want);
  const size_t chunk = rec * std::max<size_t>(1, (1 << 20) / rec);
  AlignedBuffer buf(chunk);
  for (uint64_t off = 0; off < want; off += chunk) {
    size_t len = static_cast<size_t>(std::min<uint64_t>(chunk, want - off));
    auto got = (*f)->Pread(buf.first(len), off);
    if (!got || *got != len) return fmt::format("read {} at {} failed or was short", name, off);
    for (size_t p = 0; p < len; p += rec) {
      uint64_t a, index;
      std::memcpy(&a, buf.span().data() + p, 8);
      std::memcpy(&index, buf.span().data() + p + 8, 8);
      uint64_t expect = (off + p) / rec;
      if (a != (kMagic ^ tag) || index != expect) {
        return fmt::format("{}: record {} holds {}", name, expect,
                           a == (kMagic ^ tag) ? fmt::format("record {}", index) : "garbage");
      }
    }
  }
  (void)(*f)->Close();
  return {};
}

struct Run {
  double seconds = 0;
  load::Histogram latency_ns;
  Context::Snapshot loop_before, loop_after;
  std::string error;
};

Run RunVariant(Context& ctx, const std::string& variant, const std::string& name, uint64_t n,
               AlignedBuffer& buf, size_t rec) {
  Driver& d = ctx.driver();
  const uint64_t tag = FileTag(name);
  Run r;
  auto record = buf.first(rec);
  auto start = Clock::now();
  auto fail = [&](const char* op, uint64_t i, const Error& e) {
    r.error = fmt::format("{} {}: {} of record {}: {}", variant, name, op, i, ErrorString(e));
  };
  if (variant == "open_close") {
    r.loop_before = ctx.Take();
    start = Clock::now();
    for (uint64_t i = 0; i < n && r.error.empty(); ++i) {
      auto t0 = Clock::now();
      auto f = d.Open(name, O_WRONLY | O_APPEND);
      if (!f) {
        fail("open", i, f.error());
        break;
      }
      Fill(record, tag, i);
      if (auto w = (*f)->Append(record); !w || *w != rec)
        fail("write", i, w ? Error{EIO} : w.error());
      if (auto c = (*f)->Close(); !c && r.error.empty()) fail("close", i, c.error());
      r.latency_ns.Record(static_cast<uint64_t>((Clock::now() - t0).count()));
      if ((i & 255) == 255) ctx.progress().Add(256);
    }
    r.seconds = Since(start);
    r.loop_after = ctx.Take();
    return r;
  }
  const bool naive = variant == "naive";
  int flags = naive ? (O_RDWR | O_CREAT | O_TRUNC) : (O_WRONLY | O_CREAT | O_APPEND);
  auto f = d.Open(name, flags, OpenOptions{.fresh_attributes = naive});
  if (!f) {
    r.error = fmt::format("{}: open {}: {}", variant, name, ErrorString(f.error()));
    return r;
  }
  r.loop_before = ctx.Take();
  for (uint64_t i = 0; i < n; ++i) {
    auto t0 = Clock::now();
    Fill(record, tag, i);
    if (naive) {
      auto size = (*f)->Size();
      if (!size) {
        fail("fstat", i, size.error());
        break;
      }
      auto w = (*f)->Pwrite(record, *size);
      if (!w || *w != rec) {
        fail("pwrite", i, w ? Error{EIO} : w.error());
        break;
      }
      if (auto s = (*f)->Fsync(); !s) {
        fail("fsync", i, s.error());
        break;
      }
    } else {
      auto w = (*f)->Append(record);
      if (!w || *w != rec) {
        fail("write", i, w ? Error{EIO} : w.error());
        break;
      }
    }
    r.latency_ns.Record(static_cast<uint64_t>((Clock::now() - t0).count()));
    if ((i & 255) == 255) ctx.progress().Add(256);
  }
  r.loop_after = ctx.Take();
  if (auto c = (*f)->Close(); !c && r.error.empty()) {
    r.error = fmt::format("{}: close {}: {}", variant, name, ErrorString(c.error()));
  }
  r.seconds = Since(start);
  return r;
}

double Rpcs(const Context::Snapshot& before, const Context::Snapshot& after) {
  if (!before.wire || !after.wire) return -1;
  return static_cast<double>(after.wire->rpc_calls - before.wire->rpc_calls);
}

}  // namespace

WorkloadOutcome RunAppend(Context& ctx) {
  const BenchOptions& o = ctx.options();
  const uint64_t n = o.ops ? o.ops : 10000;
  size_t rec = 256;
  if (!o.records.empty()) {
    auto r = ParseSizeList(o.records);
    if (!r || r->front() < 16 || r->front() > (16u << 20)) {
      return {Json(), "bad --record (16 bytes to 16 MiB)"};
    }
    rec = static_cast<size_t>(r->front());
  }
  AlignedBuffer buf(rec);
  WorkloadOutcome out;
  Json variants = Json::MakeObject();
  Table table({"variant", "seconds", "us/append", "p99 us", "RPCs/append", "WRITE", "GETATTR",
               "COMMIT", "verified"});
  for (const Variant& v : kVariants) {
    std::string name = ctx.FileName(fmt::format("append-{}.dat", v.name));
    (void)ctx.driver().Unlink(name);
    if (std::string(v.name) == "open_close") {
      auto f = ctx.driver().Open(name, O_WRONLY | O_CREAT | O_TRUNC);
      if (!f || !(*f)->Close()) return {Json(), fmt::format("cannot create {}", name)};
    }
    ctx.progress().Phase(fmt::format("append {}", v.name), n, "appends");
    auto before = ctx.Take();
    Run r = RunVariant(ctx, v.name, name, n, buf, rec);
    Json counters = ctx.Since(before);
    std::string problem =
        r.error.empty() ? Verify(ctx.driver(), name, FileTag(name), n, rec) : r.error;
    if (!o.keep_files) (void)ctx.driver().Unlink(name);
    double loop_rpcs = Rpcs(r.loop_before, r.loop_after);
    const Json& wire = counters.Get("wire");
    Json vj = Json::MakeObject();
    vj.Set("what", v.what);
    vj.Set("appends", n);
    vj.Set("record", static_cast<uint64_t>(rec));
    vj.Set("seconds", r.seconds);
    vj.Set("us_per_append", r.seconds * 1e6 / static_cast<double>(n));
    vj.Set("latency_us", LatencyJson(r.latency_ns));
    // The loop alone (open and close excluded, except for open_close where they are the
    // loop), and everything including open and close.
    vj.Set("rpcs_per_append", loop_rpcs < 0 ? Json() : Json(loop_rpcs / static_cast<double>(n)));
    vj.Set(
        "rpcs_per_append_with_open_close",
        wire.is_null() ? Json() : Json(wire.Get("rpc_calls").AsNumber() / static_cast<double>(n)));
    vj.Set("wire", wire);
    vj.Set("server_calls", counters.Get("server_calls"));
    vj.Set("verified", problem.empty());
    if (!problem.empty()) vj.Set("problem", problem);
    auto per = [&](const char* proc) {
      return wire.is_null() ? std::string("-")
                            : Fixed(static_cast<double>(WireCalls(wire, proc)) / n, 2);
    };
    table.Row({v.name, Fixed(r.seconds, 3), Fixed(vj.Get("us_per_append").AsNumber(), 1),
               Fixed(static_cast<double>(r.latency_ns.Quantile(0.99)) / 1000, 1),
               loop_rpcs < 0 ? "-" : Fixed(loop_rpcs / n, 3), per("WRITE"), per("GETATTR"),
               per("COMMIT"), problem.empty() ? "yes" : "NO"});
    variants.Set(v.name, std::move(vj));
    if (!problem.empty() && out.error.empty()) out.error = problem;
  }
  ctx.progress().Clear();
  double naive = variants.Path("naive.seconds").AsNumber();
  Json ratio = Json::MakeObject();
  for (const char* v : {"one_open", "open_close"}) {
    double t = variants.Get(v).Get("seconds").AsNumber();
    ratio.Set(v, naive > 0 ? Json(t / naive) : Json());
  }
  std::printf(
      "append: %llu appends of %zu bytes; WRITE/GETATTR/COMMIT per append include open "
      "and close\n",
      static_cast<unsigned long long>(n), rec);
  table.Print(stdout);
  std::printf("time vs naive: one_open %.3f, open_close %.3f\n", ratio.Get("one_open").AsNumber(),
              ratio.Get("open_close").AsNumber());

  Json results = Json::MakeObject();
  results.Set("appends", n);
  results.Set("record", static_cast<uint64_t>(rec));
  results.Set("variants", std::move(variants));
  results.Set("time_ratio_vs_naive", std::move(ratio));
  out.results = std::move(results);
  return out;
}

}  // namespace nfsx::bench
