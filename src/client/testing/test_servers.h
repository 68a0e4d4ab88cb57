// Servers for the client's tests: nfsx in process, or NFS-Ganesha started for
// real by tests/peers/ganesha.sh. The same tests run against both.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <regex>
#include <sstream>
#include <string>

#include "nfsx/client.h"
#include "server/server.h"
#include "server/testing/server_fixture.h"

namespace nfsx::client::testing {

class TestServer {
 public:
  virtual ~TestServer() = default;
  // Starts (again, on the same ports). False with a message when impossible here.
  virtual bool Start(std::string* why) = 0;
  virtual void Stop() = 0;
  // A URL for `path` inside the export.
  virtual std::string Url(const std::string& path = "") const = 0;
  // The exported directory on this machine.
  virtual const std::string& dir() const = 0;
  virtual bool exact_wcc() const = 0;
};

// nfsx in process, exporting a temporary directory (local backend, no_root_squash).
class NfsxServer : public TestServer {
 public:
  NfsxServer() {
    dir_ = server::testing::MakeTempDir("cexport");
    state_ = server::testing::MakeTempDir("cstate");
  }
  ~NfsxServer() override {
    Stop();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
    std::filesystem::remove_all(state_, ec);
  }
  bool Start(std::string* why) override {
    std::string error;
    auto table =
        server::ExportTable::Parse(dir_ + " 127.0.0.1(rw,insecure,no_root_squash)", &error);
    if (!table) {
      *why = error;
      return false;
    }
    server::ServerOptions o;
    o.nfs_port = nfs_port_;
    o.mount_port = mount_port_;
    o.state_dir = state_;
    // The export behind a fault injector (faults()), with a coarse clock when asked
    // (see FaultInjectingFs).
    o.make_fs = [this](const server::Export& e) -> Result<std::unique_ptr<vfs::Filesystem>> {
      auto local = vfs::MakeLocalFs(e.path);
      if (!local) return std::unexpected(local.error());
      auto fs = std::make_unique<vfs::FaultInjectingFs>(std::move(*local));
      if (time_granularity_ns_) fs->SetTimeGranularity(time_granularity_ns_);
      if (lose_unsynced_writes_) {
        auto replayed = fs->LoseUnsyncedWritesAtRestart(state_ + "/unsynced.journal");
        if (!replayed) return std::unexpected(replayed.error());
      }
      faults_ = fs.get();
      return std::unique_ptr<vfs::Filesystem>(std::move(fs));
    };
    auto s = server::Server::Create(std::move(*table), o, &error);
    if (!s) {
      *why = error;
      return false;
    }
    server_ = std::move(*s);
    if (!server_->Start(&error)) {
      *why = error;
      return false;
    }
    if (verifier_kept_through_errors_) server_->core().verifiers().KeepThroughErrorsForTests();
    nfs_port_ = server_->nfs_port();
    mount_port_ = server_->mount_port();
    return true;
  }
  void Stop() override { server_.reset(); }
  std::string Url(const std::string& path) const override {
    return "nfs://127.0.0.1" + dir_ + "/" + path +
           "?version=3&nfsport=" + std::to_string(nfs_port_) +
           "&mountport=" + std::to_string(mount_port_);
  }
  const std::string& dir() const override { return dir_; }
  bool exact_wcc() const override { return true; }
  server::Server* server() { return server_.get(); }
  // REQUIRES: started.
  vfs::FaultInjectingFs& faults() { return *faults_; }
  // Before Start(): the export's times as a filesystem with this clock tick shows them.
  void set_time_granularity(uint64_t ns) { time_granularity_ns_ = ns; }
  // Before Start(): every later start loses what the last one wrote and never synced,
  // as a power cut would (it becomes 0xDB; see FaultInjectingFs).
  void set_lose_unsynced_writes() { lose_unsynced_writes_ = true; }
  // Before Start(): the write verifier does not change on a write-back error, as
  // NFS-Ganesha's (global, changed only at restart).
  void set_verifier_kept_through_errors() { verifier_kept_through_errors_ = true; }

