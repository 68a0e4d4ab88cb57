// nfsx mv SRC... DST: RENAME within one server and export.
#include <fmt/format.h>

#include <memory>
#include <string>
#include <vector>

#include "apps/nfsx/client/client_commands.h"
#include "apps/nfsx/client/connections.h"
#include "apps/nfsx/client/path_util.h"
#include "apps/nfsx/client/report.h"

namespace nfsx::app::cli {
namespace {

struct MvArgs {
  std::vector<std::string> urls;
  bool stats = false;
};

int RunMv(const MvArgs& args) {
  Reporter report("mv");
  Connections connections;
  const std::string& dst = args.urls.back();
  size_t sources = args.urls.size() - 1;
  for (size_t i = 0; i < sources; ++i) {
    const std::string& src = args.urls[i];
    std::string error;
    auto pair = connections.ResolveTogether(src, dst, &error);
    if (!pair) {
      report.Error(fmt::format("cannot move '{}' to '{}'", src, dst), error);
      continue;
    }
    auto& [from, to] = *pair;
    // Into an existing directory, under the same name, as mv does.
    auto st = to.client->GetAttr(to.path);
    bool into = st && st->type == FileType::kDirectory;
    if (sources > 1 && !into) {
      report.Error(fmt::format("target '{}' is not a directory", dst));
      break;
    }
    std::string target = into ? JoinPath(to.path, BaseName(from.url.path)) : to.path;
    if (auto r = from.client->Rename(from.path, target); !r) {
      report.Error(fmt::format("cannot move '{}' to '{}'", src, dst), r.error().code);
    }
  }
  if (args.stats) PrintStats(connections);
  return report.ExitCode();
}

}  // namespace

ClientCommand AddMv(CLI::App& app) {
  auto args = std::make_shared<MvArgs>();
  CLI::App* cmd = app.add_subcommand(
      "mv", "Rename NFS files within one export (into DST when it is a directory)");
  cmd->add_option("url", args->urls, "SRC... DST, nfs:// URLs on one server")
      ->required()
      ->expected(2, -1);
  AddStatsFlag(cmd, &args->stats);
  return {cmd, [args] { return RunMv(*args); }};
}

}  // namespace nfsx::app::cli
