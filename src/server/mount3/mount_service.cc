#include "server/mount3/mount_service.h"

#include "base/logging.h"
#include "base/path_components.h"
#include "proto/nfsstat.h"

namespace nfsx::server {

using namespace mount3;

namespace {

std::string CanonicalPath(const std::vector<std::string>& components) {
  std::string out;
  for (const std::string& c : components) out += "/" + c;
  return out.empty() ? "/" : out;
}

}  // namespace

mountres3 MountService::Mnt(const std::string& path, const rpc::CallContext& ctx) {
  mountres3 res;
  auto wanted = PathComponents(path);
  // The export whose path is the longest prefix of the requested path.
  const Export* best = nullptr;
  size_t best_len = 0;
  for (const Export& e : exports_.exports()) {
    auto parts = PathComponents(e.path);
    if (parts.size() > wanted.size() || (best && parts.size() < best_len)) continue;
    if (std::equal(parts.begin(), parts.end(), wanted.begin())) {
      best = &e;
      best_len = parts.size();
    }
  }
  if (!best) {
    log::Info("MNT {} from {}: no such export", path, ctx.peer.host);
    res.fhs_status = MNT3ERR_NOENT;
    return res;
  }
  ExportRuntime* exp = core_.FindExport(best->export_id);
  auto caller = exp ? core_.CallerFor(*exp, ctx) : std::unexpected(nfs3::NFS3ERR_ACCES);
  if (!caller) {
    log::Info("MNT {} from {}:{}: refused", path, ctx.peer.host, ctx.peer.port);
    res.fhs_status = MNT3ERR_ACCES;
    return res;
  }
  FileStatePtr dir = exp->root;
  for (size_t i = best_len; i < wanted.size(); ++i) {
    const std::string& name = wanted[i];
    auto attr = core_.Attr(*dir);
    if (!attr) {
      res.fhs_status = MountStatFromErrno(attr.error().code);
      return res;
    }
    if (attr->type != vfs::FileType::kDirectory) {
      res.fhs_status = MNT3ERR_NOTDIR;
      return res;
    }
    if (!vfs::ValidName(name) || !Permits(caller->who, *attr, kExec)) {
      res.fhs_status = MNT3ERR_ACCES;
      return res;
    }
    auto node = exp->fs->Lookup(dir->node(), name);
    if (!node) {
      res.fhs_status = MountStatFromErrno(node.error().code);
      return res;
    }
    dir = core_.Intern(*exp, std::move(*node));
    if (!dir) {
      res.fhs_status = MNT3ERR_SERVERFAULT;
      return res;
    }
  }
  if (dir->node().type() != vfs::FileType::kDirectory) {
    res.fhs_status = MNT3ERR_NOTDIR;
    return res;
  }
  res.mountinfo.fhandle = dir->fh();
  res.mountinfo.auth_flavors = {static_cast<uint32_t>(rpc::auth_flavor::AUTH_SYS),
                                static_cast<uint32_t>(rpc::auth_flavor::AUTH_NONE)};
  {
    std::lock_guard lock(mu_);
    if (mounts_.size() < max_mounts_) {
      mounts_.emplace(ctx.peer.host, CanonicalPath(wanted));
    } else if (!mounts_.contains({ctx.peer.host, CanonicalPath(wanted)}) && !warned_full_) {
      warned_full_ = true;
      log::Warn("MOUNT list full ({} entries): further mounts are not listed by DUMP", max_mounts_);
    }
  }
  log::Info("MNT {} from {}:{}", path, ctx.peer.host, ctx.peer.port);
  return res;
}

mountlist MountService::Dump() const {
  mountlist list;
  std::lock_guard lock(mu_);
  for (const auto& [host, path] : mounts_) {
    list.entries.push_back({{host.substr(0, MNTNAMLEN)}, {path}});
  }
  return list;
}

void MountService::Umnt(const std::string& path, const rpc::CallContext& ctx) {
  std::lock_guard lock(mu_);
  mounts_.erase({ctx.peer.host, CanonicalPath(PathComponents(path))});
}

void MountService::Umntall(const rpc::CallContext& ctx) {
  std::lock_guard lock(mu_);
  std::erase_if(mounts_, [&](const auto& m) { return m.first == ctx.peer.host; });
}

exports MountService::ListExports() const {
  exports list;
  for (const Export& e : exports_.exports()) {
    exportnode node;
    node.ex_dir.value = e.path;
    for (const ClientRule& c : e.clients) node.ex_groups.push_back({c.spec});
    list.entries.push_back(std::move(node));
  }
  return list;
}

rpc::Program MountService::MakeProgram() {
  using rpc::accept_stat;
  using D = xdr::XdrDecoder;
  using E = xdr::XdrEncoder;
  rpc::Program p{"mount", MOUNT_PROGRAM, MOUNT_V3, {}, {}};
  auto& v = p.procs;
  v.emplace_back("null", [](rpc::CallContext&, D&, E&) { return accept_stat::SUCCESS; });
  v.emplace_back("mnt", [this](rpc::CallContext& ctx, D& d, E& e) {
    dirpath path;
    d(path);
    if (!d.ok()) return accept_stat::GARBAGE_ARGS;
    e(Mnt(path.value, ctx));
    return accept_stat::SUCCESS;
  });
  v.emplace_back("dump", [this](rpc::CallContext&, D&, E& e) {
    e(Dump());
    return accept_stat::SUCCESS;
  });
  v.emplace_back("umnt", [this](rpc::CallContext& ctx, D& d, E&) {
    dirpath path;
    d(path);
    if (!d.ok()) return accept_stat::GARBAGE_ARGS;
    Umnt(path.value, ctx);
    return accept_stat::SUCCESS;
  });
  v.emplace_back("umntall", [this](rpc::CallContext& ctx, D&, E&) {
    Umntall(ctx);
    return accept_stat::SUCCESS;
  });
  v.emplace_back("export", [this](rpc::CallContext&, D&, E& e) {
    e(ListExports());
    return accept_stat::SUCCESS;
  });
  // A client's first call may wait for DNS (host-name export rules).
  p.blocks_for_peer = [this](const rpc::Peer& peer) { return core_.NeedsNameLookup(peer); };
  return p;
}

}  // namespace nfsx::server
