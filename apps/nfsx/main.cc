// nfsx: one binary for the server, the client commands, the mount and the benchmarks.
#include <CLI/CLI.hpp>

#include <cstdio>

#include "apps/nfsx/commands.h"
#include "base/logging.h"

int main(int argc, char** argv) {
  CLI::App app{"nfsx: a user-space NFSv3 server, client, FUSE mount and benchmark"};
  app.require_subcommand(1);
  std::string level;
  app.add_option("--log-level", level, "trace, debug, info (default), warn, error, off")
      ->envname("NFSX_LOG_LEVEL");
  // A runner returns -1 when none of its subcommands was the one parsed.
  std::vector<nfsx::app::Runner> runners = {
      nfsx::app::AddServe(app), nfsx::app::AddClientCommands(app), nfsx::app::AddMount(app),
      nfsx::app::AddBench(app)};
  CLI11_PARSE(app, argc, argv);
  if (!level.empty()) {
    nfsx::log::Level l;
    if (!nfsx::log::ParseLevel(level, &l)) {
      std::fprintf(stderr, "nfsx: unknown log level '%s'\n", level.c_str());
      return 2;
    }
    nfsx::log::SetLevel(l);
  }
  for (auto& run : runners) {
    if (int rc = run(); rc >= 0) return rc;
  }
  return 2;
}
