// The client commands (ls cat cp stat rm mkdir mv): each file registers one of them.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace nfsx::app::cli {

struct ClientCommand {
  CLI::App* app;             // the subcommand: parsed() says whether it is the one to run
  std::function<int()> run;  // its exit status
};

ClientCommand AddLs(CLI::App& app);
ClientCommand AddCat(CLI::App& app);
ClientCommand AddCp(CLI::App& app);
ClientCommand AddStat(CLI::App& app);
ClientCommand AddRm(CLI::App& app);
ClientCommand AddMkdir(CLI::App& app);
ClientCommand AddMv(CLI::App& app);

// --stats, common to all of them.
void AddStatsFlag(CLI::App* cmd, bool* stats);

}  // namespace nfsx::app::cli
