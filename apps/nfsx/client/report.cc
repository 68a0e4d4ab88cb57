#include "apps/nfsx/client/report.h"

#include <fmt/format.h>

#include <cstdio>
#include <cstring>

#include "apps/nfsx/client/connections.h"

namespace nfsx::app::cli {

void Reporter::Error(std::string_view what, int err) { Error(what, std::strerror(err)); }

void Reporter::Error(std::string_view what, std::string_view message) {
  // stdout may hold a listing written so far; keep the two streams in order on a terminal.
  std::fflush(stdout);
  fmt::print(stderr, "{}: {}: {}\n", prefix_, what, message);
  failed_ = true;
}

void Reporter::Error(std::string_view message) {
  std::fflush(stdout);
  fmt::print(stderr, "{}: {}\n", prefix_, message);
  failed_ = true;
}

void PrintStats(const Connections& connections) {
  std::fflush(stdout);
  fmt::print(stderr, "{}", FormatNfsstat(connections.TotalStats()));
}

}  // namespace nfsx::app::cli
