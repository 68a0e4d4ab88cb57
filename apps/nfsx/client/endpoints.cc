#include "apps/nfsx/client/endpoints.h"

#include "apps/nfsx/client/nfs_url.h"
#include "apps/nfsx/client/path_util.h"

namespace nfsx::app::cli {

std::string SourceName(std::string_view arg) {
  if (auto url = SplitNfsUrl(arg)) return BaseName(url->path);
  return BaseName(arg);
}

Result<Location> Endpoints::Resolve(std::string_view arg, std::string* error) {
  if (!IsNfsUrl(arg)) {
    if (!local_) local_ = MakeLocalTree();
    return Location{local_.get(), std::string(arg), std::string(arg)};
  }
  auto remote = connections_->Resolve(arg, error);
  if (!remote) return std::unexpected(remote.error());
  std::unique_ptr<Tree>& tree = remote_[remote->client];
  if (!tree) tree = MakeNfsTree(remote->client, remote->url.ServerKey());
  return Location{tree.get(), remote->path, std::string(arg)};
}

}  // namespace nfsx::app::cli
