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
  // The MOUNT list (DUMP) holds at most `max_mounts` entries: it only informs
  // (showmount), so past that MNT still succeeds and is not listed.
  MountService(Core& core, const ExportTable& exports, size_t max_mounts = 4096)
      : core_(core), exports_(exports), max_mounts_(max_mounts) {}

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
  const size_t max_mounts_;
  mutable std::mutex mu_;
  // (host, canonical path): "/a//b/" and "/a/b" are one entry, so UMNT with any
  // spelling removes what MNT added.
  std::set<std::pair<std::string, std::string>> mounts_;  // GUARDED_BY(mu_)
  bool warned_full_ = false;                              // GUARDED_BY(mu_)
};

}  // namespace nfsx::server
