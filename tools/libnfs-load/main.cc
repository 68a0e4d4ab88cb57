// nfsx-libnfs-load: an NFSv3 load driver built on Debian's libnfs, independent of nfsx's own
// client. Every block it writes describes itself and every block it reads is checked, so a
// run is both a load test and a data-integrity test. See README.md.
#include <fmt/format.h>
#include <signal.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <random>
#include <thread>

#include "tools/libnfs-load/block.h"
#include "tools/libnfs-load/job.h"
#include "tools/libnfs-load/options.h"
#include "tools/libnfs-load/report.h"
#include "tools/libnfs-load/track.h"

namespace nfsx::load {
namespace {

constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;

// Checks the settings that CLI11 cannot; returns an error message or "".
std::string Validate(const Options& o) {
  if (o.block_size < kHeaderSize || o.block_size % 8 != 0) {
    return fmt::format("--bs must be a multiple of 8 and at least {}", kHeaderSize);
  }
  if (o.file_size == 0 || o.file_size % o.block_size != 0) {
    return "--size must be a positive multiple of --bs";
  }
  if (o.read_fraction < 0 || o.read_fraction > 1) return "--mixed must be between 0 and 1";
  for (Mode m : o.phases) {
    if (IsRandom(m) && o.seconds <= 0 && o.max_ops == 0) {
      return "random modes need --seconds > 0 or --ops";
    }
  }
  return {};
}

uint32_t RunNonce() {
  // Generations from different runs must differ, so that a stale block left by an earlier
  // run is never taken for a fresh one.
  std::random_device rd;
  uint32_t n = 0;
  while (n == 0) n = rd() & ((1u << 29) - 1);
  return n;
}

class Driver {
 public:
  explicit Driver(const Options& o) : o_(o), run_(o) {}

  int Main() {
    if (!Setup()) return Finish();
    for (size_t p = 0; p < o_.phases.size() && !run_.stopping(); ++p) {
      RunPhase(static_cast<int>(p));
    }
    for (auto& job : jobs_) {
      std::string error;
      if (!job->Close(&error)) Error(fmt::format("job {}: {}", job->index(), error));
    }
    if (!o_.state_path.empty()) {
      std::string error;
      std::vector<FileTrack*> tracks = Tracks();
      if (!FileTrack::Save(o_.state_path, o_.block_size, tracks, &error)) Error(error);
    }
    return Finish();
  }

 private:
  bool AnyWrites() const {
    for (Mode m : o_.phases) {
      if (Writes(m)) return true;
    }
    return false;
  }

  std::vector<FileTrack*> Tracks() {
    std::vector<FileTrack*> out;
    for (auto& t : tracks_) out.push_back(t.get());
    return out;
  }

  void Error(const std::string& what) {
    fmt::print(stderr, "ERROR {}\n", what);
    run_errors_.push_back(what);
  }

  bool Setup() {
    for (int i = 0; i < o_.jobs; ++i) {
      auto job = std::make_unique<Job>(i, &run_);
      std::string error;
      if (!job->Connect(&error)) {
        Error(fmt::format("job {}: {}", i, error));
        return false;
      }
      jobs_.push_back(std::move(job));
    }
    uint64_t blocks = o_.file_size / o_.block_size;
    uint32_t nonce = RunNonce();
    bool all_existed = true;
    int files = o_.shared ? 1 : o_.jobs;
    for (int f = 0; f < files; ++f) {
      std::string name = o_.shared ? "shared.dat" : fmt::format("job-{}.dat", f);
      FileInfo info;
      std::string error;
      if (!jobs_[static_cast<size_t>(f)]->Prepare(name, o_.create, AnyWrites(), &info, &error)) {
        Error(fmt::format("job {}: {}", f, error));
        return false;
      }
      all_existed = all_existed && info.existed;
      uint64_t id = o_.shared ? 0 : static_cast<uint64_t>(f) + 1;
      tracks_.push_back(std::make_unique<FileTrack>(
          id, name, blocks, info.existed ? FileTrack::kUnknown : FileTrack::kNever, info.size,
          nonce));
    }
    if (!o_.state_path.empty() && std::filesystem::exists(o_.state_path)) {
      if (!all_existed) {
        fmt::print("note: {} ignored: the files were created by this run\n", o_.state_path);
      } else {
        std::string error;
        if (!FileTrack::Load(o_.state_path, o_.block_size, Tracks(), &error)) {
          Error(error);
          return false;
        }
      }
    }
    for (auto& job : jobs_) {
      FileTrack* track = tracks_[o_.shared ? 0 : static_cast<size_t>(job->index())].get();
      std::string error;
      if (!job->Open(track, AnyWrites(), &error)) {
        Error(fmt::format("job {}: {}", job->index(), error));
        return false;
      }
    }
    return true;
  }

