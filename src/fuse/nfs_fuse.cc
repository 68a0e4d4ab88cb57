// NfsFuse: construction, the operation table, connection setup, shutdown, and
// the helpers every request uses (node lookup, attributes, cache timeouts).
#include "fuse/nfs_fuse.h"

#include <sys/sysmacros.h>

#include <cstring>

#include "base/interruption.h"
#include "base/logging.h"
#include "client/acting_as.h"
#include "fuse/caller_signals.h"
#include "fuse/type_bits.h"

namespace nfsx::fuse {

using client::InodePtr;

static_assert(MountOptions{}.max_names == NodeTable::kDefaultMaxNames);

namespace {

bool RequestInterrupted(void* arg) {
  auto req = static_cast<fuse_req_t>(arg);
  return fuse_req_interrupted(req) != 0 && CallerSignalsEndWait(fuse_req_ctx(req)->pid);
}

// The file system a request is for; while it lives, the request's calls to the server
// carry the caller's identity (when the mount sends callers' identities), and its
// waits for the server end with EINTR once the kernel interrupts the request and the
// caller's signal is one that ends a wait (SIGKILL above all, which a hard mount must
// always let through; not SIGSTOP: see caller_signals.h). Polled, so a SIGKILL that
// comes after a stop still ends the wait: the kernel interrupts a request only once.
// It ends right after the handler, which replies last: nothing waits after a reply,
// when asking about the request would touch freed memory.
class Self {
 public:
  explicit Self(fuse_req_t req)
      : fs_(static_cast<NfsFuse*>(fuse_req_userdata(req))), interrupts_(RequestInterrupted, req) {
    if (fs_->callers()) as_.emplace(who_.emplace(fs_->callers()->For(req)));
  }
  NfsFuse* operator->() const { return fs_; }

