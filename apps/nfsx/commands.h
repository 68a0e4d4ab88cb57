// The nfsx subcommands. Each registers its options on the CLI11 app and
// returns the function that runs it.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

namespace nfsx::app {

using Runner = std::function<int()>;

Runner AddServe(CLI::App& app);

}  // namespace nfsx::app
