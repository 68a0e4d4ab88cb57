// An export while the server runs: its configuration and its open filesystem.
#pragma once

#include <array>
#include <memory>
#include <vector>

#include "server/file_state.h"
#include "vfs/vfs.h"

namespace nfsx::server {

struct Export;

struct ExportRuntime {
  const Export* config = nullptr;  // owned by the server's ExportTable
  uint16_t id = 0;
  std::unique_ptr<vfs::Filesystem> fs;
  FileStatePtr root;  // pinned: never evicted
  // Some client rule names hosts, so matching a caller needs its name.
  bool names_clients = false;
  // By rule index: the addresses a rule naming one host resolved to at AddExport
  // (ExportTable::Match).
  std::vector<std::vector<std::array<uint8_t, 16>>> resolved_rules;
};

}  // namespace nfsx::server
