#include "bench/report.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>

#include "bench/report_data.h"
#include "bench/report_targets.h"
#include "bench/table.h"
#include "bench/units.h"

namespace nfsx::bench {
namespace {

struct RatioColumn {
  const char* header;
  const char* ours;
  const char* theirs;
};

// Each figure as a ratio to the peer server (for both clients), to the peer client and to
// the no-NFS limit: ours / theirs.
constexpr RatioColumn kRatios[] = {
    {"nfsx srv / Ganesha (nfsx cli)", kSubject, kGaneshaNfsx},
    {"nfsx srv / Ganesha (libnfs cli)", kNfsxLibnfs, kGaneshaLibnfs},
    {"nfsx cli / libnfs (nfsx srv)", kSubject, kNfsxLibnfs},
    {"nfsx cli nconnect=threads / libnfs (nfsx srv)", kSubjectMatched, kNfsxLibnfs},
    {"nfsx / local (limit)", kSubject, kLocal},
    {"mount / local", kMount, kLocal},
    {"nfsx / Ganesha, 1 CPU", kNfsx1Cpu, kGanesha1Cpu},
    {"nfsx / Ganesha, 2 CPUs", kNfsx2Cpu, kGanesha2Cpu},
    {"nfsx 2 CPUs / 1 CPU", kNfsx2Cpu, kNfsx1Cpu},
    {"Ganesha 2 CPUs / 1 CPU", kGanesha2Cpu, kGanesha1Cpu},
};

struct CaseInfo {
  const char* id;
  const char* title;
  const char* what;
};

constexpr CaseInfo kCases[] = {
    {"iozone-direct", "iozone, O_DIRECT: microseconds per call by record size (seed 004)",
     "One file, write/rewrite/read/reread per record size, every call to the server."},
    {"iozone", "iozone, buffered: MiB/s and reread READs (seed 000)",
     "A reread of a file the client has cached must send no READ."},
    {"throughput", "throughput: parallel O_DIRECT writers and readers (seed 003)",
     "Each thread writes, rewrites, then reads its own file; wire/app 1.00 means each byte "
     "was sent once."},
    {"append", "append: O_APPEND writes (seed 001)",
     "one_open: open once; open_close: open/close per write; naive: GETATTR + write + fsync "
     "per record."},
    {"randread", "randread, buffered: 4 KiB random reads of a cached file (seed 002)",
     "IOPS by threads; the client's cache and how it scales."},
    {"randread-direct", "randread, O_DIRECT: 4 KiB random reads from the server",
     "Every read is a READ: the server's IOPS with that many calls in flight."},
    {"randwrite", "randwrite, O_DIRECT: 4 KiB random writes",
     "Every write is a WRITE: the server's IOPS with that many calls in flight."},
    {"randread-direct-1m", "randread, O_DIRECT: 1 MiB random reads from the server",
     "Every read is a 1 MiB READ: what moving data costs the server."},
    {"randwrite-1m", "randwrite, O_DIRECT: 1 MiB random writes",
     "Every write is a 1 MiB WRITE: what moving data costs the server."},
    {"ping", "ping: NULL RPC round trips and raw loopback TCP",
     "The floor under every other figure."},
};

const char* Arrow(Better b) {
  switch (b) {
    case Better::kHigher:
      return "higher";
    case Better::kLower:
      return "lower";
    case Better::kNone:
      return "1.00";
  }
  return "";
}

std::string CaseTable(const RunData& d, const std::vector<Metric>& metrics, const char* c) {
  std::vector<std::string> systems;
  for (const auto& [id, desc] : d.systems()) {
    bool has = false;
    for (const Metric& m : metrics) has = has || (m.test_case == c && Value(d, m, id));
    if (has) systems.push_back(id);
  }
  std::vector<const RatioColumn*> ratios;
  std::set<std::string> present(systems.begin(), systems.end());
  for (const RatioColumn& r : kRatios) {
    if (present.count(r.ours) && present.count(r.theirs)) ratios.push_back(&r);
  }
  std::vector<std::string> headers{"figure", "unit", "better"};
  for (const auto& s : systems) headers.push_back(s);
  for (const auto* r : ratios) headers.push_back(r->header);
  Table table(headers);
  for (const Metric& m : metrics) {
    if (m.test_case != c) continue;
    std::vector<std::string> row{m.label, m.unit, Arrow(m.better)};
    bool any = false;
    for (const auto& s : systems) {
      auto v = Value(d, m, s);
      any = any || v.has_value();
      row.push_back(v ? Sig(*v) : "-");
    }
    if (!any) continue;
    for (const auto* r : ratios) {
      auto a = Value(d, m, r->ours);
      auto b = Value(d, m, r->theirs);
      row.push_back(a && b && *b != 0 ? Fixed(*a / *b, 2) : "-");
    }
    table.Row(std::move(row));
  }
  return table.empty() ? "" : table.Markdown();
}

// Seed 004's table (microseconds per call, the four phases) for one system.
std::string IozoneTable(const Json& doc) {
  Table t({"KB", "reclen", "write", "rewrite", "read", "reread"});
  const Json& res = doc.Get("results");
  auto size = static_cast<uint64_t>(res.Get("file_size").AsNumber());
  for (const Json& row : res.Get("rows").AsArray()) {
    auto rec = static_cast<uint64_t>(row.Get("record").AsNumber());
    std::vector<std::string> cells{fmt::format("{}", size / 1024), fmt::format("{}", rec / 1024)};
    for (const char* p : {"write", "rewrite", "read", "reread"}) {
      cells.push_back(Fixed(row.Get("phases").Get(p).Get("us_per_call").AsNumber(), 0));
    }
    t.Row(std::move(cells));
  }
  return t.Markdown();
}

bool WritePlotData(const RunData& d, const std::string& prefix, std::string* error) {
  for (const char* phase : {"write", "read"}) {
    std::string path = fmt::format("{}-{}.dat", prefix, phase);
    std::ofstream out(path);
    if (!out) {
      *error = "cannot write " + path;
      return false;
    }
    std::vector<std::string> systems;
    std::set<uint64_t> records;
    for (const auto& [id, desc] : d.systems()) {
      const Json& doc = d.Doc(id, "iozone-direct");
      if (doc.is_null()) continue;
      systems.push_back(id);
      for (const Json& r : doc.Path("results.records").AsArray()) {
        records.insert(static_cast<uint64_t>(r.AsNumber()));
      }
    }
    out << "record_kb";
    for (const auto& s : systems) out << " " << s;
    out << "\n";
    for (uint64_t rec : records) {
      out << fmt::format("{}", static_cast<double>(rec) / 1024);
      for (const auto& s : systems) {
        auto m = Median(d, s, "iozone-direct", [&](const Json& res) -> std::optional<double> {
          for (const Json& row : res.Get("rows").AsArray()) {
            if (static_cast<uint64_t>(row.Get("record").AsNumber()) == rec) {
              const Json& v = row.Get("phases").Get(phase).Get("us_per_call");
              if (v.is_number()) return v.AsNumber();
            }
          }
          return std::nullopt;
        });
        double v = m.value_or(NAN);
        out << " " << (std::isnan(v) ? std::string("NaN") : fmt::format("{:.2f}", v));
      }
      out << "\n";
    }
  }
  return true;
}

}  // namespace

int RunReport(const ReportOptions& o) {
  RunData d;
  std::string error;
  if (!d.Load(o.run_dir, &error)) {
    fmt::print(stderr, "nfsx bench report: {}\n", error);
    return 2;
  }
  std::vector<Metric> metrics = BuildMetrics(d);
  std::vector<TargetResult> targets = EvaluateTargets(d, metrics);

  std::string md;
  md += fmt::format("# nfsx bench: side by side, {} on {}\n\n", d.Meta("date"), d.Meta("host"));
  md += fmt::format(
      "Machine: {} CPUs, {}; load average {} before, {} after (the machine is shared: other "
      "work was running, figures are noisy).\n\n",
      d.Meta("cpus"), d.Meta("kernel"), d.Meta("load_before"), d.Meta("load_after"));
  md += fmt::format(
      "Run: `{}` ({} sizes: {}), {} s in all. Reproduce: see README, "
      "\"Benchmarks\".\n\n",
      d.Meta("command"), d.Meta("mode"), d.Meta("sizes"), d.Meta("seconds"));
  // compare.sh says what its mode did to keep the comparison fair; the default run's words
  // otherwise.
  std::string fairness = d.Meta("fairness");
  if (fairness.empty()) {
    fairness =
        "both servers run at their defaults; the libnfs driver opens one connection per "
        "thread and the nfsx client shares one Client between threads (nconnect=1 by default), "
        "so the threaded cases also run as `nfsx+nfsx-nc`, with nconnect = threads.";
  }
  md += fmt::format(
      "Ratios are ours / theirs for the figure in that row: above 1 is better where higher "
      "is better, below 1 where lower is. Fairness: even rounds run the systems in reverse "
      "order; {}\n\n",
      fairness);

  md += "## Systems\n\n";
  Table sys({"id", "what"});
  for (const auto& [id, desc] : d.systems()) sys.Row({id, desc});
  md += sys.Markdown() + "\n";

  md += "## Targets (issue #5)\n\n";
  Table tt({"target", "measured", "verdict"});
  for (const auto& t : targets) tt.Row({t.target, t.value, VerdictText(t.verdict)});
  md += tt.Markdown() + "\n";
  bool missed = false;
  for (const auto& t : targets) missed = missed || t.verdict == Verdict::kMissed;
  if (missed) {
    md += "Missed targets are profiled in \"Profiles\" at the end: where the time goes.\n\n";
  }
  if (!d.failures().empty()) {
    md += "## Runs that failed\n\n";
    for (const auto& f : d.failures()) md += "- " + f + "\n";
    md += "\n";
  }
  for (const CaseInfo& c : kCases) {
    std::string table = CaseTable(d, metrics, c.id);
    if (table.empty()) continue;
    md += fmt::format("## {}\n\n{}", c.title, c.what);
    std::string cmd = d.Meta(std::string("cmd:") + c.id);
    if (!cmd.empty()) md += fmt::format(" Command: `nfsx bench {}`.", cmd);
    md += "\n\n" + table + "\n";
    if (std::string(c.id) == "iozone-direct") {
      for (const char* s : {kSubject, kGaneshaNfsx}) {
        const Json& doc = d.Doc(s, c.id);
        if (doc.is_null()) continue;
        md += fmt::format("As seed 004 prints it, {} (microseconds per call):\n\n{}\n", s,
                          IozoneTable(doc));
      }
      md += "![latency per record size](" + d.Meta("plot") + ")\n\n";
    }
  }
  if (!d.notes().empty()) {
    md += "## Notes\n\n";
    for (const auto& n : d.notes()) md += "- " + n + "\n";
    md += "\n";
  }
  std::set<std::string> driver_notes;
  for (const auto& [id, desc] : d.systems()) {
    for (const CaseInfo& c : kCases) {
      for (const Json& n : d.Doc(id, c.id).Get("notes").AsArray()) {
        driver_notes.insert(fmt::format("{}/{}: {}", id, c.id, n.AsString()));
      }
    }
  }
  if (!driver_notes.empty()) {
    md += "Notes from the runs:\n\n";
    for (const auto& n : driver_notes) md += "- " + n + "\n";
    md += "\n";
  }

  std::ofstream out(o.out);
  if (!out || !(out << md)) {
    fmt::print(stderr, "nfsx bench report: cannot write {}\n", o.out);
    return 1;
  }
  if (!o.plot_prefix.empty() && !WritePlotData(d, o.plot_prefix, &error)) {
    fmt::print(stderr, "nfsx bench report: {}\n", error);
    return 1;
  }
  if (!o.missed.empty()) {
    std::ofstream m(o.missed);
    std::set<std::string> seen;
    for (const auto& t : targets) {
      if (t.verdict != Verdict::kMissed) continue;
      for (const auto& [c, s] : t.profile) {
        std::string line = c + "\t" + s;
        if (seen.insert(line).second) m << line << "\t" << t.target << "\n";
      }
    }
  }
  fmt::print("nfsx bench report: wrote {}\n", o.out);
  for (const auto& t : targets) {
    fmt::print("  {:<13} {}\n", VerdictText(t.verdict), t.target);
  }
  return 0;
}

}  // namespace nfsx::bench
