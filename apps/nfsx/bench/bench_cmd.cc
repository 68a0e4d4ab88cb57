// `nfsx bench`: the seeds' workloads against any NFSv3 server, through our client, libnfs,
// or plain POSIX calls (src/bench).
#include <fmt/format.h>

#include <memory>

#include "apps/nfsx/commands.h"
#include "bench/bench.h"
#include "bench/report.h"

namespace nfsx::app {
namespace {

std::string WorkloadHelp() {
  std::string out = "Workloads:\n";
  for (const bench::Workload& w : bench::Workloads()) {
    out += fmt::format("  {:<11} {}\n", w.name, w.summary);
  }
  out +=
      "Without --url an nfsx server is started in this process on a temporary export.\n"
      "Exit status: 0 good, 1 failed (I/O error, data that did not verify), 2 usage.";
  return out;
}

}  // namespace

Runner AddBench(CLI::App& app) {
  auto o = std::make_shared<bench::BenchOptions>();
  CLI::App* cmd = app.add_subcommand("bench", "Measure NFS workloads (the seeds' measurements)");
  cmd->footer(WorkloadHelp());
  cmd->add_option("workload", o->workload, "iozone, throughput, append, randread, randwrite, ping");
  cmd->add_option("--url", o->url,
                  "nfs://HOST/EXPORT[/DIR]?version=3&nfsport=P&mountport=M (default: start an "
                  "nfsx server here)");
  cmd->add_option("--driver", o->driver, "nfsx, libnfs, or path:DIR")->capture_default_str();
  cmd->add_option("--threads", o->threads,
                  "Threads (randread/randwrite: N means 1,2,4..N; or a list 1,3,6)");
  cmd->add_option("--size", o->size, "File size per file (4k, 64m, 1g)");
  cmd->add_option("--record", o->records, "Record size(s): 4k, 4k,1m, or a range 1k-16m");
  auto direct = std::make_shared<bool>(false);
  auto buffered = std::make_shared<bool>(false);
  CLI::Option* direct_opt = cmd->add_flag("--direct", *direct,
                                          "O_DIRECT: bypass the client's cache (default for "
                                          "throughput and randwrite)");
  cmd->add_flag("--no-direct", *buffered, "Buffered I/O (default for iozone and randread)")
      ->excludes(direct_opt);
  cmd->add_option("--json", o->json_path, "Write every figure as JSON to this file");
  cmd->add_option("--seconds", o->seconds,
                  "Seconds per point of randread/randwrite/asyncread/asyncwrite");
  cmd->add_option("--ops", o->ops, "append: appends (10000); ping: round trips (20000)");
  cmd->add_option("--depth", o->depth,
                  "ping: calls in flight for the 'many' figure (16); asyncread/asyncwrite: "
                  "the one depth to run (1,4,16,64,256)");
  cmd->add_option("--backend", o->backend,
                  "The started server's backend: localfs (default as root) or memfs")
      ->check(CLI::IsMember({"localfs", "memfs"}));
  cmd->add_option("--tmp-dir", o->tmp_dir, "Where the started server's export goes ($TMPDIR)");
  cmd->add_option("--label", o->label, "Free text recorded in the JSON");
  cmd->add_option("--server-pid", o->server_pid,
                  "The server's process: randread/randwrite also report its CPU time per "
                  "operation (from /proc/PID/stat)")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--keep-files", o->keep_files, "Leave the files the workload wrote");
  cmd->add_flag("--quiet,-q", o->quiet, "No progress line");

  auto r = std::make_shared<bench::ReportOptions>();
  CLI::App* report =
      cmd->add_subcommand("report", "Write the results file of a bench/compare.sh run directory");
  report->add_option("run_dir", r->run_dir, "The run directory")->required();
  report->add_option("--out", r->out, "The Markdown file to write")->required();
  report->add_option("--plot-data", r->plot_prefix,
                     "Write PREFIX-write.dat and PREFIX-read.dat for gnuplot");
  report->add_option("--missed", r->missed, "Write the missed targets to profile here");

  return [o, r, cmd, report, direct, buffered] {
    if (!cmd->parsed()) return -1;
    if (*direct) o->direct = true;
    if (*buffered) o->direct = false;
    if (report->parsed()) return bench::RunReport(*r);
    if (o->workload.empty()) {
      std::fprintf(stderr, "nfsx bench: which workload? (see nfsx bench --help)\n");
      return 2;
    }
    return bench::RunBench(*o);
  };
}

}  // namespace nfsx::app
