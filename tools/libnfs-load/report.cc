#include "tools/libnfs-load/report.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>

namespace nfsx::load {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

double Us(uint64_t ns) { return static_cast<double>(ns) / 1000.0; }

double Rate(double amount, double seconds) { return seconds > 0 ? amount / seconds : 0.0; }

void PrintRow(std::FILE* out, const std::string& who, const char* op, const OpStats& s,
              double seconds, uint64_t mismatches, uint64_t errors) {
  const Histogram& h = s.latency_ns;
  fmt::print(out, "{:>4} {:<5} {:>10} {:>10.1f} {:>10.0f} {:>9.0f} {:>9.0f} {:>9.0f} {:>8} {:>6}\n",
             who, op, s.ops, Rate(static_cast<double>(s.bytes) / kMiB, seconds),
             Rate(static_cast<double>(s.ops), seconds), Us(h.Quantile(0.5)), Us(h.Quantile(0.99)),
             Us(h.max()), mismatches, errors);
}

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string JsonOp(const OpStats& s, double seconds) {
  const Histogram& h = s.latency_ns;
  return fmt::format(
      "{{\"ops\": {}, \"bytes\": {}, \"mib_per_s\": {:.3f}, \"iops\": {:.1f}, "
      "\"lat_us\": {{\"min\": {:.1f}, \"mean\": {:.1f}, \"p50\": {:.1f}, \"p90\": {:.1f}, "
      "\"p99\": {:.1f}, \"p999\": {:.1f}, \"max\": {:.1f}}}}}",
      s.ops, s.bytes, Rate(static_cast<double>(s.bytes) / kMiB, seconds),
      Rate(static_cast<double>(s.ops), seconds), Us(h.min()), h.mean() / 1000.0,
      Us(h.Quantile(0.5)), Us(h.Quantile(0.9)), Us(h.Quantile(0.99)), Us(h.Quantile(0.999)),
      Us(h.max()));
}

PhaseResult Total(const PhaseReport& phase) {
  PhaseResult t;
  for (const PhaseResult& r : phase.jobs) {
    t.read.Merge(r.read);
    t.write.Merge(r.write);
    t.mismatches += r.mismatches;
    t.errors += r.errors;
  }
  t.mismatches += phase.problems.size();
  t.seconds = phase.seconds;
  return t;
}

}  // namespace

Totals Summarize(const std::vector<PhaseReport>& phases) {
  Totals t;
  for (const PhaseReport& p : phases) {
    PhaseResult r = Total(p);
    t.reads += r.read.ops;
    t.writes += r.write.ops;
    t.mismatches += r.mismatches;
    t.errors += r.errors;
  }
  return t;
}

void PrintPhase(std::FILE* out, const Options& o, int index, int count, const PhaseReport& phase) {
  fmt::print(out, "== phase {}/{}: {}, {} job(s) x depth {}, {} blocks, {} {} ==\n", index + 1,
             count, ModeName(phase.mode), o.jobs, o.depth, FormatSize(o.block_size),
             FormatSize(o.file_size), o.shared ? "shared file" : "per file");
  fmt::print(out, "{:>4} {:<5} {:>10} {:>10} {:>10} {:>9} {:>9} {:>9} {:>8} {:>6}\n", "job", "op",
             "ops", "MiB/s", "IOPS", "p50 us", "p99 us", "max us", "mismatch", "errors");
  auto rows = [&](const std::string& who, const PhaseResult& r) {
    bool any = false;
    if (r.read.ops || !Writes(phase.mode) || phase.mode == Mode::kRandRw) {
      PrintRow(out, who, "read", r.read, r.seconds, r.mismatches, r.errors);
      any = true;
    }
    if (r.write.ops || Writes(phase.mode)) {
      PrintRow(out, who, "write", r.write, r.seconds, any ? 0 : r.mismatches, any ? 0 : r.errors);
    }
  };
  for (size_t j = 0; j < phase.jobs.size(); ++j) rows(fmt::format("{}", j), phase.jobs[j]);
  rows("all", Total(phase));
  std::string commits;
  for (size_t j = 0; j < phase.jobs.size(); ++j) {
    if (phase.jobs[j].fsync_ns >= 0) {
      commits +=
          fmt::format(" job {} {:.0f} us;", j, Us(static_cast<uint64_t>(phase.jobs[j].fsync_ns)));
    }
  }
  if (!commits.empty()) fmt::print(out, "COMMIT at end:{}\n", commits);
  for (const std::string& p : phase.problems) fmt::print(out, "MISMATCH {}\n", p);
  fmt::print(out, "phase time {:.3f} s\n", phase.seconds);
}

