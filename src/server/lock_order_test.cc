// Lock order between a directory's Modification and Core::Attr's fallback, which
// must never wait for another file's lock while one is held (found in review: LINK
// of a directory and RMDIR, each beside a RENAME, deadlocked the server).
#include <unistd.h>

#include <condition_variable>
#include <cstdio>
#include <future>
#include <thread>

#include "server/core.h"
#include "server/testing/server_fixture.h"

namespace nfsx::server::testing {
namespace {

using namespace std::chrono_literals;

// Forwards everything; GetAttr of one armed file (by fileid) stops until released.
class GateFs final : public vfs::Filesystem {
 public:
  explicit GateFs(std::unique_ptr<vfs::Filesystem> base) : b_(std::move(base)) {}
  void Arm(uint64_t fileid) {
    std::lock_guard l(mu_);
    armed_ = fileid;
    entered_ = released_ = false;
  }
  bool WaitEntered() {
    std::unique_lock l(mu_);
    return cv_.wait_for(l, 30s, [&] { return entered_; });
  }
  bool Entered() {
    std::lock_guard l(mu_);
    return entered_;
  }
  void Release() {
    std::lock_guard l(mu_);
    released_ = true;
    cv_.notify_all();
  }

  vfs::NodePtr Root() override { return b_->Root(); }
  uint64_t fsid() const override { return b_->fsid(); }
  bool persistent() const override { return b_->persistent(); }
  size_t EncodeHandle(const vfs::Node& n, std::span<std::byte, vfs::kMaxBackendHandle> o) override {
    return b_->EncodeHandle(n, o);
  }
  Result<vfs::NodePtr> DecodeHandle(std::span<const std::byte> h) override {
    return b_->DecodeHandle(h);
  }
  Result<vfs::Attr> GetAttr(vfs::Node& n) override {
    auto r = b_->GetAttr(n);
    std::unique_lock l(mu_);
    if (r && armed_ != 0 && r->fileid == armed_) {
      armed_ = 0;
      entered_ = true;
      cv_.notify_all();
      cv_.wait_for(l, 30s, [&] { return released_; });
    }
    return r;
  }
  Result<void> SetAttr(vfs::Node& n, const vfs::SetAttr& a) override { return b_->SetAttr(n, a); }
  Result<vfs::NodePtr> Lookup(vfs::Node& d, std::string_view name) override {
    return b_->Lookup(d, name);
  }
  Result<vfs::NodePtr> Parent(vfs::Node& d) override { return b_->Parent(d); }
  Result<std::string> ReadLink(vfs::Node& n) override { return b_->ReadLink(n); }
  Result<std::unique_ptr<vfs::OpenFile>> Open(vfs::Node& n, bool w) override {
    return b_->Open(n, w);
  }
  Result<vfs::NodePtr> Create(vfs::Node& d, std::string_view name, uint32_t mode, vfs::Owner o,
                              bool excl) override {
    return b_->Create(d, name, mode, o, excl);
  }
  Result<vfs::NodePtr> Mkdir(vfs::Node& d, std::string_view name, uint32_t mode,
                             vfs::Owner o) override {
    return b_->Mkdir(d, name, mode, o);
  }
  Result<vfs::NodePtr> Symlink(vfs::Node& d, std::string_view name, std::string_view t,
                               vfs::Owner o) override {
    return b_->Symlink(d, name, t, o);
  }
  Result<vfs::NodePtr> Mknod(vfs::Node& d, std::string_view name, vfs::FileType t, uint32_t mode,
                             uint32_t ma, uint32_t mi, vfs::Owner o) override {
    return b_->Mknod(d, name, t, mode, ma, mi, o);
  }
  Result<void> Remove(vfs::Node& d, std::string_view name) override { return b_->Remove(d, name); }
  Result<void> Rmdir(vfs::Node& d, std::string_view name) override { return b_->Rmdir(d, name); }
  Result<void> Rename(vfs::Node& fd, std::string_view fn, vfs::Node& td,
                      std::string_view tn) override {
    return b_->Rename(fd, fn, td, tn);
  }
  Result<void> Link(vfs::Node& f, vfs::Node& d, std::string_view name) override {
    return b_->Link(f, d, name);
  }
  Result<bool> ReadDir(vfs::Node& d, uint64_t cookie,
                       const std::function<bool(const vfs::DirEntry&)>& emit) override {
    return b_->ReadDir(d, cookie, emit);
  }
  Result<vfs::FsStat> StatFs(vfs::Node& n) override { return b_->StatFs(n); }
  Result<void> SyncDir(vfs::Node& d) override { return b_->SyncDir(d); }