  void RunPhase(int p) {
    PhaseReport report;
    report.mode = o_.phases[static_cast<size_t>(p)];
    report.jobs.resize(jobs_.size());
    std::vector<std::thread> threads;
    for (size_t j = 0; j < jobs_.size(); ++j) {
      threads.emplace_back([&, j] { report.jobs[j] = jobs_[j]->RunPhase(report.mode, p); });
    }
    for (auto& t : threads) t.join();
    for (size_t j = 0; j < jobs_.size(); ++j) {
      report.seconds = std::max(report.seconds, report.jobs[j].seconds);
      report.files.push_back(tracks_[o_.shared ? 0 : j]->name());
    }
    if (report.mode == Mode::kVerify && !run_.stopping()) {
      size_t owners = o_.shared ? 1 : jobs_.size();
      for (size_t j = 0; j < owners; ++j) {
        std::string problem = jobs_[j]->CheckSize();
        if (!problem.empty()) report.problems.push_back(tracks_[j]->name() + ": " + problem);
      }
    }
    PrintPhase(stdout, o_, p, static_cast<int>(o_.phases.size()), report);
    std::fflush(stdout);
    phases_.push_back(std::move(report));
  }

  int Finish() {
    if (!o_.json_path.empty()) {
      std::string error;
      if (!WriteJson(o_.json_path, o_, phases_, run_errors_, &error)) Error(error);
    }
    Totals t = Summarize(phases_);
    uint64_t errors = t.errors + run_errors_.size();
    if (t.mismatches == 0 && errors == 0) {
      fmt::print("nfsx-libnfs-load: OK: {} writes, {} reads{}\n", t.writes, t.reads,
                 t.reads ? ", every block read verified" : "");
      return 0;
    }
    fmt::print(stderr,
               "nfsx-libnfs-load: FAILED: {} verification mismatch(es), {} I/O error(s) "
               "({} writes, {} reads)\n",
               t.mismatches, errors, t.writes, t.reads);
    return kExitFailed;
  }

  const Options& o_;
  Run run_;
  std::vector<std::unique_ptr<Job>> jobs_;
  std::vector<std::unique_ptr<FileTrack>> tracks_;
  std::vector<PhaseReport> phases_;
  std::vector<std::string> run_errors_;
};

}  // namespace
}  // namespace nfsx::load

int main(int argc, char** argv) {
  using namespace nfsx::load;
  Options o;
  std::string mode, bs = "4k", size = "64m";
  double timeout_s = 60;
  CLI::App app{
      "nfsx-libnfs-load: NFSv3 load and data-integrity driver on libnfs (async, many requests "
      "in flight)"};
  app.add_option("url", o.url,
                 "nfs://HOST/EXPORT[/DIR]?version=3&nfsport=P&mountport=M (libnfs syntax); "
                 "files go in that directory")
      ->required();
  app.add_option("--mode", mode,
                 "write, read, randwrite, randread, randrw, verify, or a comma list run in "
                 "order on the same files (e.g. write,verify)");
  app.add_option("--jobs,-j", o.jobs, "Jobs: threads, each with its own connection")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  app.add_option("--depth,-d", o.depth, "Requests in flight per job")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  app.add_option("--bs", bs, "Block size (4k, 256k, 1m)")->capture_default_str();
  app.add_option("--size", size, "File size (per file)")->capture_default_str();
  app.add_option("--seconds", o.seconds, "Duration of random modes")->capture_default_str();
  app.add_option("--ops", o.max_ops, "Random modes: stop a job after this many requests");
  auto* mixed = app.add_option("--mixed", o.read_fraction,
                               "Fraction of reads in randrw (implies --mode randrw)");
  app.add_flag("--shared", o.shared, "All jobs use one file, shared.dat");
  app.add_flag("--create", o.create, "Create or truncate the files first");
  app.add_flag("--fsync", o.fsync, "COMMIT at the end of every writing phase (timed)");
  app.add_option("--seed", o.seed, "Seed of the random offsets")->capture_default_str();
  app.add_option("--json", o.json_path, "Write the results as JSON to this file");
  app.add_option("--state", o.state_path,
                 "Load (if present) and save the expected content of every block, so a later "
                 "run checks exactly what this one wrote");
  app.add_option("--timeout", timeout_s, "Seconds before a request counts as failed")
      ->capture_default_str();
  app.add_option("--max-reports", o.max_reports, "Mismatches printed in detail")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  if (mode.empty()) mode = mixed->count() ? "randrw" : "write";
  auto phases = ParseModes(mode);
  auto bs_value = ParseSize(bs);
  auto size_value = ParseSize(size);
  if (!phases || !bs_value || !size_value) {
    fmt::print(stderr, "nfsx-libnfs-load: bad --mode, --bs or --size (see --help)\n");
    return kExitUsage;
  }
  o.phases = *phases;
  o.block_size = *bs_value;
  o.file_size = *size_value;
  o.timeout_ms = static_cast<int>(timeout_s * 1000);
  if (mixed->count() &&
      std::find(o.phases.begin(), o.phases.end(), Mode::kRandRw) == o.phases.end()) {
    fmt::print(stderr, "nfsx-libnfs-load: --mixed needs mode randrw\n");
    return kExitUsage;
  }
  if (std::string error = Validate(o); !error.empty()) {
    fmt::print(stderr, "nfsx-libnfs-load: {}\n", error);
    return kExitUsage;
  }
  // A server that closes the connection must show up as an error, not kill us.
  signal(SIGPIPE, SIG_IGN);
  Driver driver(o);
  return driver.Main();
}
