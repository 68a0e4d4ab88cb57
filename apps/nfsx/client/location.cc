#include "apps/nfsx/client/nfs_url.h"
#include "apps/nfsx/client/path_util.h"
#include "apps/nfsx/client/tree.h"

namespace nfsx::app::cli {

Location Location::Child(std::string_view name) const {
  std::string child_display = JoinPath(display, name);
  if (auto url = SplitNfsUrl(display)) child_display = ChildUrl(*url, name);
  return Location{tree, JoinPath(path, name), std::move(child_display)};
}

}  // namespace nfsx::app::cli
