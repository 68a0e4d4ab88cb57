// LocalFs: a Filesystem over a local POSIX directory tree.
#pragma once

#include <memory>
#include <string>

#include "vfs/vfs.h"

namespace nfsx::vfs {

// Opens `root` (an absolute or relative directory path) as a filesystem.
Result<std::unique_ptr<Filesystem>> MakeLocalFs(const std::string& root);

}  // namespace nfsx::vfs