 private:
  std::unique_ptr<vfs::Filesystem> b_;
  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t armed_ = 0;
  bool entered_ = false, released_ = false;
};

class LockOrderTest : public ServerTest {
 protected:
  LockOrderTest() {
    tune_ = [this](server::ServerOptions& o) {
      o.make_fs = [this](const server::Export& e) -> Result<std::unique_ptr<vfs::Filesystem>> {
        std::unique_ptr<vfs::Filesystem> base;
        if (GetParam() == BackendKind::kMemory) {
          base = vfs::MakeMemoryFs();
        } else {
          auto local = vfs::MakeLocalFs(e.path);
          if (!local) return std::unexpected(local.error());
          base = std::move(*local);
        }
        auto g = std::make_unique<GateFs>(std::move(base));
        gate_ = g.get();
        return std::unique_ptr<vfs::Filesystem>(std::move(g));
      };
    };
  }
  static std::string Key(const nfs_fh3& fh) {
    return std::string(reinterpret_cast<const char*>(fh.data.data()), fh.size);
  }
  std::pair<nfs_fh3, fattr3> MkdirIn(const nfs_fh3& dir, const std::string& name) {
    MKDIR3args a;
    a.where = {dir, {name}};
    a.attributes.mode = 0777;
    auto r = Call<MKDIR3res>(nfsproc3::MKDIR, a);
    EXPECT_EQ(r.status, NFS3_OK) << name;
    return {*r.resok.obj, *r.resok.obj_attributes};
  }
  bool Busy(const nfs_fh3& fh) {
    auto f = harness_->server().core().files().Find(Key(fh));
    return f && TimeOverlay::InChange(f->times().Seq());
  }
  template <class Res, class Args>
  std::future<Res> Async(nfsproc3 proc, Args args) {
    return std::async(std::launch::async, [this, proc, args] {
      auto c = harness_->Connect(harness_->server().nfs_port());
      auto r =
          client::CallSync<Res>(*c, NFS_PROGRAM, NFS_V3, static_cast<uint32_t>(proc), cred_, args);
      return r ? *r : Res{};
    });
  }
  // `first` holds the directory `p`; `second` then takes `x` (and waits for `p`);
  // then `first` goes on. Both must finish.
  template <class R1, class A1, class R2, class A2>
  void Race(const nfs_fh3& /*p*/, const fattr3& p_attr, const nfs_fh3& x, nfsproc3 proc1, A1 a1,
            nfsproc3 proc2, A2 a2, const char* what) {
    gate_->Arm(p_attr.fileid);
    auto f1 = Async<R1>(proc1, a1);
    ASSERT_TRUE(gate_->WaitEntered()) << "the first call never reached the gate";
    auto f2 = Async<R2>(proc2, a2);
    auto until = std::chrono::steady_clock::now() + 30s;
    while (!Busy(x) && std::chrono::steady_clock::now() < until) std::this_thread::yield();
    ASSERT_TRUE(Busy(x)) << "the second call never took the other directory";
    gate_->Release();
    bool ok1 = f1.wait_for(20s) == std::future_status::ready;
    bool ok2 = f2.wait_for(20s) == std::future_status::ready;
    if (!ok1 || !ok2) {
      std::fprintf(stderr,
                   "DEADLOCK (%s): first call finished: %d, second call finished: %d; "
                   "the server's worker threads are stuck, exiting\n",
                   what, ok1, ok2);
      std::fflush(stderr);
      _exit(1);
    }
  }
  GateFs* gate_ = nullptr;
};

// LINK of a directory used to be refused only after DirOp locked the link
// directory P and Core::Attr looked at X; against a RENAME out of X into P (whose
// TwoDirLock takes X before P) that deadlocked. Now it is refused before anything
// is locked: the gate on P's attributes is never reached.
TEST_P(LockOrderTest, LinkOfADirectoryIsRefusedBeforeLockingAnything) {
  auto [d1, a1] = MkdirIn(root_, "d1");
  auto [d2, a2] = MkdirIn(root_, "d2");
  gate_->Arm(a2.fileid);
  auto r = Call<LINK3res>(nfsproc3::LINK, LINK3args{d1, {d2, {"l"}}});
  EXPECT_EQ(r.status, NFS3ERR_ISDIR);
  EXPECT_FALSE(gate_->Entered()) << "LINK looked at the directory it would have locked";
  gate_->Release();
}

// RMDIR P/X (ForgetIfGone looks at X with Core::Attr while P is locked) against
// a RENAME from X into P, X before P in key order: rm -rf beside a mv.
TEST_P(LockOrderTest, RmdirBesideARenameOutOfItDoesNotDeadlock) {
  // X must sort before P: make both at the top, then move the smaller one into the other.
  auto [d1, a1] = MkdirIn(root_, "d1");
  auto [d2, a2] = MkdirIn(root_, "d2");
  bool d1_first = Key(d1) < Key(d2);
  nfs_fh3 x = d1_first ? d1 : d2, p = d1_first ? d2 : d1;
  fattr3 p_attr = d1_first ? a2 : a1;
  std::string xname = "child";
  auto mv = Call<RENAME3res>(nfsproc3::RENAME,
                             RENAME3args{{root_, {d1_first ? "d1" : "d2"}}, {p, {xname}}});
  ASSERT_EQ(mv.status, NFS3_OK);
  Race<RMDIR3res, RMDIR3args, RENAME3res, RENAME3args>(
      p, p_attr, x, nfsproc3::RMDIR, RMDIR3args{{p, {xname}}}, nfsproc3::RENAME,
      RENAME3args{{x, {"nothing"}}, {p, {"y"}}}, "RMDIR vs RENAME");
}

INSTANTIATE_TEST_SUITE_P(Backends, LockOrderTest,
                         ::testing::Values(BackendKind::kMemory, BackendKind::kLocal), BackendName);

}  // namespace
}  // namespace nfsx::server::testing
