// The lines of `nfsx ls -l` and `nfsx stat`, apart from fetching what they show.
#pragma once

#include <string>
#include <vector>

#include "nfsx/client.h"

namespace nfsx::app::cli {

struct ListedEntry {
  std::string name;
  Stat attr;
  std::string link_target;  // for symlinks
};

// One line per entry, columns aligned across the entries as ls -l does:
// "-rw-r--r-- 1 1000 1000 5 2024-05-01 13:07 name" (numeric owners: a server's
// uids mean nothing in this machine's passwd).
std::vector<std::string> FormatLongListing(const std::vector<ListedEntry>& entries);

// stat(1)'s layout for one file; `display` is how the file was named.
std::string FormatStatReport(const std::string& display, const Stat& st,
                             const std::string& link_target);

}  // namespace nfsx::app::cli
