// nfsx cp [-r] [-p] SRC... DST: copies between local paths and nfs:// URLs, any pairing.
#include <fmt/format.h>
#include <sys/stat.h>

#include <memory>
#include <string>
#include <vector>

#include "apps/nfsx/client/client_commands.h"
#include "apps/nfsx/client/connections.h"
#include "apps/nfsx/client/copier.h"
#include "apps/nfsx/client/endpoints.h"
#include "apps/nfsx/client/progress.h"
#include "apps/nfsx/client/report.h"

namespace nfsx::app::cli {
namespace {

struct CpArgs {
  std::vector<std::string> paths;
  bool recursive = false;
  bool preserve = false;
  bool stats = false;
};

void CopyAll(const CpArgs& args, Endpoints& endpoints, Reporter& report) {
  mode_t mask = umask(0);
  umask(mask);
  Copier copier(CopyOptions{args.recursive, args.preserve, mask}, &report);

  const std::string& dst_arg = args.paths.back();
  std::string error;
  auto dst = endpoints.Resolve(dst_arg, &error);
  if (!dst) return report.Error(dst_arg, error);
  auto dst_st = dst->tree->GetAttr(dst->path, true);
  bool into = dst_st && dst_st->type == FileType::kDirectory;
  size_t count = args.paths.size() - 1;
  if (count > 1 && !into) {
    return report.Error(fmt::format("target '{}' is not a directory", dst_arg));
  }

  struct Job {
    Location src, dst;
  };
  std::vector<Job> jobs;
  for (size_t i = 0; i < count; ++i) {
    const std::string& arg = args.paths[i];
    auto src = endpoints.Resolve(arg, &error);
    if (!src) {
      report.Error(arg, error);
      continue;
    }
    if (!into) {
      jobs.push_back(Job{*src, *dst});
      continue;
    }
    std::string name = SourceName(arg);
    if (name.empty() || name == "..") {
      report.Error(arg, "cannot tell what to name its copy");
      continue;
    }
    jobs.push_back(Job{*src, dst->Child(name)});
  }

  std::unique_ptr<ProgressBar> progress;
  if (ProgressBar::StderrIsTerminal()) {
    // Sizing the whole copy first costs a walk of the source tree; only a person
    // watching a terminal gets anything from it.
    uint64_t total = 0;
    for (const Job& job : jobs) total += copier.CountBytes(job.src);
    progress = ProgressBar::ForStderr(total);
    copier.set_progress(progress.get());
  }
  for (const Job& job : jobs) copier.Copy(job.src, job.dst);
  if (progress) progress->Finish();
}

int RunCp(const CpArgs& args) {
  Reporter report("cp");
  Connections connections;
  {
    Endpoints endpoints(&connections);
    CopyAll(args, endpoints, report);
  }
  if (args.stats) PrintStats(connections);
  return report.ExitCode();
}

}  // namespace

ClientCommand AddCp(CLI::App& app) {
  auto args = std::make_shared<CpArgs>();
  CLI::App* cmd = app.add_subcommand(
      "cp", "Copy files between local paths and nfs:// URLs (local->nfs, nfs->local, nfs->nfs)");
  cmd->add_option("paths", args->paths, "SRC... DST: local paths or nfs:// URLs")
      ->required()
      ->expected(2, -1);
  cmd->add_flag("-r,-R,--recursive", args->recursive,
                "Copy directories and what they hold; symlinks are copied as symlinks");
  cmd->add_flag("-p,--preserve", args->preserve, "Keep mode, times and (where permitted) owner");
  AddStatsFlag(cmd, &args->stats);
  cmd->footer(
      "With several SRC, or when DST is a directory, each SRC is copied into DST.\n"
      "A progress bar is drawn on stderr when it is a terminal and the copy takes over a "
      "second.");
  return {cmd, [args] { return RunCp(*args); }};
}

}  // namespace nfsx::app::cli
