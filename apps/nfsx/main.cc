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
  std::vector<std::pair<CLI::App*, nfsx::app::Runner>> commands;
  auto add = [&](nfsx::app::Runner (*adder)(CLI::App&)) {
    size_t before = app.get_subcommands({}).size();
    nfsx::app::Runner r = adder(app);
    commands.emplace_back(app.get_subcommands({})[before], std::move(r));
  };
  add(&nfsx::app::AddServe);
  CLI11_PARSE(app, argc, argv);
  if (!level.empty()) {
    nfsx::log::Level l;
    if (!nfsx::log::ParseLevel(level, &l)) {
      std::fprintf(stderr, "nfsx: unknown log level '%s'\n", level.c_str());
      return 2;
    }
    nfsx::log::SetLevel(l);
  }
  for (auto& [cmd, run] : commands) {
    if (cmd->parsed()) return run();
  }
  return 2;
}
