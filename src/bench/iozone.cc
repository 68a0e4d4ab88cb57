// iozone: write, rewrite, read and reread of one file, for each record size, as
// `iozone -a -i0 -i1` does (seed 004's table with -I, i.e. --direct), with the wire calls of
// every phase (seed 000: a reread of a file the client has cached must send no READ).
#include <fmt/format.h>

#include "bench/sequential.h"
#include "bench/table.h"
#include "bench/units.h"
#include "bench/workloads.h"

namespace nfsx::bench {
namespace {

constexpr const char* kPhases[] = {"write", "rewrite", "read", "reread"};

std::string Calls(const Json& phase) {
  const Json& wire = phase.Get("wire");
  if (wire.is_null()) return "-";
  return fmt::format("{}/{}/{}/{}", WireCalls(wire, "READ"), WireCalls(wire, "WRITE"),
                     WireCalls(wire, "COMMIT"), WireCalls(wire, "GETATTR"));
}

}  // namespace

WorkloadOutcome RunIozone(Context& ctx) {
  const BenchOptions& o = ctx.options();
  WorkloadOutcome out;
  uint64_t size = 32ull << 20;
  if (!o.size.empty()) {
    auto s = ParseSize(o.size);
    if (!s || *s == 0) return {Json(), "bad --size"};
    size = *s;
  }
  auto records = ParseSizeList(o.records.empty() ? "1k-16m" : o.records);
  if (!records) return {Json(), "bad --record (e.g. 4k, 4k,1m or 1k-16m)"};
  const bool direct = o.direct.value_or(false);
  const std::string name = ctx.FileName("iozone.dat");

  Json rows = Json::MakeArray();
  Table us({"KB", "reclen", "write", "rewrite", "read", "reread"});
  Table rates({"reclen", "write MiB/s", "rewrite", "read", "reread"});
  Table wire({"reclen", "write R/W/C/G", "rewrite", "read", "reread"});
  uint64_t reread_reads = 0;
  bool have_wire = false;
  AlignedBuffer buf(std::min<uint64_t>(size, records->back()));

  for (uint64_t record : *records) {
    if (record > size) {
      ctx.Note(fmt::format("record {} skipped: larger than the file", ShortSize(record)));
      continue;
    }
    Json row = Json::MakeObject();
    row.Set("record", record);
    Json phases = Json::MakeObject();
    std::vector<std::string> us_row{fmt::format("{}", size / 1024),
                                    fmt::format("{}", record / 1024)};
    std::vector<std::string> rate_row{ShortSize(record)}, wire_row{ShortSize(record)};
    for (const char* phase : kPhases) {
      std::string p = phase;
      PassSpec spec;
      spec.name = name;
      spec.write = p == "write" || p == "rewrite";
      spec.truncate = p == "write";
      spec.open_flags = direct ? O_DIRECT : 0;
      spec.size = size;
      spec.record = record;
      ctx.progress().Phase(fmt::format("iozone {} {}", ShortSize(record), p), size);
      auto before = ctx.Take();
      PassResult r = SequentialPass(ctx.driver(), spec, buf, &ctx.progress());
      Json pj = r.ToJson();
      Json counters = ctx.Since(before);
      pj.Set("wire", counters.Get("wire"));
      pj.Set("server_calls", counters.Get("server_calls"));
      if (p == "reread" && !pj.Get("wire").is_null()) {
        have_wire = true;
        reread_reads += WireCalls(pj.Get("wire"), "READ");
      }
      us_row.push_back(Fixed(pj.Get("us_per_call").AsNumber(), 1));
      rate_row.push_back(Fixed(pj.Get("mib_per_s").AsNumber(), 1));
      wire_row.push_back(Calls(pj));
      phases.Set(p, std::move(pj));
      if (!r.error.empty()) {
        out.error = r.error;
        break;
      }
    }
    row.Set("phases", std::move(phases));
    rows.Push(std::move(row));
    us.Row(std::move(us_row));
    rates.Row(std::move(rate_row));
    wire.Row(std::move(wire_row));
    if (!out.error.empty()) break;
  }
  if (!o.keep_files) (void)ctx.driver().Unlink(name);
  ctx.progress().Clear();

  std::printf("iozone: %s file, %s, microseconds per call (like iozone -a -i0 -i1%s)\n",
              LongSize(size).c_str(), direct ? "O_DIRECT" : "buffered", direct ? " -I" : "");
  us.Print(stdout);
  std::printf("\nMiB/s from open to close (close flushes and commits what the client held)\n");
  rates.Print(stdout);
  std::printf("\nwire calls per phase: READ/WRITE/COMMIT/GETATTR\n");
  wire.Print(stdout);

  Json results = Json::MakeObject();
  results.Set("file_size", size);
  results.Set("direct", direct);
  Json recs = Json::MakeArray();
  for (uint64_t r : *records) {
    if (r <= size) recs.Push(r);
  }
  results.Set("records", std::move(recs));
  results.Set("rows", std::move(rows));
  // Seed 000: rereads of a cached file send no READ (only meaningful when buffered).
  results.Set("reread_reads", have_wire ? Json(reread_reads) : Json());
  out.results = std::move(results);
  return out;
}

}  // namespace nfsx::bench
