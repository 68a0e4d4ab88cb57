// Registers the client commands with the nfsx binary.
#include <vector>

#include "apps/nfsx/client/client_commands.h"
#include "apps/nfsx/commands.h"

namespace nfsx::app {

namespace cli {

void AddStatsFlag(CLI::App* cmd, bool* stats) {
  cmd->add_flag("--stats", *stats,
                "Afterwards, print the RPCs sent, per NFS procedure, as nfsstat -c does "
                "(to stderr)");
}

}  // namespace cli

Runner AddClientCommands(CLI::App& app) {
  std::vector<cli::ClientCommand> commands = {
      cli::AddLs(app), cli::AddCat(app),   cli::AddCp(app), cli::AddStat(app),
      cli::AddRm(app), cli::AddMkdir(app), cli::AddMv(app)};
  return [commands] {
    for (const cli::ClientCommand& c : commands) {
      if (c.app->parsed()) return c.run();
    }
    return -1;
  };
}

}  // namespace nfsx::app
