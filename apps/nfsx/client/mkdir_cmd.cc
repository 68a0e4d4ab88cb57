// nfsx mkdir [-p] URL...: make directories.
#include <sys/stat.h>

#include <memory>
#include <string>
#include <vector>

#include "apps/nfsx/client/client_commands.h"
#include "apps/nfsx/client/connections.h"
#include "apps/nfsx/client/path_util.h"
#include "apps/nfsx/client/report.h"

namespace nfsx::app::cli {
namespace {

struct MkdirArgs {
  std::vector<std::string> urls;
  bool parents = false;
  bool stats = false;
};

// -p: each missing directory on the way, none of it an error if it is already there.
Result<void> MakeParents(Client& c, const std::string& path, uint32_t mode, uint32_t parent_mode) {
  std::vector<std::string> parts = SplitPath(path);
  std::string prefix;
  for (size_t i = 0; i < parts.size(); ++i) {
    prefix = JoinPath(prefix, parts[i]);
    bool last = i + 1 == parts.size();
    auto made = c.Mkdir(prefix, last ? mode : parent_mode);
    if (made) continue;
    if (made.error().code != EEXIST) return made;
    auto st = c.GetAttr(prefix);
    if (!st) return std::unexpected(st.error());
    if (st->type != FileType::kDirectory) return Fail(last ? EEXIST : ENOTDIR);
  }
  return {};
}

int RunMkdir(const MkdirArgs& args) {
  Reporter report("mkdir");
  Connections connections;
  // The server applies no umask: the client does, as the local kernel would.
  mode_t mask = umask(0);
  umask(mask);
  uint32_t mode = 0777 & ~mask;
  // As mkdir -p: parents are writable and searchable by us whatever the umask says.
  uint32_t parent_mode = mode | 0300;
  for (const std::string& url : args.urls) {
    std::string error;
    auto remote = connections.ResolveWithParent(url, &error);
    if (!remote) {
      // -p of an export's root: it exists, which is all -p asks.
      if (!(args.parents && remote.error().code == EBUSY)) report.Error(url, error);
      continue;
    }
    Client& c = *remote->client;
    auto made = args.parents ? MakeParents(c, remote->path, mode, parent_mode)
                             : c.Mkdir(remote->path, mode);
    if (!made) report.Error(url, made.error().code);
  }
  if (args.stats) PrintStats(connections);
  return report.ExitCode();
}

}  // namespace

ClientCommand AddMkdir(CLI::App& app) {
  auto args = std::make_shared<MkdirArgs>();
  CLI::App* cmd = app.add_subcommand("mkdir", "Make NFS directories");
  cmd->add_option("url", args->urls, "nfs://host[:port]/export/path[?options]")->required();
  cmd->add_flag("-p,--parents", args->parents,
                "Make parent directories as needed; no error if a directory exists");
  AddStatsFlag(cmd, &args->stats);
  return {cmd, [args] { return RunMkdir(*args); }};
}

}  // namespace nfsx::app::cli