 private:
  std::string dir_, state_;
  uint64_t time_granularity_ns_ = 0;
  bool lose_unsynced_writes_ = false;
  bool verifier_kept_through_errors_ = false;
  vfs::FaultInjectingFs* faults_ = nullptr;
  uint16_t nfs_port_ = 0, mount_port_ = 0;
  std::unique_ptr<server::Server> server_;
};

// NFS-Ganesha 4.3 (Debian), VFS export of a temporary directory at /vfs.
class GaneshaServer : public TestServer {
 public:
  GaneshaServer() {
    dir_ = server::testing::MakeTempDir("gexport");
    state_ = server::testing::MakeTempDir("gstate");
  }
  ~GaneshaServer() override {
    Stop();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
    std::filesystem::remove_all(state_, ec);
  }
  bool Start(std::string* why) override {
    std::string script = std::string(NFSX_SOURCE_DIR) + "/tests/peers/ganesha.sh";
    if (std::system((script + " check >/dev/null 2>&1").c_str()) != 0) {
      *why = "NFS-Ganesha cannot run here (tests/peers/ganesha.sh check)";
      return false;
    }
    std::string cmd = script + " start " + dir_ + " " + state_ + " 2>" + state_ + "/start.err";
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) return false;
    char line[256] = {};
    bool got = std::fgets(line, sizeof(line), p) != nullptr;
    int rc = pclose(p);
    std::istringstream in(line);
    if (!got || rc != 0 || !(in >> pid_ >> nfs_port_ >> mount_port_)) {
      std::ifstream err(state_ + "/start.err");
      std::stringstream ss;
      ss << err.rdbuf();
      *why = "ganesha.sh start failed: " + ss.str();
      return false;
    }
    return true;
  }
  void Stop() override {
    if (pid_ <= 0) return;
    std::string script = std::string(NFSX_SOURCE_DIR) + "/tests/peers/ganesha.sh";
    [[maybe_unused]] int rc =
        std::system((script + " stop " + std::to_string(pid_) + " >/dev/null 2>&1").c_str());
    pid_ = 0;
  }
  std::string Url(const std::string& path) const override {
    return "nfs://127.0.0.1/vfs/" + path + "?version=3&nfsport=" + std::to_string(nfs_port_) +
           "&mountport=" + std::to_string(mount_port_);
  }
  const std::string& dir() const override { return dir_; }
  bool exact_wcc() const override { return false; }

 private:
  std::string dir_, state_;
  int pid_ = 0;
  uint16_t nfs_port_ = 0, mount_port_ = 0;
};

enum class Peer { kNfsx, kGanesha };

inline std::string PeerName(const ::testing::TestParamInfo<Peer>& info) {
  return info.param == Peer::kNfsx ? "Nfsx" : "Ganesha";
}

// A test with a server of the given kind and a connected client.
class ClientTest : public ::testing::TestWithParam<Peer> {
 protected:
  void SetUp() override {
    if (GetParam() == Peer::kNfsx) {
      server_ = std::make_unique<NfsxServer>();
    } else {
      server_ = std::make_unique<GaneshaServer>();
    }
    std::string why;
    if (!server_->Start(&why)) {
      if (GetParam() == Peer::kGanesha) GTEST_SKIP() << why;
      FAIL() << why;
    }
    client_ = Connect();
    ASSERT_NE(client_, nullptr);
  }
  void TearDown() override {
    client_.reset();
    if (server_) server_->Stop();
  }

  std::unique_ptr<Client> Connect(ClientOptions o = {}) {
    std::string error;
    auto c = Client::Connect(server_->Url(), o, &error);
    EXPECT_TRUE(c.has_value()) << error;
    return c ? std::move(*c) : nullptr;
  }

  std::unique_ptr<TestServer> server_;
  std::unique_ptr<Client> client_;
};

// The NFS port of a test server's URL, and the URL with another one (a proxy's).
inline uint16_t NfsPortOf(const std::string& url) {
  std::smatch m;
  if (!std::regex_search(url, m, std::regex("nfsport=([0-9]+)"))) return 0;
  return static_cast<uint16_t>(std::stoi(m[1]));
}
inline std::string WithNfsPort(const std::string& url, uint16_t port) {
  return std::regex_replace(url, std::regex("nfsport=[0-9]+"), "nfsport=" + std::to_string(port));
}

inline std::span<const std::byte> Bytes(const std::string& s) {
  return std::as_bytes(std::span(s));
}

inline std::string Pattern(size_t n, uint32_t seed) {
  std::string s(n, '\0');
  uint32_t x = seed * 2654435761u + 1;
  for (auto& c : s) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    c = static_cast<char>(x);
  }
  return s;
}

}  // namespace nfsx::client::testing
