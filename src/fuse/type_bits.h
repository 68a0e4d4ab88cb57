// The S_IFMT bits of a file type, for struct stat and directory entries.
#pragma once

#include <sys/stat.h>

#include "nfsx/client.h"

namespace nfsx::fuse {

inline mode_t TypeBits(FileType t) {
  switch (t) {
    case FileType::kRegular:
      return S_IFREG;
    case FileType::kDirectory:
      return S_IFDIR;
    case FileType::kBlockDevice:
      return S_IFBLK;
    case FileType::kCharDevice:
      return S_IFCHR;
    case FileType::kSymlink:
      return S_IFLNK;
    case FileType::kSocket:
      return S_IFSOCK;
    case FileType::kFifo:
      return S_IFIFO;
  }
  return S_IFREG;
}

}  // namespace nfsx::fuse
