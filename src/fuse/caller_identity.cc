#include "fuse/caller_identity.h"

#include <algorithm>
#include <chrono>

namespace nfsx::fuse {

namespace {
constexpr int64_t kGroupsTtlNs = 1'000'000'000;
constexpr size_t kMaxProcesses = 4096;

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

std::vector<uint32_t> CallerIdentity::GroupsOf(fuse_req_t req, pid_t pid) {
  int64_t now = NowNs();
  {
    std::lock_guard lock(mu_);
    auto it = groups_.find(pid);
    if (it != groups_.end() && now - it->second.read_at_ns < kGroupsTtlNs) return it->second.gids;
  }
  gid_t list[rpc::kMaxAuthSysGroups];
  int n = fuse_req_getgroups(req, static_cast<int>(rpc::kMaxAuthSysGroups), list);
  // A process that has gone, or more groups than AUTH_SYS carries: the first 16,
  // as the kernel NFS client sends.
  n = std::clamp(n, 0, static_cast<int>(rpc::kMaxAuthSysGroups));
  std::vector<uint32_t> gids(list, list + n);
  std::lock_guard lock(mu_);
  if (groups_.size() >= kMaxProcesses) groups_.clear();
  groups_[pid] = {now, gids};
  return gids;
}

rpc::Credential CallerIdentity::For(fuse_req_t req) {
  const fuse_ctx* ctx = fuse_req_ctx(req);
  rpc::Credential c = own_;
  c.uid = ctx->uid;
  c.gid = ctx->gid;
  std::vector<uint32_t> gids = GroupsOf(req, ctx->pid);
  c.ngids = static_cast<uint32_t>(gids.size());
  std::copy(gids.begin(), gids.end(), c.gids.begin());
  return c;
}

}  // namespace nfsx::fuse
