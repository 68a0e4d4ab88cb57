#include "bench/bench.h"

#include <fmt/format.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <ctime>
#include <thread>

#include "base/logging.h"
#include "bench/cpu_time.h"
#include "bench/units.h"

namespace nfsx::bench {
namespace {

Json LoadAverage() {
  double l[3] = {0, 0, 0};
  Json out = Json::MakeArray();
  if (getloadavg(l, 3) == 3) {
    for (double v : l) out.Push(std::round(v * 100) / 100);
  }
  return out;
}

std::string Now() {
  std::time_t t = std::time(nullptr);
  char buf[64];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S%z", std::localtime(&t));
  return buf;
}

Json Machine() {
  Json m = Json::MakeObject();
  char host[256] = "";
  gethostname(host, sizeof(host) - 1);
  m.Set("host", host);
  m.Set("cpus", static_cast<uint64_t>(std::thread::hardware_concurrency()));
  utsname u{};
  if (uname(&u) == 0) m.Set("kernel", fmt::format("{} {}", u.sysname, u.release));
  return m;
}

Json OptionsJson(const BenchOptions& o) {
  Json j = Json::MakeObject();
  j.Set("url", o.url);
  j.Set("driver", o.driver);
  j.Set("threads", o.threads);
  j.Set("size", o.size);
  j.Set("record", o.records);
  j.Set("direct", o.direct ? Json(*o.direct) : Json());
  j.Set("seconds", o.seconds);
  j.Set("ops", o.ops);
  j.Set("depth", o.depth);
  j.Set("server_pid", o.server_pid > 0 ? Json(o.server_pid) : Json());
  return j;
}

const Workload* FindWorkload(const std::string& name) {
  for (const Workload& w : Workloads()) {
    if (name == w.name) return &w;
  }
  return nullptr;
}

}  // namespace

int RunBench(const BenchOptions& o) {
  const Workload* workload = FindWorkload(o.workload);
  if (!workload) {
    std::string names;
    for (const Workload& w : Workloads()) names += std::string(names.empty() ? "" : ", ") + w.name;
    fmt::print(stderr, "nfsx bench: unknown workload '{}' (one of {})\n", o.workload, names);
    return 2;
  }
  // The in-process server and the clients log every mount at info: too chatty around the
  // tables, unless asked for with NFSX_LOG_LEVEL.
  if (!std::getenv("NFSX_LOG_LEVEL") && log::GetLevel() == log::Level::kInfo) {
    log::SetLevel(log::Level::kWarn);
  }
  std::string error;
  auto spec = ParseDriverSpec(o.driver, &error);
  if (!spec) {
    fmt::print(stderr, "nfsx bench: {}\n", error);
    return 2;
  }
  if (o.server_pid > 0 && !ProcessCpuSeconds(o.server_pid)) {
    fmt::print(stderr, "nfsx bench: --server-pid {}: no such process to measure\n", o.server_pid);
    return 2;
  }
  // A client needs a server: without --url, the bench starts one.
  std::unique_ptr<SelfServer> server;
  std::string url = o.url;
  if (url.empty() && spec->kind != "path") {
    std::string backend = o.backend.empty() ? (geteuid() == 0 ? "localfs" : "memfs") : o.backend;
    auto s = SelfServer::Start(backend, o.tmp_dir, &error);
    if (!s) {
      fmt::print(stderr, "nfsx bench: cannot start an nfsx server: {}\n", error);
      return 2;
    }
    server = std::move(*s);
    url = server->url();
  }
  auto driver = MakeDriver(*spec, url, &error);
  if (!driver) {
    fmt::print(stderr, "nfsx bench: driver {}: {} ({})\n", o.driver, error,
               ErrorString(driver.error()));
    return 2;
  }
  Progress progress(!o.quiet && isatty(STDERR_FILENO));
  Context ctx(o, **driver, progress, server.get(), fmt::format("nfsx-bench-{}", getpid()));

  Json doc = Json::MakeObject();
  doc.Set("tool", "nfsx bench");
  doc.Set("format", 1);
  doc.Set("workload", workload->name);
  doc.Set("label", o.label);
  doc.Set("started", Now());
  Json drv = Json::MakeObject();
  drv.Set("kind", (*driver)->kind());
  drv.Set("description", (*driver)->description());
  doc.Set("driver", std::move(drv));
  Json srv = Json::MakeObject();
  srv.Set("started_by_bench", server != nullptr);
  srv.Set("description", server ? server->description() : (url.empty() ? "none" : "external"));
  srv.Set("url", url);
  doc.Set("server", std::move(srv));
  Json machine = Machine();
  machine.Set("load_avg_before", LoadAverage());

  std::printf("nfsx bench %s: %s; %s\n", workload->name, (*driver)->description().c_str(),
              server ? server->description().c_str() : "server: external");
  std::fflush(stdout);
  auto before = ctx.Take();
  auto start = Clock::now();
  WorkloadOutcome outcome = workload->run(ctx);
  double seconds = Since(start);
  auto total = ctx.driver().counters();
  machine.Set("load_avg_after", LoadAverage());
  doc.Set("machine", std::move(machine));
  doc.Set("seconds", seconds);
  doc.Set("options", OptionsJson(o));
  doc.Set("results", std::move(outcome.results));
  doc.Set("nfsstat", total && before.wire ? Json(FormatNfsstat(*total - *before.wire)) : Json());
  Json notes = Json::MakeArray();
  for (const auto& n : ctx.notes()) notes.Push(n);
  for (const auto& n : ctx.driver().notes()) notes.Push(n);
  doc.Set("notes", notes);
  doc.Set("ok", outcome.error.empty());
  doc.Set("error", outcome.error);

  for (const Json& n : notes.AsArray()) std::printf("note: %s\n", n.AsString().c_str());
  if (total && before.wire) std::printf("\n%s", FormatNfsstat(*total - *before.wire).c_str());
  std::printf("%.1f s\n", seconds);
  if (!outcome.error.empty())
    fmt::print(stderr, "nfsx bench {}: FAILED: {}\n", workload->name, outcome.error);
  if (!o.json_path.empty() && !WriteJsonFile(o.json_path, doc, &error)) {
    fmt::print(stderr, "nfsx bench: {}\n", error);
    return 1;
  }
  return outcome.error.empty() ? 0 : 1;
}

}  // namespace nfsx::bench
