#include "vfs/vfs.h"

namespace nfsx::vfs {

bool ValidName(std::string_view name) {
  if (name.empty() || name == "." || name == "..") return false;
  return name.find_first_of(std::string_view("/\0", 2)) == std::string_view::npos;
}

}  // namespace nfsx::vfs
