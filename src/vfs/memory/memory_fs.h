// MemoryFs: a Filesystem that keeps everything in memory (tests, benchmarks).
#pragma once

#include <memory>

#include "vfs/vfs.h"

namespace nfsx::vfs {

std::unique_ptr<Filesystem> MakeMemoryFs();

}  // namespace nfsx::vfs
