// nfsx stat URL...: attributes as stat(1) shows them (symlinks themselves, not followed).
// nfsx stat MOUNTPOINT: the nfsstat-style counters of that `nfsx mount`.
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "apps/nfsx/client/client_commands.h"
#include "apps/nfsx/client/connections.h"
#include "apps/nfsx/client/ls_format.h"
#include "apps/nfsx/client/report.h"
#include "apps/nfsx/mount/mount_commands.h"

namespace nfsx::app::cli {
namespace {

struct StatArgs {
  std::vector<std::string> urls;
  bool follow = false;
  bool stats = false;
};

int RunStat(const StatArgs& args) {
  Reporter report("stat");
  Connections connections;
  int mount_status = 0;
  for (const std::string& url : args.urls) {
    if (url.find("://") == std::string::npos) {  // a local path: an nfsx mount point
      if (mount::RunMountstat(url) != 0) mount_status = 1;
      continue;
    }
    std::string error;
    auto remote = connections.Resolve(url, &error);
    if (!remote) {
      report.Error(url, error);
      continue;
    }
    Client& c = *remote->client;
    auto st = args.follow ? c.GetAttr(remote->path) : c.Lstat(remote->path);
    if (!st) {
      report.Error(url, st.error().code);
      continue;
    }
    std::string target;
    if (st->type == FileType::kSymlink) {
      auto t = c.Readlink(remote->path);
      if (t) target = *t;
    }
    fmt::print("{}", FormatStatReport(url, *st, target));
  }
  if (std::fflush(stdout) != 0) report.Error("write error", errno);
  if (args.stats) PrintStats(connections);
  return report.ExitCode() ? report.ExitCode() : mount_status;
}

}  // namespace

ClientCommand AddStat(CLI::App& app) {
  auto args = std::make_shared<StatArgs>();
  CLI::App* cmd = app.add_subcommand(
      "stat", "Show the attributes of NFS files, as stat(1), or the counters of an nfsx mount");
  cmd->add_option("url", args->urls,
                  "nfs://host[:port]/export/path[?options], or an nfsx mount point")
      ->required();
  cmd->add_flag("-L,--dereference", args->follow, "Follow symlinks");
  AddStatsFlag(cmd, &args->stats);
  return {cmd, [args] { return RunStat(*args); }};
}

}  // namespace nfsx::app::cli
