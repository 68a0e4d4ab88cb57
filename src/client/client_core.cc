// ClientCore: mounting, the inode table, attributes and the consistency tracker.
#include "client/client_core.h"

#include <fmt/format.h>
#include <unistd.h>

#include "base/logging.h"
#include "base/path_components.h"
#include "proto/mount3_types.h"
#include "proto/nfsstat.h"
#include "proto/portmap_types.h"

namespace nfsx::client {

using namespace nfs3;

namespace {

// Asks the server's port mapper for a program's TCP port.
Result<uint16_t> GetPort(const std::string& host, uint32_t prog, uint32_t vers) {
  rpc::RpcClientOptions o;
  o.timeout = std::chrono::milliseconds(5000);
  o.max_retransmits = 1;
  auto pm = rpc::RpcClient::Connect(host, portmap::PMAP_PORT, o);
  if (!pm) return std::unexpected(pm.error());
  portmap::mapping m{prog, vers, portmap::IPPROTO_TCP_, 0};
  auto port = CallSync<uint32_t>(**pm, portmap::PMAP_PROGRAM, portmap::PMAP_VERS, 3, {}, m);
  if (!port) return std::unexpected(port.error());
  if (*port == 0 || *port > 65535) return Fail(EPROTONOSUPPORT);
  return static_cast<uint16_t>(*port);
}

rpc::Credential MakeCredential(const ClientOptions& o) {
  rpc::Credential c;
  c.flavor = rpc::auth_flavor::AUTH_SYS;
  char host[256] = "nfsx";
  gethostname(host, sizeof(host) - 1);
  c.machinename = host;
  c.uid = o.uid != UINT32_MAX ? o.uid : getuid();
  c.gid = o.gid != UINT32_MAX ? o.gid : getgid();
  std::vector<uint32_t> groups = o.groups;
  if (groups.empty() && o.uid == UINT32_MAX) {
    gid_t list[rpc::kMaxAuthSysGroups];
    int n = getgroups(static_cast<int>(rpc::kMaxAuthSysGroups), list);
    for (int i = 0; i < n; ++i) groups.push_back(list[i]);
  }
  c.ngids = static_cast<uint32_t>(std::min<size_t>(groups.size(), rpc::kMaxAuthSysGroups));
  for (uint32_t i = 0; i < c.ngids; ++i) c.gids[i] = groups[i];
  return c;
}

}  // namespace

Result<std::unique_ptr<ClientCore>> ClientCore::Mount(const NfsUrl& url, std::string* rest,
                                                      std::string* error) {
  std::unique_ptr<ClientCore> core(new ClientCore());
  core->options_ = url.options;
  ClientOptions& o = core->options_;
  if (o.noac) o.acregmin = o.acregmax = o.acdirmin = o.acdirmax = 0;
  core->budget_ = std::make_unique<CacheBudget>(o.cache_bytes);
  rpc::Credential cred = MakeCredential(o);
  rpc::RpcClientOptions ro;
  ro.timeout = o.timeout;
  ro.max_retransmits = o.retrans;
  ro.hard = o.recovery == ClientOptions::Recovery::kHard;
  ro.timeout_error = o.recovery == ClientOptions::Recovery::kSoft ? EIO : ETIMEDOUT;
  ro.privileged_port = o.privileged_port;
  ro.max_record = (size_t{16} << 20) + 4096;

  auto port_of = [&](uint16_t given, uint32_t prog, uint32_t vers, uint16_t fallback) {
    if (given) return given;
    auto asked = GetPort(url.host, prog, vers);
    return asked ? *asked : fallback;
  };
  uint16_t mount_port = port_of(o.mount_port, mount3::MOUNT_PROGRAM, mount3::MOUNT_V3, 20048);
  uint16_t nfs_port = port_of(o.nfs_port, NFS_PROGRAM, NFS_V3, 2049);

  // MOUNT: the longest prefix of the path that the server agrees to mount. Any
  // refusal moves on to the next shorter prefix, as libnfs does: servers answer MNT
  // of a path that is not an export in their own ways (nfsx NOENT, NFS-Ganesha
  // ACCES), so a refusal of a file's path says nothing about its export.
  // Mounting (MNT, FSINFO, GETATTR of the root) gives up, as mount(8) does,
  // rather than wait for ever for a server that is not there: only the calls
  // after it are hard.
  rpc::RpcClientOptions mount_ro = ro;
  mount_ro.hard = false;
  mount_ro.timeout_error = ETIMEDOUT;
  auto mnt = rpc::RpcClient::Connect(url.host, mount_port, mount_ro);
  if (!mnt) {
    if (error)
      *error = fmt::format("cannot reach MOUNT at {}:{}: {}", url.host, mount_port,
                           ErrorString(mnt.error()));
    return std::unexpected(mnt.error());
  }
  std::vector<std::string> parts = PathComponents(url.path);
  std::optional<nfs_fh3> root;
  mount3::mountstat3 last = mount3::MNT3ERR_NOENT;
  std::string last_path;
  size_t used = parts.size();
  for (;; --used) {
    std::string path = "/";
    for (size_t i = 0; i < used; ++i) path += (i ? "/" : "") + parts[i];
    last_path = path;
    mount3::dirpath dp{path};
    auto r =
        CallSync<mount3::mountres3>(**mnt, mount3::MOUNT_PROGRAM, mount3::MOUNT_V3, 1, cred, dp);
    if (!r) {
      if (error) *error = fmt::format("MNT {}: {}", path, ErrorString(r.error()));
      return std::unexpected(r.error());
    }
    if (r->fhs_status == mount3::MNT3_OK) {
      root = r->mountinfo.fhandle;
      break;
    }
    last = r->fhs_status;
    if (used == 0) break;
  }
  if (!root) {
    int err = ErrnoFromNfsStat(static_cast<nfsstat3>(last));
    if (error) {
      *error = last_path == url.path || url.path.empty()
                   ? fmt::format("server {} refused to mount {}: {}", url.host, last_path,
                                 ErrorString(Error{err}))
                   : fmt::format(
                         "server {} refused to mount {} or any directory above it, "
                         "last {}: {}",
                         url.host, url.path, last_path, ErrorString(Error{err}));
    }
    return Fail(err);
  }
  rest->clear();
  for (size_t i = used; i < parts.size(); ++i) *rest += (rest->empty() ? "" : "/") + parts[i];

  auto channel = Channel::Open(url.host, nfs_port, o.nconnect, mount_ro, cred);
  if (!channel) {
    if (error)
      *error = fmt::format("cannot reach NFS at {}:{}: {}", url.host, nfs_port,
                           ErrorString(channel.error()));
    return std::unexpected(channel.error());
  }
  core->channel_ = std::move(*channel);
  auto info = core->channel_->CallSync<FSINFO3res>(nfsproc3::FSINFO, FSINFO3args{*root});
  if (!info || info->status != NFS3_OK) {
    int err = !info ? info.error().code : ErrnoFromNfsStat(info->status);
    if (error) *error = fmt::format("FSINFO: {}", ErrorString(Error{err}));
    return Fail(err);
  }
  // Like Linux: the server's preference up to 1 MiB unless asked for more.
  auto pick = [](uint32_t asked, uint32_t pref, uint32_t max) {
    uint32_t v = asked ? asked : std::min<uint32_t>(pref ? pref : max, 1u << 20);
    if (max) v = std::min(v, max);
    v = std::min<uint32_t>(v, 16u << 20);
    return std::max<uint32_t>(4096, v / 4096 * 4096);
  };
  core->rsize_ = pick(o.rsize, info->resok.rtpref, info->resok.rtmax);
  core->wsize_ = pick(o.wsize, info->resok.wtpref, info->resok.wtmax);
  int64_t sent_ns = SteadyNowNs();
  auto attr = core->channel_->CallSync<GETATTR3res>(nfsproc3::GETATTR, GETATTR3args{*root});
  if (!attr || attr->status != NFS3_OK) {
    int err = !attr ? attr.error().code : ErrnoFromNfsStat(attr->status);
    if (error) *error = fmt::format("GETATTR of the export root: {}", ErrorString(Error{err}));
    return Fail(err);
  }
  core->root_ = core->Intern(*root, attr->resok.obj_attributes, sent_ns);
  core->channel_->SetRecovery(ro.hard, ro.timeout_error);  // mounted: as asked from now on
  for (int i = 0; i < 2; ++i)
    core->bg_threads_.emplace_back([c = core.get()] { c->BackgroundLoop(); });
  return core;
}

ClientCore::~ClientCore() {
  {
    std::lock_guard lock(bg_mu_);
    bg_stop_ = true;
  }
  bg_cv_.notify_all();
  for (auto& t : bg_threads_) t.join();
  // Read-ahead nobody waits for, and completions that woke their waiter but
  // still hold an InodePtr, end here rather than on a reader thread after the
  // members they use are gone.
  Shutdown();
}

void ClientCore::Shutdown() {
  if (channel_) channel_->Shutdown();  // null when Mount failed before connecting
}

InodePtr ClientCore::Intern(const nfs_fh3& fh, const fattr3& attr, int64_t sent_ns) {
  std::string key(reinterpret_cast<const char*>(fh.data.data()), fh.size);
  InodePtr ino;
  bool fresh = false;
  {
    std::lock_guard lock(inodes_mu_);
    auto& slot = inodes_[key];
    if (!slot) {
      slot = std::make_shared<Inode>(fh, attr, budget_.get());
      fresh = true;
    }
    ino = slot;
    if (fresh && inodes_.size() > kMaxIdleInodes) EvictIdleInodesLocked();
  }
  if (fresh) {
    std::lock_guard lock(ino->mu);
    double lo = attr.type == NF3DIR ? options_.acdirmin : options_.acregmin;
    double hi = attr.type == NF3DIR ? options_.acdirmax : options_.acregmax;
    ino->RefreshTimer(true, lo, hi, sent_ns);
  } else {
    // Attributes from a LOOKUP or READDIRPLUS: an observation like any other,
    // judged by its ctime against what we know (the call was sent before we knew
    // which file it would name, so nothing was noted then).
    EndCall(ino, ConsistencyTracker::Late(sent_ns), std::nullopt, attr);
  }
  return ino;
}

void ClientCore::EvictIdleInodesLocked() {
  // Idle: referenced only by the table (no open file, no FUSE lookup, no call in
  // flight) and holding nothing the server has not committed.
  size_t target = inodes_.size() - kMaxIdleInodes / 2;
  for (auto it = inodes_.begin(); it != inodes_.end() && target > 0;) {
    Inode& ino = *it->second;
    bool idle = it->second.use_count() == 1 && ino.dirty_bytes.load() == 0;
    if (idle) {
      std::lock_guard lock(ino.wb_mu);
      idle = ino.dirty_pages.empty() && ino.unstable.empty() && ino.wb_error == 0;
    }
    if (idle) {
      it = inodes_.erase(it);
      --target;
    } else {
      ++it;
    }
  }
}

Stat ClientCore::ToStat(const fattr3& f) {
  Stat s;
  s.type = static_cast<FileType>(f.type);
  s.mode = f.mode & 07777;
  s.nlink = f.nlink;
  s.uid = f.uid;
  s.gid = f.gid;
  s.size = f.size;
  s.used = f.used;
  s.rdev_major = f.rdev.specdata1;
  s.rdev_minor = f.rdev.specdata2;
  s.fsid = f.fsid;
  s.fileid = f.fileid;
  s.atime = {f.atime.seconds, f.atime.nseconds};
  s.mtime = {f.mtime.seconds, f.mtime.nseconds};
  s.ctime = {f.ctime.seconds, f.ctime.nseconds};
  return s;
}

ConsistencyTracker::Token ClientCore::BeginCall(const InodePtr& ino,
                                                ConsistencyTracker::Kind kind) {
  std::lock_guard lock(ino->mu);
  auto token = ino->tracker.Begin(kind);
  token.sent_ns = SteadyNowNs();
  return token;
}

void ClientCore::EndCall(const InodePtr& ino, const ConsistencyTracker::Token& token,
                         const pre_op_attr& pre, const post_op_attr& post) {
  ConsistencyTracker::Verdict v;
  {
    std::lock_guard lock(ino->mu);
    nfstime3 before = ino->tracker.attr().ctime;
    v = ino->tracker.End(token, pre, post);
    ino->PublishAttr();
    // With the attributes that show the change, under the same lock: a reader
    // that sees them (PrepareRead) also sees the cache marked stale.
    if (v == ConsistencyTracker::Verdict::kForeignChange) ino->MarkDataStale();
    if (post) {
      bool changed = ino->tracker.attr().ctime != before;
      bool dir = ino->type() == NF3DIR;
      ino->RefreshTimer(changed, dir ? options_.acdirmin : options_.acregmin,
                        dir ? options_.acdirmax : options_.acregmax, token.sent_ns);
      ino->ClearInvalid(kInvalidAttr);
      if (changed) ino->access.clear();
    }
  }
  if (v == ConsistencyTracker::Verdict::kForeignChange) InvalidateData(ino);
}

void ClientCore::EndDirCall(const InodePtr& dir, const ConsistencyTracker::Token& token,
                            const wcc_data& wcc) {
  EndCall(dir, token, wcc.before, wcc.after);
}

void ClientCore::InvalidateData(const InodePtr& ino) {
  log::Debug("client: file {} changed on the server: dropping its cached data", ino->fileid());
  channel_->AddInvalidation();
  if (on_invalidate_) on_invalidate_(ino);
}

Result<void> ClientCore::Revalidate(const InodePtr& ino) {
  auto token = BeginCall(ino, ConsistencyTracker::Kind::kObserve);
  auto r = channel_->CallSync<GETATTR3res>(nfsproc3::GETATTR, GETATTR3args{ino->fh()});
  if (!r) {
    EndCall(ino, token, std::nullopt, std::nullopt);
    return std::unexpected(r.error());
  }
  if (r->status != NFS3_OK) {
    EndCall(ino, token, std::nullopt, std::nullopt);
    return Fail(ErrnoFromNfsStat(r->status));
  }
  EndCall(ino, token, std::nullopt, r->resok.obj_attributes);
  return {};
}

Result<Stat> ClientCore::GetAttr(const InodePtr& ino, bool force) {
  if (force || !ino->AttrFresh(SteadyNowNs())) {
    if (auto r = Revalidate(ino); !r) return std::unexpected(r.error());
  }
  Stat s;
  {
    std::lock_guard lock(ino->mu);
    s = ToStat(ino->tracker.attr());
  }
  if (ino->type() == NF3REG) s.size = ino->Size();
  return s;
}

Result<uint32_t> ClientCore::Access(const InodePtr& ino, uint32_t mask) {
  uint64_t who = IdentityKey(ActingAs::Or(channel_->cred()));
  if (ino->AttrFresh(SteadyNowNs()) && !(ino->validity() & kInvalidAccess)) {
    std::lock_guard lock(ino->mu);
    auto it = ino->access.find(who);
    if (it != ino->access.end()) return it->second & mask;
  }
  constexpr uint32_t kAll = ACCESS3_READ | ACCESS3_LOOKUP | ACCESS3_MODIFY | ACCESS3_EXTEND |
                            ACCESS3_DELETE | ACCESS3_EXECUTE;
  auto token = BeginCall(ino, ConsistencyTracker::Kind::kObserve);
  auto r = channel_->CallSync<ACCESS3res>(nfsproc3::ACCESS, ACCESS3args{ino->fh(), kAll});
  if (!r || r->status != NFS3_OK) {
    EndCall(ino, token, std::nullopt, std::nullopt);
    return Fail(!r ? r.error().code : ErrnoFromNfsStat(r->status));
  }
  EndCall(ino, token, std::nullopt, r->resok.obj_attributes);
  std::lock_guard lock(ino->mu);
  ino->access[who] = r->resok.access;
  if (ino->validity() & kInvalidAccess) ino->ClearInvalid(kInvalidAccess);
  return r->resok.access & mask;
}

Result<Stat> ClientCore::SetAttr(const InodePtr& ino, const SetAttrs& a) {
  if (a.size) {
    if (auto t = Truncate(ino, *a.size); !t) return std::unexpected(t.error());
  }
  sattr3 s;
  s.mode = a.mode;
  s.uid = a.uid;
  s.gid = a.gid;
  auto time = [](SetAttrs::Time how, const Timestamp& t) {
    set_time st;
    if (how == SetAttrs::Time::kNow) st.set_it = SET_TO_SERVER_TIME;
    if (how == SetAttrs::Time::kGiven) {
      st.set_it = SET_TO_CLIENT_TIME;
      st.time = {static_cast<uint32_t>(t.sec), t.nsec};
    }
    return st;
  };
  s.atime = time(a.atime_how, a.atime);
  s.mtime = time(a.mtime_how, a.mtime);
  bool any =
      s.mode || s.uid || s.gid || s.atime.set_it != DONT_CHANGE || s.mtime.set_it != DONT_CHANGE;
  if (any) {
    // Times set by the client must not be overtaken by our own unsent writes.
    if (s.mtime.set_it != DONT_CHANGE) {
      if (auto f = Flush(ino, false); !f) return std::unexpected(f.error());
    }
    auto token = BeginCall(ino, ConsistencyTracker::Kind::kModify);
    SETATTR3args args{ino->fh(), s, std::nullopt};
    auto r = channel_->CallSync<SETATTR3res>(nfsproc3::SETATTR, args);
    if (!r) {
      EndCall(ino, token, std::nullopt, std::nullopt);
      return std::unexpected(r.error());
    }
    const wcc_data& wcc = r->status == NFS3_OK ? r->resok.obj_wcc : r->resfail.obj_wcc;
    EndCall(ino, token, wcc.before, wcc.after);
    if (r->status != NFS3_OK) return Fail(ErrnoFromNfsStat(r->status));
    std::lock_guard lock(ino->mu);
    ino->access.clear();
  }
  return GetAttr(ino);
}

}  // namespace nfsx::client