bool WriteJson(const std::string& path, const Options& o, const std::vector<PhaseReport>& phases,
               const std::vector<std::string>& run_errors, std::string* error) {
  std::string j = "{\n";
  j += fmt::format(
      "  \"tool\": \"nfsx-libnfs-load\",\n  \"url\": {},\n  \"jobs\": {},\n  \"depth\": {},\n"
      "  \"block_size\": {},\n  \"file_size\": {},\n  \"shared\": {},\n  \"fsync\": {},\n"
      "  \"seconds\": {},\n  \"read_fraction\": {},\n  \"seed\": {},\n  \"phases\": [\n",
      JsonString(o.url), o.jobs, o.depth, o.block_size, o.file_size, o.shared, o.fsync, o.seconds,
      o.read_fraction, o.seed);
  for (size_t p = 0; p < phases.size(); ++p) {
    const PhaseReport& ph = phases[p];
    j += fmt::format("    {{\"mode\": \"{}\", \"seconds\": {:.6f}, \"jobs\": [\n",
                     ModeName(ph.mode), ph.seconds);
    for (size_t i = 0; i < ph.jobs.size(); ++i) {
      const PhaseResult& r = ph.jobs[i];
      std::string commit =
          r.fsync_ns >= 0 ? fmt::format("{:.1f}", Us(static_cast<uint64_t>(r.fsync_ns))) : "null";
      j += fmt::format(
          "      {{\"job\": {}, \"file\": {}, \"seconds\": {:.6f}, \"read\": {}, \"write\": {}, "
          "\"commit_us\": {}, \"mismatches\": {}, \"errors\": {}}}{}\n",
          i, JsonString(ph.files[i]), r.seconds, JsonOp(r.read, r.seconds),
          JsonOp(r.write, r.seconds), commit, r.mismatches, r.errors,
          i + 1 < ph.jobs.size() ? "," : "");
    }
    PhaseResult t = Total(ph);
    std::string problems = "[";
    for (size_t i = 0; i < ph.problems.size(); ++i) {
      problems += (i ? ", " : "") + JsonString(ph.problems[i]);
    }
    problems += "]";
    j += fmt::format(
        "    ], \"total\": {{\"read\": {}, \"write\": {}, \"mismatches\": {}, \"errors\": {}}}, "
        "\"problems\": {}}}{}\n",
        JsonOp(t.read, t.seconds), JsonOp(t.write, t.seconds), t.mismatches, t.errors, problems,
        p + 1 < phases.size() ? "," : "");
  }
  Totals all = Summarize(phases);
  std::string failures = "[";
  for (size_t i = 0; i < run_errors.size(); ++i) {
    failures += (i ? ", " : "") + JsonString(run_errors[i]);
  }
  failures += "]";
  uint64_t errors = all.errors + run_errors.size();
  j += fmt::format(
      "  ],\n  \"run_errors\": {},\n  \"reads_verified\": {},\n  \"writes\": {},\n"
      "  \"mismatches\": {},\n  \"errors\": {},\n  \"ok\": {}\n}}\n",
      failures, all.reads, all.writes, all.mismatches, errors, all.mismatches == 0 && errors == 0);
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) {
    *error = fmt::format("{}: {}", path, std::strerror(errno));
    return false;
  }
  bool ok = std::fwrite(j.data(), 1, j.size(), f) == j.size();
  ok = std::fclose(f) == 0 && ok;
  if (!ok) *error = fmt::format("{}: write failed", path);
  return ok;
}

}  // namespace nfsx::load
