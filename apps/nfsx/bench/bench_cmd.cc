#include "apps/nfsx/commands.h"

namespace nfsx::app {

Runner AddBench(CLI::App&) {
  return [] { return -1; };  // not built yet
}

}  // namespace nfsx::app
