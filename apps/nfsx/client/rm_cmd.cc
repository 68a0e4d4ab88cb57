// nfsx rm [-r] [-f] URL...: remove files, and with -r directories and what they hold.
#include <memory>
#include <string>
#include <vector>

#include "apps/nfsx/client/client_commands.h"
#include "apps/nfsx/client/connections.h"
#include "apps/nfsx/client/nfs_url.h"
#include "apps/nfsx/client/path_util.h"
#include "apps/nfsx/client/report.h"

namespace nfsx::app::cli {
namespace {

struct RmArgs {
  std::vector<std::string> urls;
  bool recursive = false;
  bool force = false;
  bool stats = false;
};

class Remover {
 public:
  Remover(const RmArgs& args, Reporter* report) : args_(args), report_(report) {}

  void Remove(Client& c, const std::string& path, const std::string& display, const UrlParts& url) {
    auto st = c.Lstat(path);
    if (!st) return Failed(display, st.error().code);
    if (st->type != FileType::kDirectory) {
      if (auto r = c.Unlink(path); !r) Failed(display, r.error().code);
      return;
    }
    if (!args_.recursive) return report_->Error(display, EISDIR);
    RemoveTree(c, path, display, url);
  }

 private:
  // -f: what is already gone is no error.
  void Failed(const std::string& display, int err) {
    if (!(args_.force && err == ENOENT)) report_->Error(display, err);
  }

  // Depth first: a directory goes once what it holds is gone.
  void RemoveTree(Client& c, const std::string& path, const std::string& display,
                  const UrlParts& url) {
    auto entries = c.ReadDir(path);
    if (!entries) return Failed(display, entries.error().code);
    for (const DirEntry& e : *entries) {
      if (e.name == "." || e.name == "..") continue;
      std::string child = JoinPath(path, e.name);
      UrlParts child_url = url;
      child_url.path = JoinPath(url.path, e.name);
      std::string child_display = BuildNfsUrl(child_url);
      std::optional<Stat> st = e.attr;
      if (!st) {
        auto got = c.Lstat(child);
        if (!got) {
          Failed(child_display, got.error().code);
          continue;
        }
        st = *got;
      }
      if (st->type == FileType::kDirectory) {
        RemoveTree(c, child, child_display, child_url);
      } else if (auto r = c.Unlink(child); !r) {
        Failed(child_display, r.error().code);
      }
    }
    if (auto r = c.Rmdir(path); !r) Failed(display, r.error().code);
  }

  const RmArgs& args_;
  Reporter* report_;
};

int RunRm(const RmArgs& args) {
  Reporter report("rm");
  Connections connections;
  Remover remover(args, &report);
  for (const std::string& url : args.urls) {
    std::string last = LastComponentAsWritten(url);
    if (last == "." || last == "..") {
      report.Error(url, "refusing to remove '.' or '..'");
      continue;
    }
    std::string error;
    auto remote = connections.ResolveWithParent(url, &error);
    if (!remote) {
      report.Error(url, error);
      continue;
    }
    remover.Remove(*remote->client, remote->path, url, remote->url);
  }
  if (args.stats) PrintStats(connections);
  return report.ExitCode();
}

}  // namespace

ClientCommand AddRm(CLI::App& app) {
  auto args = std::make_shared<RmArgs>();
  CLI::App* cmd = app.add_subcommand("rm", "Remove NFS files (and directories with -r)");
  cmd->add_option("url", args->urls, "nfs://host[:port]/export/path[?options]")->required();
  cmd->add_flag("-r,-R,--recursive", args->recursive, "Remove directories and their contents");
  cmd->add_flag("-f,--force", args->force, "Ignore files that do not exist");
  AddStatsFlag(cmd, &args->stats);
  return {cmd, [args] { return RunRm(*args); }};
}

}  // namespace nfsx::app::cli
