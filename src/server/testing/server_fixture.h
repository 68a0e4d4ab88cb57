// A server in process on free loopback ports, and a client speaking to it:
// the hermetic harness of the server's tests.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include "client/typed_call.h"
#include "proto/mount3_types.h"
#include "proto/nfs3_types.h"
#include "rpc/test_util.h"
#include "server/server.h"
#include "vfs/fault_fs.h"
#include "vfs/local/local_fs.h"
#include "vfs/memory/memory_fs.h"

namespace nfsx::server::testing {

using namespace nfsx::nfs3;

inline std::string MakeTempDir(const char* tag) {
  std::string tmpl = std::string(::testing::TempDir()) + "nfsx-" + tag + "-XXXXXX";
  char* made = mkdtemp(tmpl.data());
  EXPECT_NE(made, nullptr);
  return tmpl;
}

enum class BackendKind { kMemory, kLocal };

inline std::string BackendName(const ::testing::TestParamInfo<BackendKind>& info) {
  return info.param == BackendKind::kMemory ? "Memory" : "Local";
}

class ServerHarness {
 public:
  // `exports_text`: an exports(5) file with $DIR standing for the export directory;
  // empty means ExportTable::Single(dir).
  explicit ServerHarness(BackendKind kind, std::string exports_text = "")
      : kind_(kind), exports_text_(std::move(exports_text)) {
    dir_ = MakeTempDir("export");
    state_dir_ = MakeTempDir("state");
  }
  ~ServerHarness() {
    Stop();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
    std::filesystem::remove_all(state_dir_, ec);
  }

  void Start() {
    server::ExportTable table;
    if (exports_text_.empty()) {
      table = server::ExportTable::Single(dir_);
    } else {
      std::string text = exports_text_;
      for (size_t at; (at = text.find("$DIR")) != std::string::npos;) text.replace(at, 4, dir_);
      std::string error;
      auto parsed = server::ExportTable::Parse(text, &error);
      ASSERT_TRUE(parsed.has_value()) << error;
      table = std::move(*parsed);
    }
    server::ServerOptions o;
    o.nfs_port = 0;
    o.mount_port = 0;
    o.state_dir = state_dir_;
    o.transport.io_threads = 2;
    o.transport.worker_threads = 4;
    o.make_fs = [this](const server::Export& e) -> Result<std::unique_ptr<vfs::Filesystem>> {
      std::unique_ptr<vfs::Filesystem> base;
      if (kind_ == BackendKind::kMemory) {
        base = vfs::MakeMemoryFs();
      } else {
        auto local = vfs::MakeLocalFs(e.path);
        if (!local) return std::unexpected(local.error());
        base = std::move(*local);
      }
      auto fault = std::make_unique<vfs::FaultInjectingFs>(std::move(base));
      faults_ = fault.get();
      return std::unique_ptr<vfs::Filesystem>(std::move(fault));
    };
    if (tune) tune(o);
    std::string error;
    auto s = server::Server::Create(std::move(table), o, &error);
    ASSERT_TRUE(s.has_value()) << error;
    server_ = std::move(*s);
    ASSERT_TRUE(server_->Start(&error).has_value()) << error;
  }

  void Stop() { server_.reset(); }

  std::unique_ptr<rpc::RpcClient> Connect(uint16_t port, rpc::RpcClientOptions o = {}) {
    auto c = rpc::RpcClient::Connect("127.0.0.1", port, o);
    EXPECT_TRUE(c.has_value());
    return c ? std::move(*c) : nullptr;
  }

  // Applied to the server's options by Start(), after the harness's own.
  std::function<void(server::ServerOptions&)> tune;

  server::Server& server() { return *server_; }
  vfs::FaultInjectingFs& faults() { return *faults_; }
  const std::string& dir() const { return dir_; }
  BackendKind kind() const { return kind_; }

 private:
  BackendKind kind_;
  std::string exports_text_;
  std::string dir_, state_dir_;
  std::unique_ptr<server::Server> server_;
  vfs::FaultInjectingFs* faults_ = nullptr;
};

// A test with a running server and an NFS client mounted on its export.
class ServerTest : public ::testing::TestWithParam<BackendKind> {
 protected:
  // By default the export admits root, so that SetUp can open the export's root
  // directory to everyone; tests then run as an ordinary user (uid 1000).
  static constexpr const char* kDefaultExports = "$DIR 127.0.0.1(rw,insecure,no_root_squash)";

  void SetUp() override { StartServer(kDefaultExports); }