 private:
  NfsFuse* fs_;
  InterruptScope interrupts_;
  std::optional<rpc::Credential> who_;
  std::optional<client::ActingAs> as_;
};

fuse_lowlevel_ops MakeOps() {
  fuse_lowlevel_ops o{};
  o.init = [](void* self, fuse_conn_info* conn) { static_cast<NfsFuse*>(self)->Init(conn); };
  o.destroy = [](void* self) { (void)static_cast<NfsFuse*>(self)->Shutdown(); };
  o.lookup = [](fuse_req_t r, fuse_ino_t p, const char* n) { Self(r)->Lookup(r, p, n); };
  o.forget = [](fuse_req_t r, fuse_ino_t i, uint64_t n) {
    Self(r)->Forget(i, n);
    fuse_reply_none(r);
  };
  o.forget_multi = [](fuse_req_t r, size_t count, fuse_forget_data* items) {
    for (size_t i = 0; i < count; ++i) Self(r)->Forget(items[i].ino, items[i].nlookup);
    fuse_reply_none(r);
  };
  o.getattr = [](fuse_req_t r, fuse_ino_t i, fuse_file_info*) { Self(r)->GetAttr(r, i); };
  o.setattr = [](fuse_req_t r, fuse_ino_t i, struct stat* a, int s, fuse_file_info*) {
    Self(r)->SetAttr(r, i, a, s);
  };
  o.access = [](fuse_req_t r, fuse_ino_t i, int m) { Self(r)->Access(r, i, m); };
  o.statfs = [](fuse_req_t r, fuse_ino_t) { Self(r)->StatFs(r); };
  o.getxattr = [](fuse_req_t r, fuse_ino_t i, const char* n, size_t s) {
    Self(r)->GetXattr(r, i, n, s);
  };
  o.listxattr = [](fuse_req_t r, fuse_ino_t, size_t s) { Self(r)->ListXattr(r, s); };
  // NFSv3 has no extended attributes; EOPNOTSUPP is what a local file system
  // without them answers (ENOSYS would also hide our control attributes).
  o.setxattr = [](fuse_req_t r, fuse_ino_t, const char*, const char*, size_t, int) {
    fuse_reply_err(r, EOPNOTSUPP);
  };
  o.removexattr = [](fuse_req_t r, fuse_ino_t, const char*) { fuse_reply_err(r, EOPNOTSUPP); };
  o.readlink = [](fuse_req_t r, fuse_ino_t i) { Self(r)->Readlink(r, i); };
  o.mknod = [](fuse_req_t r, fuse_ino_t p, const char* n, mode_t m, dev_t d) {
    Self(r)->Mknod(r, p, n, m, d);
  };
  o.mkdir = [](fuse_req_t r, fuse_ino_t p, const char* n, mode_t m) { Self(r)->Mkdir(r, p, n, m); };
  o.symlink = [](fuse_req_t r, const char* t, fuse_ino_t p, const char* n) {
    Self(r)->Symlink(r, t, p, n);
  };
  o.link = [](fuse_req_t r, fuse_ino_t i, fuse_ino_t p, const char* n) {
    Self(r)->Link(r, i, p, n);
  };
  o.unlink = [](fuse_req_t r, fuse_ino_t p, const char* n) { Self(r)->Unlink(r, p, n); };
  o.rmdir = [](fuse_req_t r, fuse_ino_t p, const char* n) { Self(r)->Rmdir(r, p, n); };
  o.rename = [](fuse_req_t r, fuse_ino_t p, const char* n, fuse_ino_t np, const char* nn,
                unsigned f) { Self(r)->Rename(r, p, n, np, nn, f); };
  o.create = [](fuse_req_t r, fuse_ino_t p, const char* n, mode_t m, fuse_file_info* fi) {
    Self(r)->Create(r, p, n, m, fi);
  };
  o.open = [](fuse_req_t r, fuse_ino_t i, fuse_file_info* fi) { Self(r)->Open(r, i, fi); };
  o.read = [](fuse_req_t r, fuse_ino_t, size_t s, off_t off, fuse_file_info* fi) {
    Self(r)->Read(r, s, off, fi);
  };
  o.write_buf = [](fuse_req_t r, fuse_ino_t, fuse_bufvec* b, off_t off, fuse_file_info* fi) {
    Self(r)->WriteBuf(r, b, off, fi);
  };
  o.flush = [](fuse_req_t r, fuse_ino_t, fuse_file_info* fi) { Self(r)->Flush(r, fi); };
  o.release = [](fuse_req_t r, fuse_ino_t, fuse_file_info* fi) { Self(r)->Release(r, fi); };
  o.fsync = [](fuse_req_t r, fuse_ino_t, int, fuse_file_info* fi) { Self(r)->Fsync(r, fi); };
  o.opendir = [](fuse_req_t r, fuse_ino_t i, fuse_file_info* fi) { Self(r)->OpenDir(r, i, fi); };
  o.readdir = [](fuse_req_t r, fuse_ino_t i, size_t s, off_t off, fuse_file_info* fi) {
    Self(r)->ReadDir(r, i, s, off, fi, false);
  };
  o.readdirplus = [](fuse_req_t r, fuse_ino_t i, size_t s, off_t off, fuse_file_info* fi) {
    Self(r)->ReadDir(r, i, s, off, fi, true);
  };
  o.releasedir = [](fuse_req_t r, fuse_ino_t, fuse_file_info* fi) { Self(r)->ReleaseDir(r, fi); };
  // Directory changes are synchronous on the server (or its export says otherwise).
  o.fsyncdir = [](fuse_req_t r, fuse_ino_t, int, fuse_file_info*) { fuse_reply_err(r, 0); };
  return o;
}

}  // namespace

const fuse_lowlevel_ops& NfsFuse::Ops() {
  static const fuse_lowlevel_ops ops = MakeOps();
  return ops;
}

NfsFuse::NfsFuse(std::unique_ptr<client::ClientCore> core, InodePtr root, MountOptions options,
                 std::string source)
    : core_(std::move(core)),
      options_(options),
      source_(std::move(source)),
      table_(std::move(root), options_.max_names),
      invalidator_([this](uint64_t dir) { return table_.NamesUnder(dir); }),
      blksize_(core_->wsize()) {
  if (options_.caller_identity) callers_.emplace(core_->channel().cred());
  // Set before any request can run; the client calls it from any thread.
  core_->set_on_invalidate([this](const InodePtr& ino) { OnForeignChange(ino); });
}

NfsFuse::~NfsFuse() {
  (void)Shutdown();
  // No completion may call OnForeignChange while the callback is replaced, or
  // after the members it uses are gone.
  core_->Shutdown();
  core_->set_on_invalidate(nullptr);
}

void NfsFuse::Start(fuse_session* se) {
  se_ = se;
  invalidator_.Start(se);
}

void NfsFuse::Init(fuse_conn_info* conn) {
  // Large requests, but no larger than libfuse's request buffer (256 pages plus a
  // header in libfuse 3.14): a max_write above it makes every read of /dev/fuse
  // fail with EINVAL. The client library coalesces writes to wsize anyway.
  constexpr uint32_t kFuseMaxIo = 1u << 20;
  conn->max_write = kFuseMaxIo;
  conn->max_readahead = kFuseMaxIo;
  conn->max_background = 64;
  conn->congestion_threshold = 48;
  conn->time_gran = 1;
  auto want = [&](unsigned cap, bool on) {
    if (on && (conn->capable & cap)) {
      conn->want |= cap;
    } else {
      conn->want &= ~cap;
    }
  };
  want(FUSE_CAP_ASYNC_READ, true);
  want(FUSE_CAP_PARALLEL_DIROPS, true);
  want(FUSE_CAP_READDIRPLUS, true);
  want(FUSE_CAP_READDIRPLUS_AUTO, true);
  want(FUSE_CAP_ATOMIC_O_TRUNC, true);
  // The kernel would drop a file's pages whenever its mtime moved, our own writes
  // included (seed 000 at the kernel level); the client tells it when instead.
  want(FUSE_CAP_AUTO_INVAL_DATA, false);
  // The kernel clears setuid/setgid on write and chown by a chmod; SetAttr leaves out
  // the ones a user who may not chmod sends (KillPrivBits).
  want(FUSE_CAP_HANDLE_KILLPRIV, false);
  want(FUSE_CAP_WRITEBACK_CACHE, options_.writeback_cache);
  want(FUSE_CAP_SPLICE_WRITE, options_.splice);
  want(FUSE_CAP_SPLICE_MOVE, options_.splice);
  want(FUSE_CAP_SPLICE_READ, options_.splice);
  want(FUSE_CAP_EXPORT_SUPPORT, false);
  log::Info("fuse: connected: protocol {}.{}, max_write {}, max_readahead {}, writeback cache {}",
            conn->proto_major, conn->proto_minor, conn->max_write, conn->max_readahead,
            (conn->want & FUSE_CAP_WRITEBACK_CACHE) ? "on" : "off");
}

Result<void> NfsFuse::Unmount(const std::function<void()>& unmount) {
  StopNotifications();
  unmount();
  return Shutdown();
}

Result<void> NfsFuse::Shutdown() {
  std::lock_guard lock(shutdown_mu_);
  if (shut_down_) return shutdown_result_;
  shut_down_ = true;
  invalidator_.Stop();
  shutdown_result_ = core_->SyncAll();
  if (!shutdown_result_) {
    log::Error("fuse: flushing dirty data at unmount failed: {}",
               ErrorString(shutdown_result_.error()));
  }
  // Files unlinked while open whose last close never came (lazy unmount).
  std::set<NodePtr> hidden;
  {
    std::lock_guard h(hidden_mu_);
    hidden.swap(hidden_);
  }
  for (const NodePtr& node : hidden) ForgetHidden(node);
  return shutdown_result_;
}

NodePtr NfsFuse::NodeOr(fuse_req_t req, fuse_ino_t ino) {
  NodePtr node = table_.Get(ino);
  if (!node) fuse_reply_err(req, ESTALE);
  return node;
}

double NfsFuse::AttrTimeout(const client::Inode& ino) const {
  // The client's cache deadline is private to it; AttrFresh() at later instants
  // finds it (to the millisecond) without a lock.
  int64_t now = client::SteadyNowNs();
  if (!ino.AttrFresh(now)) return 0;
  const ClientOptions& o = core_->options();
  int64_t lo = 0;
  int64_t hi = static_cast<int64_t>((std::max(o.acregmax, o.acdirmax) + 1) * 1e9);
  if (ino.AttrFresh(now + hi)) return static_cast<double>(hi) / 1e9;
  while (hi - lo > 1'000'000) {
    int64_t mid = lo + (hi - lo) / 2;
    if (ino.AttrFresh(now + mid)) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return static_cast<double>(lo) / 1e9;
}

double NfsFuse::EntryTimeout() const { return core_->options().acdirmin; }

void NfsFuse::FillAttr(const Stat& s, const Node& node, struct stat* st) const {
  std::memset(st, 0, sizeof(*st));
  st->st_ino = node.ino_number;
  st->st_mode = TypeBits(s.type) | (s.mode & 07777);
  st->st_nlink = s.nlink;
  if (node.unlinked.load() && st->st_nlink > 0) --st->st_nlink;
  st->st_uid = s.uid;
  st->st_gid = s.gid;
  st->st_size = static_cast<off_t>(s.size);
  st->st_blocks = static_cast<blkcnt_t>((s.used + 511) / 512);
  st->st_blksize = static_cast<blksize_t>(blksize_);
  st->st_rdev = makedev(s.rdev_major, s.rdev_minor);
  st->st_atim = {static_cast<time_t>(s.atime.sec), static_cast<long>(s.atime.nsec)};
  st->st_mtim = {static_cast<time_t>(s.mtime.sec), static_cast<long>(s.mtime.nsec)};
  st->st_ctim = {static_cast<time_t>(s.ctime.sec), static_cast<long>(s.ctime.nsec)};
}

NodePtr NfsFuse::EntryFor(fuse_req_t req, fuse_ino_t parent, const std::string& name,
                          const InodePtr& ino, fuse_entry_param* e) {
  auto st = core_->GetAttr(ino);
  if (!st) {
    fuse_reply_err(req, st.error().code);
    return nullptr;
  }
  NodePtr node = table_.Ref(ino);
  *e = {};
  e->ino = node->nodeid;
  e->generation = node->generation;
  FillAttr(*st, *node, &e->attr);
  e->attr_timeout = AttrTimeout(*ino);
  e->entry_timeout = EntryTimeout();
  table_.NoteName(parent, name, node->nodeid);
  return node;
}

void NfsFuse::ReplyEntry(fuse_req_t req, fuse_ino_t parent, const std::string& name,
                         const InodePtr& ino) {
  fuse_entry_param e;
  NodePtr node = EntryFor(req, parent, name, ino, &e);
  // An interrupted request's reply is dropped: the kernel will not forget it.
  if (node && fuse_reply_entry(req, &e) != 0) table_.Forget(node->nodeid, 1);
}

void NfsFuse::OnForeignChange(const InodePtr& ino) {
  NodePtr node = table_.Find(ino.get());
  if (!node) return;  // the kernel holds nothing of this file
  node->foreign_changes.fetch_add(1);
  if (ino->type() == nfs3::NF3DIR) {
    invalidator_.Directory(node->nodeid);
  } else {
    invalidator_.File(node->nodeid);
  }
}

}  // namespace nfsx::fuse
