// Server: wires exports, backends, the NFS/MOUNT/portmap programs and the TCP
// transport together. The `nfsx serve` command is a thin shell around it, and
// tests start it in process on port 0.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "rpc/dispatcher.h"
#include "rpc/tcp_server.h"
#include "server/core.h"
#include "server/export_config.h"
#include "server/mount3/mount_service.h"
#include "server/portmap_service.h"

namespace nfsx::server {

enum class Backend { kLocal, kMemory };

struct ServerOptions {
  std::string listen = "127.0.0.1";
  uint16_t nfs_port = 2049;  // 0 picks a free port
  uint16_t mount_port = 20048;
  bool portmap = false;
  uint16_t portmap_port = 111;
  std::string state_dir;  // required: holds the file handle key
  Backend backend = Backend::kLocal;
  // When set, makes each export's filesystem instead of `backend` (tests wrap
  // backends in fault injectors this way).
  std::function<Result<std::unique_ptr<vfs::Filesystem>>(const Export&)> make_fs;
  rpc::TcpServerOptions transport;
  rpc::DrcOptions drc;
  size_t max_mounts = 4096;  // entries in the MOUNT list (DUMP)
  // Crash tests only: at start, data written and never synced before the last stop is
  // overwritten, as a power cut would lose it (vfs::UnsyncedWriteJournal).
  bool test_lose_unsynced_writes = false;
  CoreOptions core;
};

class Server {
 public:
  // Opens every export's backend and loads the handle key. Nothing listens yet.
  static Result<std::unique_ptr<Server>> Create(ExportTable exports, ServerOptions options,
                                                std::string* error);
  ~Server();

  // Binds the ports and starts serving. On failure *error says which port.
  Result<void> Start(std::string* error);
  // Stops accepting, answers calls in flight, syncs and closes open files.
  void Stop();

  uint16_t nfs_port() const { return nfs_port_; }
  uint16_t mount_port() const { return mount_port_; }
  uint16_t portmap_port() const { return portmap_port_; }
  const ExportTable& exports() const { return exports_; }
  Core& core() { return *core_; }
  const rpc::Dispatcher& dispatcher() const { return dispatcher_; }
  // For harnesses that feed call records to the dispatcher without sockets
  // (fuzz/server_dispatch_fuzz.cc): routing a call (Accept, Run) and registering the port
  // mapper, which Start() does only once it has bound its port, need it non-const.
  rpc::Dispatcher& dispatcher_for_testing() { return dispatcher_; }
  const rpc::TcpServer& transport() const { return *transport_; }

  // Per-procedure counts and latency, and transport counters, as a table.
  std::string StatsReport() const;

 private:
  Server(ExportTable exports, ServerOptions options);
  void Maintenance();

  ExportTable exports_;
  ServerOptions options_;
  std::unique_ptr<Core> core_;
  std::unique_ptr<MountService> mount_;
  std::unique_ptr<PortmapService> portmap_;
  rpc::Dispatcher dispatcher_;
  std::unique_ptr<rpc::TcpServer> transport_;
  uint16_t nfs_port_ = 0, mount_port_ = 0, portmap_port_ = 0;

  std::thread maintenance_;
  std::mutex maintenance_mu_;
  std::condition_variable maintenance_cv_;
  bool stopping_ = false;
  bool started_ = false;
};

}  // namespace nfsx::server
