#include "bench/self_server.h"

#include <fmt/format.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>

#include "proto/nfs3_types.h"
#include "server/server.h"

namespace nfsx::bench {
namespace {

Result<std::string> MakeTempDir(const std::string& parent, const char* tag, std::string* error) {
  std::string base = parent;
  if (base.empty()) {
    const char* t = std::getenv("TMPDIR");
    base = t && *t ? t : "/tmp";
  }
  std::string tmpl = base + "/nfsx-bench-" + tag + "-XXXXXX";
  if (!mkdtemp(tmpl.data())) {
    *error = fmt::format("cannot create a directory in {}: {}", base, std::strerror(errno));
    return FailErrno();
  }
  return tmpl;
}

}  // namespace

Result<std::unique_ptr<SelfServer>> SelfServer::Start(const std::string& backend,
                                                      const std::string& parent,
                                                      std::string* error) {
  std::unique_ptr<SelfServer> s(new SelfServer());
  s->backend_ = backend;
  auto dir = MakeTempDir(parent, "export", error);
  if (!dir) return std::unexpected(dir.error());
  s->dir_ = *dir;
  auto state = MakeTempDir(parent, "state", error);
  if (!state) return std::unexpected(state.error());
  s->state_ = *state;
  // Clients other than root (a libnfs driver run by a user) must be able to write in it.
  chmod(s->dir_.c_str(), 01777);
  char resolved[PATH_MAX];
  if (!realpath(s->dir_.c_str(), resolved)) return FailErrno();
  s->dir_ = resolved;

  server::ServerOptions o;
  o.nfs_port = 0;
  o.mount_port = 0;
  o.state_dir = s->state_;
  o.backend = backend == "memfs" ? server::Backend::kMemory : server::Backend::kLocal;
  // As `nfsx serve DIR` exports, but without root squashing, as the Ganesha peer is set up
  // (tests/peers/ganesha.sh): a memfs root belongs to root, and squashed root could not
  // write in it.
  auto table = server::ExportTable::Parse(
      s->dir_ + " 127.0.0.1(rw,sync,insecure,no_root_squash) ::1(rw,sync,insecure,no_root_squash)",
      error);
  if (!table) return std::unexpected(table.error());
  auto created = server::Server::Create(std::move(*table), o, error);
  if (!created) return std::unexpected(created.error());
  s->server_ = std::move(*created);
  if (auto started = s->server_->Start(error); !started) {
    return std::unexpected(started.error());
  }
  return s;
}

SelfServer::~SelfServer() {
  if (server_) server_->Stop();
  server_.reset();
  std::error_code ec;
  if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  if (!state_.empty()) std::filesystem::remove_all(state_, ec);
}

std::string SelfServer::url() const {
  return fmt::format("nfs://127.0.0.1{}?version=3&nfsport={}&mountport={}", dir_,
                     server_->nfs_port(), server_->mount_port());
}

std::string SelfServer::description() const {
  return fmt::format("nfsx server in this process ({} backend, export {}, port {})", backend_, dir_,
                     server_->nfs_port());
}

ServerCalls SelfServer::calls() const {
  ServerCalls out;
  for (const rpc::Program& p : server_->dispatcher().programs()) {
    if (p.prog != nfs3::NFS_PROGRAM) continue;
    for (size_t i = 0; i < p.procs.size() && i < 22; ++i) {
      out.calls[i] = p.procs[i].stats.Calls();
    }
  }
  return out;
}

}  // namespace nfsx::bench
