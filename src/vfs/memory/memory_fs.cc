#include "vfs/memory/memory_fs.h"

namespace nfsx::vfs {

std::unique_ptr<Filesystem> MakeMemoryFs() { return nullptr; }

}  // namespace nfsx::vfs
