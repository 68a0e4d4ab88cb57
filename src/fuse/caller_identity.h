// CallerIdentity: the AUTH_SYS identity of the process behind a FUSE request.
//
// The kernel NFS client sends each call with its caller's uid, gid and groups;
// a mount shared by several users does the same, so the server decides what each
// may do and new files belong to whoever created them. The kernel passes uid, gid
// and pid with a request; the groups are read from /proc, at most once a second
// per process.
//
// Thread-safe.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "fuse/fuse_api.h"
#include "rpc/message.h"

namespace nfsx::fuse {

class CallerIdentity {
 public:
  // `own` is the mount's identity: its machine name and flavor are kept.
  explicit CallerIdentity(rpc::Credential own) : own_(std::move(own)) {}

  rpc::Credential For(fuse_req_t req);

 private:
  struct Groups {
    int64_t read_at_ns = 0;
    std::vector<uint32_t> gids;
  };
  std::vector<uint32_t> GroupsOf(fuse_req_t req, pid_t pid);

  rpc::Credential own_;
  std::mutex mu_;
  std::unordered_map<pid_t, Groups> groups_;  // GUARDED_BY(mu_)
};

}  // namespace nfsx::fuse
