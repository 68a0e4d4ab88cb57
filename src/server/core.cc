#include "server/core.h"

#include <thread>

#include "base/logging.h"
#include "proto/nfsstat.h"

namespace nfsx::server {

using namespace nfs3;

Core::Core(const HandleKey& key, const ExportTable* table, CoreOptions options)
    : options_(options),
      table_(table),
      codec_(key),
      open_files_(&verifiers_, options.open_files),
      files_(options.file_table_capacity),
      client_names_(options.resolver.reverse ? options.resolver : SystemResolver(),
                    options.client_names) {}

Core::~Core() {
  for (auto& e : exports_) e->root.reset();
  open_files_.CloseAll();
}

Result<void> Core::AddExport(const Export& config, std::unique_ptr<vfs::Filesystem> fs) {
  auto rt = std::make_unique<ExportRuntime>();
  rt->config = &config;
  rt->id = config.export_id;
  rt->fs = std::move(fs);
  rt->root = Intern(*rt, rt->fs->Root());
  if (!rt->root) return Fail(EOVERFLOW);
  rt->names_clients = config.HasNameRules();
  ResolveHostRules(*rt);
  has_name_rules_ = has_name_rules_ || rt->names_clients;
  exports_.push_back(std::move(rt));
  return {};
}

// As exportfs does when it exports: a rule naming one host is looked up once, so an
// abbreviated name (`build`, completed by the resolver's search domains) admits
// that host although its verified name is `build.lab.example`. Blocking DNS, but
// only while the server is set up, never on a call's path.
void Core::ResolveHostRules(ExportRuntime& rt) {
  const auto& rules = rt.config->clients;
  rt.resolved_rules.assign(rules.size(), {});
  NameResolver resolver = options_.resolver.forward ? options_.resolver : SystemResolver();
  for (size_t i = 0; i < rules.size(); ++i) {
    if (rules[i].kind != ClientRule::Kind::kHost || rules[i].hostname.empty()) continue;
    ForwardAnswer a = resolver.forward(rules[i].hostname);
    if (a.failed || a.addresses.empty()) {
      log::Warn("exports: {} does not resolve: it admits only a client whose verified name is {}",
                rules[i].hostname, rules[i].hostname);
    }
    rt.resolved_rules[i] = std::move(a.addresses);
  }
}

ExportRuntime* Core::FindExport(uint16_t id) {
  for (auto& e : exports_) {
    if (e->id == id) return e.get();
  }
  return nullptr;
}

FileStatePtr Core::Intern(ExportRuntime& exp, vfs::NodePtr node) {
  std::array<std::byte, vfs::kMaxBackendHandle> raw;
  size_t n = exp.fs->EncodeHandle(*node, raw);
  if (n == 0 || n > raw.size()) return nullptr;
  nfs_fh3 fh = codec_.Make(exp.id, std::span<const std::byte>(raw.data(), n));
  std::string_view key(reinterpret_cast<const char*>(fh.data.data()), fh.size);
  if (auto hit = files_.Find(key)) return hit;
  return files_.Insert(std::make_shared<FileState>(&exp, std::move(node), fh));
}

std::expected<Caller, nfsstat3> Core::CallerFor(ExportRuntime& exp, const rpc::CallContext& ctx) {
  const auto* addr = reinterpret_cast<const sockaddr*>(&ctx.peer.addr);
  const ExportOptions* opts = nullptr;
  if (exp.config) {
    std::string name = exp.names_clients ? client_names_.NameOf(addr) : std::string();
    opts = table_->Match(*exp.config, addr, name, &exp.resolved_rules);
  }
  if (!opts) return std::unexpected(NFS3ERR_ACCES);
  if (opts->secure && ctx.peer.port >= 1024) {
    log::Debug("{}:{}: refused: export requires a privileged source port", ctx.peer.host,
               ctx.peer.port);
    return std::unexpected(NFS3ERR_PERM);
  }
  return Caller{&exp, opts, IdentityFor(ctx.header.cred, *opts)};
}

std::expected<Resolved, nfsstat3> Core::Resolve(const nfs_fh3& fh, const rpc::CallContext& ctx) {
  std::string_view key(reinterpret_cast<const char*>(fh.data.data()), fh.size);
  FileStatePtr file = files_.Find(key);
  if (!file) {
    DecodedHandle decoded;
    if (codec_.Parse(fh.view(), &decoded) != HandleCodec::Check::kOk) {
      log::Debug("{}: bad file handle ({} bytes)", ctx.peer.host, fh.size);
      return std::unexpected(NFS3ERR_BADHANDLE);
    }
    ExportRuntime* exp = FindExport(decoded.export_id);
    if (!exp) return std::unexpected(NFS3ERR_STALE);  // an export that is gone
    auto node = exp->fs->DecodeHandle(decoded.backend);
    if (!node) {
      return std::unexpected(node.error().code == EBADF ? NFS3ERR_BADHANDLE : NFS3ERR_STALE);
    }
    file = files_.Insert(std::make_shared<FileState>(exp, std::move(*node), fh));
  }
  auto caller = CallerFor(file->exp(), ctx);
  if (!caller) return std::unexpected(caller.error());
  return Resolved{std::move(file), *caller};
}

namespace {

// The backend's attributes of a file that still exists: ESTALE once it was
// removed (kept alive only by our reference).
Result<vfs::Attr> StatLive(FileState& file) {
  auto attr = file.exp().fs->GetAttr(file.node());
  if (attr && attr->nlink == 0) return Fail(ESTALE);
  return attr;
}

}  // namespace

Result<vfs::Attr> Core::AttrLocked(FileState& file, uint8_t changes) {
  auto attr = StatLive(file);
  if (attr) file.times().Present(*attr, changes);
  return attr;
}

Result<vfs::Attr> Core::Attr(FileState& file, bool* settled) {
  if (settled) *settled = true;
  if (file.ModifiedByThisThread()) return AttrLocked(file);
  // Optimistic: stat, and show the result only if no modification began or ended
  // around it. A stat that raced one could show a state half-way through it (new
  // times, old size) or one older than a modification's post-op attributes, and
  // either would look to clients like somebody else's change.
  constexpr int kOptimisticTries = 3;
  for (int attempt = 0; attempt < kOptimisticTries; ++attempt) {
    uint64_t seq = file.times().Seq();
    if (TimeOverlay::InChange(seq)) {
      std::this_thread::yield();
      continue;
    }
    auto attr = StatLive(file);
    if (!attr) return attr;
    if (file.times().PresentObservation(*attr, seq) == TimeOverlay::Outcome::kShown) return attr;
  }
  if (FileState::ThisThreadModifies()) {
    // Waiting for this file's modification while we hold another file's could
    // deadlock (a RENAME holding this one may wait for ours). Report what the file
    // looks like, with the latest times clients were shown, and say so.
    auto attr = StatLive(file);
    if (!attr) return attr;
    file.times().PresentUnsettled(*attr);
    if (settled) *settled = false;
    return attr;
  }
  // Writers keep the file busy: wait for the one under way instead.
  std::lock_guard lock(file.op_mutex());
  return AttrLocked(file);
}
fattr3 Core::ToFattr3(const vfs::Attr& a, const ExportRuntime& exp) const {
  fattr3 f;
  f.type = static_cast<ftype3>(a.type);
  f.mode = a.mode & 07777;
  f.nlink = a.nlink;
  f.uid = a.uid;
  f.gid = a.gid;
  f.size = a.size;
  f.used = a.used;
  f.rdev = {a.rdev_major, a.rdev_minor};
  f.fsid = exp.fs->fsid();
  f.fileid = a.fileid;
  auto t = [](const vfs::Timespec& ts) { return nfstime3{static_cast<uint32_t>(ts.sec), ts.nsec}; };
  f.atime = t(a.atime);
  f.mtime = t(a.mtime);
  f.ctime = t(a.ctime);
  return f;
}

post_op_attr Core::PostOpAttr(FileState& file) {
  bool settled = true;
  auto attr = Attr(file, &settled);
  if (!attr || !settled) return std::nullopt;  // no attributes rather than doubtful ones
  return ToFattr3(*attr, file.exp());
}

post_op_attr Core::PostOpAttrLocked(FileState& file, uint8_t changes) {
  auto attr = AttrLocked(file, changes);
  if (!attr) return std::nullopt;
  return ToFattr3(*attr, file.exp());
}

pre_op_attr Core::PreOpAttr(const Result<vfs::Attr>& attr) {
  if (!attr) return std::nullopt;
  return ToWccAttr(*attr);
}

void Core::ForgetIfGone(const FileStatePtr& file) {
  if (!file) return;
  auto attr = file->exp().fs->GetAttr(file->node());
  if (attr && attr->nlink > 0) return;  // other names remain
  open_files_.Release(*file);
  files_.Erase(file->key());
}

Result<nfs3::writeverf3> Core::SyncData(FileState& file, vfs::OpenFile& open, bool data_only) {
  uint64_t ticket = verifiers_.BeginSync(file.key());
  auto synced = open.Sync(data_only);
  uint64_t horizon = verifiers_.EndSync(file.key(), ticket, !synced);
  if (!synced) return std::unexpected(synced.error());
  return verifiers_.VerifierAfter(file.key(), horizon);
}

Result<void> Core::SyncMetadata(const FileStatePtr& file) {
  switch (file->node().type()) {
    case vfs::FileType::kDirectory:
      return file->exp().fs->SyncDir(file->node());
    case vfs::FileType::kRegular: {
      auto open = open_files_.Get(file, false);
      if (!open) return std::unexpected(open.error());
      // The descriptor is the one WRITE and COMMIT use, and fsync(2) tells a write-back
      // error once: told here, the next COMMIT would succeed over the lost data unless
      // the verifier changes, as it does for a failed COMMIT.
      auto synced = SyncData(*file, **open, false);
      if (!synced) return std::unexpected(synced.error());
      return {};
    }
    default:
      return {};  // symlinks and devices: their directory's sync covers them
  }
}

wcc_attr ToWccAttr(const vfs::Attr& a) {
  return wcc_attr{a.size,
                  {static_cast<uint32_t>(a.mtime.sec), a.mtime.nsec},
                  {static_cast<uint32_t>(a.ctime.sec), a.ctime.nsec}};
}

nfsstat3 StatusOf(const Error& e) { return NfsStatFromErrno(e.code); }

nfsstat3 CheckName(const std::string& name) {
  if (name.size() > 255) return NFS3ERR_NAMETOOLONG;
  if (!vfs::ValidName(name)) return NFS3ERR_ACCES;  // as knfsd: "/" or "." or ".." or empty
  return NFS3_OK;
}

vfs::SetAttr FromSattr3(const sattr3& s) {
  vfs::SetAttr v;
  v.mode = s.mode;
  v.uid = s.uid;
  v.gid = s.gid;
  v.size = s.size;
  auto how = [](const set_time& t, vfs::SetAttr::Time* out, vfs::Timespec* ts) {
    switch (t.set_it) {
      case DONT_CHANGE:
        *out = vfs::SetAttr::Time::kKeep;
        break;
      case SET_TO_SERVER_TIME:
        *out = vfs::SetAttr::Time::kServerNow;
        break;
      case SET_TO_CLIENT_TIME:
        *out = vfs::SetAttr::Time::kGiven;
        *ts = {t.time.seconds, t.time.nseconds};
        break;
    }
  };
  how(s.atime, &v.atime_how, &v.atime);
  how(s.mtime, &v.mtime_how, &v.mtime);
  return v;
}

}  // namespace nfsx::server
