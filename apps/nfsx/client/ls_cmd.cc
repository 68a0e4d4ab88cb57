// nfsx ls [-l] [-a] [-R] URL...: list directories, or show files, as ls(1) does.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "apps/nfsx/client/client_commands.h"
#include "apps/nfsx/client/connections.h"
#include "apps/nfsx/client/ls_format.h"
#include "apps/nfsx/client/path_util.h"
#include "apps/nfsx/client/report.h"

namespace nfsx::app::cli {
namespace {

struct LsArgs {
  std::vector<std::string> urls;
  bool long_format = false;
  bool all = false;
  bool recursive = false;
  bool stats = false;
};

class Lister {
 public:
  Lister(const LsArgs& args, Reporter* report) : args_(args), report_(report) {}

  void Run() {
    struct Dir {
      RemotePath where;
      std::string display;
    };
    std::vector<ListedEntry> files;
    std::vector<Dir> dirs;
    for (const std::string& url : args_.urls) {
      std::string error;
      auto remote = connections_.Resolve(url, &error);
      if (!remote) {
        report_->Error(url, error);
        continue;
      }
      // -l shows a symlink named on the command line itself, as ls does.
      Client& c = *remote->client;
      auto st = args_.long_format ? c.Lstat(remote->path) : c.GetAttr(remote->path);
      if (!st) {
        report_->Error(url, st.error().code);
      } else if (st->type == FileType::kDirectory) {
        dirs.push_back(Dir{*remote, url});
      } else {
        files.push_back(ListedEntry{url, *st, LinkTarget(c, remote->path, *st)});
      }
    }
    Print(files);
    headers_ = files.size() + dirs.size() > 1 || args_.recursive;
    first_ = files.empty();
    for (const Dir& d : dirs) ListDir(d.where, d.display);
  }

  Connections& connections() { return connections_; }

 private:
  std::string LinkTarget(Client& c, const std::string& path, const Stat& st) {
    if (!args_.long_format || st.type != FileType::kSymlink) return "";
    auto target = c.Readlink(path);
    return target ? *target : "?";
  }

  void Print(const std::vector<ListedEntry>& entries) {
    if (args_.long_format) {
      for (const std::string& line : FormatLongListing(entries)) fmt::print("{}\n", line);
    } else {
      for (const ListedEntry& e : entries) fmt::print("{}\n", e.name);
    }
  }

  void ListDir(const RemotePath& dir, const std::string& display) {
    if (!first_) fmt::print("\n");
    first_ = false;
    if (headers_) fmt::print("{}:\n", display);
    Client& c = *dir.client;
    auto listed = c.ReadDir(dir.path);
    if (!listed) return report_->Error(display, listed.error().code);
    std::vector<ListedEntry> entries;
    bool need_attrs = args_.long_format || args_.recursive;
    for (DirEntry& e : *listed) {
      if (!args_.all && e.name.starts_with('.')) continue;
      std::string path = JoinPath(dir.path, e.name);
      if (need_attrs && !e.attr) {
        // The server sent no attributes with this entry (plain READDIR semantics).
        auto st = c.Lstat(path);
        if (!st) {
          report_->Error(ChildUrl(dir.url, e.name), st.error().code);
          continue;
        }
        e.attr = *st;
      }
      Stat st = e.attr.value_or(Stat{});
      entries.push_back(ListedEntry{std::move(e.name), st, LinkTarget(c, path, st)});
    }
    std::sort(entries.begin(), entries.end(),
              [](const ListedEntry& a, const ListedEntry& b) { return a.name < b.name; });
    Print(entries);
    if (!args_.recursive) return;
    for (const ListedEntry& e : entries) {
      if (e.attr.type != FileType::kDirectory || e.name == "." || e.name == "..") continue;
      RemotePath sub{dir.client, JoinPath(dir.path, e.name), dir.url};
      sub.url.path = JoinPath(dir.url.path, e.name);
      ListDir(sub, BuildNfsUrl(sub.url));
    }
  }

  const LsArgs& args_;
  Reporter* report_;
  Connections connections_;
  bool headers_ = false;
  bool first_ = true;
};

int RunLs(const LsArgs& args) {
  Reporter report("ls");
  Lister lister(args, &report);
  lister.Run();
  if (std::fflush(stdout) != 0) report.Error("write error", errno);
  if (args.stats) PrintStats(lister.connections());
  return report.ExitCode();
}

}  // namespace

ClientCommand AddLs(CLI::App& app) {
  auto args = std::make_shared<LsArgs>();
  CLI::App* cmd = app.add_subcommand("ls", "List NFS directories, or show NFS files");
  cmd->add_option("url", args->urls, "nfs://host[:port]/export/path[?options]")->required();
  cmd->add_flag("-l", args->long_format,
                "Long format: mode, links, uid, gid, size, mtime (long-iso), name");
  cmd->add_flag("-a", args->all, "Also names that begin with '.'");
  cmd->add_flag("-R", args->recursive, "List subdirectories too");
  AddStatsFlag(cmd, &args->stats);
  cmd->footer("Example: nfsx ls -l 'nfs://127.0.0.1/srv/a/dir?version=3&mountport=20048'");
  return {cmd, [args] { return RunLs(*args); }};
}

}  // namespace nfsx::app::cli
