// Turns `cp` arguments, local paths or nfs:// URLs, into Locations in trees, sharing one
// tree (and one Client) per server and export.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "apps/nfsx/client/connections.h"
#include "apps/nfsx/client/tree.h"

namespace nfsx::app::cli {

// The name a copy of `arg` gets inside a target directory: its last path component
// ("" for "/" or a URL of a server's root).
std::string SourceName(std::string_view arg);

class Endpoints {
 public:
  explicit Endpoints(Connections* connections) : connections_(connections) {}

  // *error is the message when this fails.
  Result<Location> Resolve(std::string_view arg, std::string* error);

 private:
  Connections* connections_;
  std::unique_ptr<Tree> local_;
  std::map<Client*, std::unique_ptr<Tree>> remote_;
};

}  // namespace nfsx::app::cli
