// The MOUNT program, version 3 (RFC 1813 Appendix I): how clients get the root
// file handle of an export, and how showmount-style tools list exports.
//
// MNT also accepts a directory below an export (as Linux's mountd does): the
// path is resolved inside the export one component at a time, never following
// symlinks and never leaving the export.
#pragma once

#include <mutex>
#include <set>
#include <string>
#include <utility>

#include "proto/mount3_types.h"
#include "rpc/program.h"
#include "server/core.h"

namespace nfsx::server {

class MountService {
 public:
  MountService(Core& core, const ExportTable& exports) : core_(core), exports_(exports) {}

  // The program table; `this` must outlive it.
  rpc::Program MakeProgram();

  mount3::mountres3 Mnt(const std::string& path, const rpc::CallContext& ctx);
  mount3::mountlist Dump() const;
  void Umnt(const std::string& path, const rpc::CallContext& ctx);
  void Umntall(const rpc::CallContext& ctx);
  mount3::exports ListExports() const;

 private:
  Core& core_;
  const ExportTable& exports_;
  mutable std::mutex mu_;
  std::set<std::pair<std::string, std::string>> mounts_;  // GUARDED_BY(mu_): (host, path)
};

}  // namespace nfsx::server
