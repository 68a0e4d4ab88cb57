// A minimal port mapper (RFC 1833 version 2: NULL, GETPORT, DUMP), so that
// clients which ask rpcbind for the NFS and MOUNT ports find ours. SET and
// UNSET are refused: only this server's own programs are listed.
#pragma once

#include <vector>

#include "proto/portmap_types.h"
#include "rpc/program.h"

namespace nfsx::server {

class PortmapService {
 public:
  explicit PortmapService(std::vector<portmap::mapping> mappings)
      : mappings_(std::move(mappings)) {}

  uint32_t GetPort(const portmap::mapping& m) const;
  rpc::Program MakeProgram();

 private:
  std::vector<portmap::mapping> mappings_;
};

}  // namespace nfsx::server