  void StartServer(std::string exports_text) {
    harness_ = std::make_unique<ServerHarness>(GetParam(), std::move(exports_text));
    harness_->tune = tune_;
    harness_->Start();
    if (::testing::Test::HasFatalFailure()) return;
    nfs_ = harness_->Connect(harness_->server().nfs_port());
    mnt_ = harness_->Connect(harness_->server().mount_port());
    auto m = Mount(harness_->dir());
    ASSERT_TRUE(m.has_value());
    ASSERT_EQ(m->fhs_status, mount3::MNT3_OK);
    root_ = m->mountinfo.fhandle;
    rpc::Credential saved = cred_;
    cred_ = rpc::testing::SysCred(0, 0);
    SETATTR3args open_up;
    open_up.object = root_;
    open_up.new_attributes.mode = 0777;
    Call<SETATTR3res>(nfsproc3::SETATTR, open_up);
    cred_ = saved;
  }

  Result<mount3::mountres3> Mount(const std::string& path) {
    mount3::dirpath p{path};
    return client::CallSync<mount3::mountres3>(*mnt_, mount3::MOUNT_PROGRAM, mount3::MOUNT_V3, 1,
                                               cred_, p);
  }

  template <class Res, class Args>
  Res Call(nfsproc3 proc, const Args& args) {
    return CallOn<Res>(*nfs_, proc, args);
  }
  // On another connection (from harness_->Connect), for calls that must run side by side.
  template <class Res, class Args>
  Res CallOn(rpc::RpcClient& conn, nfsproc3 proc, const Args& args) {
    auto r =
        client::CallSync<Res>(conn, NFS_PROGRAM, NFS_V3, static_cast<uint32_t>(proc), cred_, args);
    EXPECT_TRUE(r.has_value()) << "RPC failed: " << (r ? 0 : r.error().code);
    return r ? *r : Res{};
  }

  // Conveniences for the common calls; each asserts nothing and returns the reply.
  LOOKUP3res LookupIn(const nfs_fh3& dir, const std::string& name) {
    return Call<LOOKUP3res>(nfsproc3::LOOKUP, LOOKUP3args{{dir, {name}}});
  }
  CREATE3res CreateIn(const nfs_fh3& dir, const std::string& name, createmode3 mode = UNCHECKED,
                      uint32_t perm = 0644) {
    CREATE3args a;
    a.where = {dir, {name}};
    a.how.mode = mode;
    a.how.obj_attributes.mode = perm;
    return Call<CREATE3res>(nfsproc3::CREATE, a);
  }
  nfs_fh3 MustCreate(const std::string& name, uint32_t perm = 0644) {
    auto r = CreateIn(root_, name, UNCHECKED, perm);
    EXPECT_EQ(r.status, NFS3_OK) << name;
    return r.resok.obj ? *r.resok.obj : nfs_fh3{};
  }
  WRITE3res WriteTo(const nfs_fh3& fh, uint64_t offset, const std::string& data,
                    stable_how stable = UNSTABLE) {
    return WriteOn(*nfs_, fh, offset, data, stable);
  }
  WRITE3res WriteOn(rpc::RpcClient& conn, const nfs_fh3& fh, uint64_t offset,
                    const std::string& data, stable_how stable = UNSTABLE) {
    auto owner = std::make_shared<std::string>(data);
    WRITE3args a;
    a.file = fh;
    a.offset = offset;
    a.count = static_cast<uint32_t>(data.size());
    a.stable = stable;
    a.data = {std::as_bytes(std::span(*owner)), owner};
    return CallOn<WRITE3res>(conn, nfsproc3::WRITE, a);
  }
  std::string ReadFrom(const nfs_fh3& fh, uint64_t offset, uint32_t count, bool* eof = nullptr) {
    auto r = Call<READ3res>(nfsproc3::READ, READ3args{fh, offset, count});
    EXPECT_EQ(r.status, NFS3_OK);
    if (eof) *eof = r.resok.eof;
    return std::string(reinterpret_cast<const char*>(r.resok.data.bytes.data()),
                       r.resok.data.bytes.size());
  }
  fattr3 AttrOf(const nfs_fh3& fh) {
    auto r = Call<GETATTR3res>(nfsproc3::GETATTR, GETATTR3args{fh});
    EXPECT_EQ(r.status, NFS3_OK);
    return r.resok.obj_attributes;
  }

  void AsUser(uint32_t uid, uint32_t gid) { cred_ = rpc::testing::SysCred(uid, gid); }

  std::unique_ptr<ServerHarness> harness_;
  // Set before SetUp() (in a fixture's constructor) to change the server's options.
  std::function<void(server::ServerOptions&)> tune_;
  std::unique_ptr<rpc::RpcClient> nfs_, mnt_;
  rpc::Credential cred_ = rpc::testing::SysCred(1000, 1000);
  nfs_fh3 root_;
};

}  // namespace nfsx::server::testing
