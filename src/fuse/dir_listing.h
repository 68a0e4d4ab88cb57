// A directory's entries, read in full when the kernel starts (or rewinds) a
// listing, so that the offsets handed to the kernel are indexes into one
// snapshot: stable for the life of the open directory, whatever happens to the
// directory meanwhile, and with no entry listed twice.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "client/client_core.h"

namespace nfsx::fuse {

struct DirItem {
  std::string name;
  uint64_t fileid = 0;
  FileType type = FileType::kRegular;
  bool type_known = false;
  client::InodePtr ino;  // null when the server sent no handle or attributes for it
};

// Reads `dir` with READDIRPLUS, interning every child that came with a handle
// and attributes (so that readdirplus can hand the kernel complete entries).
// Starts with "." and "..", whatever the server sent.
//
// ClientCore::ReadDir returns no child handles, so this pages READDIRPLUS
// itself over the client's channel; the directory's own attributes in those
// replies are not fed to its consistency tracker.
Result<std::vector<DirItem>> ListDirectory(client::ClientCore& core, const client::InodePtr& dir);

}  // namespace nfsx::fuse
