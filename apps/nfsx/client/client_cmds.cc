#include "apps/nfsx/commands.h"

namespace nfsx::app {

Runner AddClientCommands(CLI::App&) {
  return [] { return -1; };  // not built yet
}

}  // namespace nfsx::app
