// nfsx cat URL...: file contents to stdout, streamed.
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "apps/nfsx/client/client_commands.h"
#include "apps/nfsx/client/connections.h"
#include "apps/nfsx/client/report.h"

namespace nfsx::app::cli {
namespace {

constexpr size_t kChunk = size_t{1} << 20;

struct CatArgs {
  std::vector<std::string> urls;
  bool stats = false;
};

Result<void> WriteStdout(std::span<const std::byte> data) {
  while (!data.empty()) {
    ssize_t n = write(STDOUT_FILENO, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return FailErrno();
    data = data.subspan(static_cast<size_t>(n));
  }
  return {};
}

// False when stdout failed: nothing more can be written, so the command stops.
bool CatOne(Connections& connections, const std::string& url, std::vector<std::byte>& buffer,
            Reporter& report) {
  std::string error;
  auto remote = connections.Resolve(url, &error);
  if (!remote) {
    report.Error(url, error);
    return true;
  }
  auto file = remote->client->Open(remote->path, O_RDONLY);
  if (!file) {
    report.Error(url, file.error().code);
    return true;
  }
  // The library opens directories too (for their attributes); their bytes are not ours.
  if (auto st = (*file)->Fstat(); st && st->type == FileType::kDirectory) {
    report.Error(url, EISDIR);
    return true;
  }
  for (;;) {
    auto n = (*file)->Read(buffer);
    if (!n) {
      report.Error(url, n.error().code);
      return true;
    }
    if (*n == 0) return true;
    if (auto w = WriteStdout(std::span(buffer).first(*n)); !w) {
      report.Error("write error", w.error().code);
      return false;
    }
  }
}

int RunCat(const CatArgs& args) {
  Reporter report("cat");
  Connections connections;
  std::vector<std::byte> buffer(kChunk);
  for (const std::string& url : args.urls) {
    if (!CatOne(connections, url, buffer, report)) break;
  }
  if (args.stats) PrintStats(connections);
  return report.ExitCode();
}

}  // namespace

ClientCommand AddCat(CLI::App& app) {
  auto args = std::make_shared<CatArgs>();
  CLI::App* cmd = app.add_subcommand("cat", "Write the contents of NFS files to stdout");
  cmd->add_option("url", args->urls, "nfs://host[:port]/export/path[?options]")->required();
  AddStatsFlag(cmd, &args->stats);
  return {cmd, [args] { return RunCat(*args); }};
}

}  // namespace nfsx::app::cli
