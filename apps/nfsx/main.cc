// nfsx: one binary for the server, the client commands, the mount and the benchmarks.
#include <malloc.h>

#include <CLI/CLI.hpp>
#include <cstdio>

#include "apps/nfsx/commands.h"
#include "base/logging.h"

int main(int argc, char** argv) {
  // Transfers allocate and free 256 KiB..1 MiB buffers at a high rate (O_DIRECT data
  // kept until COMMIT, reply records). By default glibc gives such memory back to the
  // kernel at once, and faulting it in again costs ~9 us per 4 KiB page on a VM (a
  // quarter of all cycles of a 1 MiB iozone run). Keep it for the next transfer:
  // 12 O_DIRECT writers reread 1.3-2.7x and rewrite 1.3x faster with this.
  mallopt(M_MMAP_THRESHOLD, 64 << 20);
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
  CLI::App app{"nfsx: a user-space NFSv3 server, client, FUSE mount and benchmark"};
  app.require_subcommand(1);
  std::string level;
  app.add_option("--log-level", level, "trace, debug, info (default), warn, error, off")
      ->envname("NFSX_LOG_LEVEL");
  // A runner returns -1 when none of its subcommands was the one parsed.
  std::vector<nfsx::app::Runner> runners = {nfsx::app::AddServe(app),
                                            nfsx::app::AddClientCommands(app),
                                            nfsx::app::AddMount(app), nfsx::app::AddBench(app)};
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
