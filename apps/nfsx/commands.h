// The nfsx subcommands. Each registers its options on the CLI11 app and
// returns the function that runs it.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

namespace nfsx::app {

using Runner = std::function<int()>;

// Each adds one or more subcommands; the runner runs whichever of them was parsed.
Runner AddServe(CLI::App& app);
Runner AddClientCommands(CLI::App& app);  // ls cat cp stat rm mkdir mv (client_cmds.cc)
Runner AddMount(CLI::App& app);           // mount, umount, stat of a mount (mount_cmd.cc)
Runner AddBench(CLI::App& app);           // bench (bench_cmd.cc)

}  // namespace nfsx::app
