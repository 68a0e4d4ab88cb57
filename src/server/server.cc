#include "server/server.h"

#include <fmt/format.h>
#include <sys/resource.h>

#include "base/logging.h"
#include "proto/mount3_types.h"
#include "proto/portmap_types.h"
#include "server/nfs3/procedures.h"
#include "server/state_dir.h"
#include "vfs/fault_fs.h"
#include "vfs/local/local_fs.h"
#include "vfs/memory/memory_fs.h"

namespace nfsx::server {
namespace {

// Each cached file holds a descriptor: allow as many as the hard limit permits.
void RaiseFileLimit() {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
}

}  // namespace

Server::Server(ExportTable exports, ServerOptions options)
    : exports_(std::move(exports)), options_(std::move(options)), dispatcher_(options_.drc) {}

Server::~Server() { Stop(); }

Result<std::unique_ptr<Server>> Server::Create(ExportTable exports, ServerOptions options,
                                               std::string* error) {
  RaiseFileLimit();
  auto key = LoadOrCreateHandleKey(options.state_dir);
  if (!key) {
    *error =
        fmt::format("state directory {}: {}", options.state_dir, std::strerror(key.error().code));
    return std::unexpected(key.error());
  }
  std::unique_ptr<Server> s(new Server(std::move(exports), std::move(options)));
  s->core_ = std::make_unique<Core>(*key, &s->exports_, s->options_.core);
  for (const Export& e : s->exports_.exports()) {
    std::unique_ptr<vfs::Filesystem> fs;
    if (s->options_.make_fs) {
      auto made = s->options_.make_fs(e);
      if (!made) {
        *error = fmt::format("export {}: {}", e.path, std::strerror(made.error().code));
        return std::unexpected(made.error());
      }
      fs = std::move(*made);
    } else if (s->options_.backend == Backend::kMemory) {
      fs = vfs::MakeMemoryFs();
    } else {
      auto local = vfs::MakeLocalFs(e.path);
      if (!local) {
        int code = local.error().code;
        *error = fmt::format("export {}: {}", e.path,
                             code == EPERM ? "opening files by handle needs CAP_DAC_READ_SEARCH "
                                             "(run as root, or use --backend memfs)"
                                           : std::strerror(code));
        return std::unexpected(local.error());
      }
      fs = std::move(*local);
    }
    if (s->options_.test_lose_unsynced_writes) {
      auto faulty = std::make_unique<vfs::FaultInjectingFs>(std::move(fs));
      std::string journal =
          fmt::format("{}/unsynced-{}.journal", s->options_.state_dir, e.export_id);
      auto replayed = faulty->LoseUnsyncedWritesAtRestart(journal);
      if (!replayed) {
        *error = fmt::format("export {}: journal {}: {}", e.path, journal,
                             std::strerror(replayed.error().code));
        return std::unexpected(replayed.error());
      }
      log::Warn(
          "export {}: testing crashes: {} ranges ({} bytes) written and never synced before the "
          "last stop were overwritten, as a power cut would have lost them ({} of removed files)",
          e.path, replayed->ranges, replayed->bytes, replayed->stale);
      fs = std::move(faulty);
    }
    if (auto added = s->core_->AddExport(e, std::move(fs)); !added) {
      *error = fmt::format("export {}: its file handles do not fit in 64 bytes", e.path);
      return std::unexpected(added.error());
    }
  }
  s->mount_ = std::make_unique<MountService>(*s->core_, s->exports_, s->options_.max_mounts);
  s->dispatcher_.Register(nfs3proc::MakeNfs3Program(*s->core_));
  s->dispatcher_.Register(s->mount_->MakeProgram());
  s->transport_ = std::make_unique<rpc::TcpServer>(s->dispatcher_, s->options_.transport);
  return s;
}

Result<void> Server::Start(std::string* error) {
  auto bind = [&](uint16_t port, const char* what) -> Result<uint16_t> {
    auto bound = transport_->Listen(options_.listen, port);
    if (!bound) {
      *error = fmt::format("{} port {} on {}: {}", what, port, options_.listen,
                           std::strerror(bound.error().code));
    }
    return bound;
  };
  auto nfs = bind(options_.nfs_port, "NFS");
  if (!nfs) return std::unexpected(nfs.error());
  nfs_port_ = *nfs;
  auto mnt = bind(options_.mount_port, "MOUNT");
  if (!mnt) return std::unexpected(mnt.error());
  mount_port_ = *mnt;
  if (options_.portmap) {
    // The port mapper names the ports we just bound; it must be registered
    // before the transport starts.
    auto pm = bind(options_.portmap_port, "portmap");
    if (!pm) return std::unexpected(pm.error());
    portmap_port_ = *pm;
    using portmap::mapping;
    constexpr uint32_t kTcp = portmap::IPPROTO_TCP_;
    portmap_ = std::make_unique<PortmapService>(
        std::vector<mapping>{{portmap::PMAP_PROGRAM, portmap::PMAP_VERS, kTcp, portmap_port_},
                             {nfs3::NFS_PROGRAM, nfs3::NFS_V3, kTcp, nfs_port_},
                             {mount3::MOUNT_PROGRAM, mount3::MOUNT_V3, kTcp, mount_port_}});
    dispatcher_.Register(portmap_->MakeProgram());
  }
  transport_->Start();
  started_ = true;
  maintenance_ = std::thread([this] { Maintenance(); });
  return {};
}

void Server::Maintenance() {
  std::unique_lock lock(maintenance_mu_);
  while (!stopping_) {
    maintenance_cv_.wait_for(lock, std::chrono::seconds(1));
    if (stopping_) break;
    lock.unlock();
    core_->open_files().Sweep();
    core_->client_names().Refresh();
    lock.lock();
  }
}

void Server::Stop() {
  if (!started_) return;
  started_ = false;
  {
    std::lock_guard lock(maintenance_mu_);
    stopping_ = true;
  }
  maintenance_cv_.notify_all();
  if (maintenance_.joinable()) maintenance_.join();
  transport_->Stop();
  core_->open_files().CloseAll();
}

std::string Server::StatsReport() const {
  std::string out;
  auto& c = transport_->counters();
  out += fmt::format("event loops {}\n", transport_->io_threads());
  out += fmt::format("connections: {} accepted, {} open; records {}; bytes in {} out {}\n",
                     c.accepted.load(), c.open.load(), c.records.Load(), c.bytes_in.Load(),
                     c.bytes_out.Load());
  out += fmt::format("reply memory {} KiB, peak {} KiB; connections held for it {} times\n",
                     transport_->reply_memory() >> 10, transport_->reply_memory_peak() >> 10,
                     c.memory_holds.load());
  out += fmt::format(
      "receive buffers {} KiB, peak {} KiB; receive memory {} KiB, peak {} KiB; reads paused "
      "for it {} times, connections closed holding it {}\n",
      c.receive_buffer_bytes.load() >> 10, c.receive_buffer_peak.load() >> 10,
      transport_->receive_memory() >> 10, transport_->receive_memory_peak() >> 10,
      c.receive_memory_holds.load(), c.closed_receive_memory.load());
  out += fmt::format("calls moved off the event loops to wait on the disk: {}\n",
                     c.moved_off_loop.load());
  out += fmt::format("calls refused {}, verifier rotations {}\n", dispatcher_.garbage_calls(),
                     core_->verifiers().rotations());
  auto drc = dispatcher_.drc().stats();
  out += fmt::format(
      "duplicate request cache: {} hits, {} entries, {} KiB namespace + {} KiB write replies, "
      "{} evicted before their window\n",
      drc.hits, drc.entries, drc.bytes[0] >> 10, drc.bytes[1] >> 10, drc.early_evictions);
  out += fmt::format("{:<8} {:<12} {:>10} {:>10} {:>8} {:>8} {:>10}\n", "program", "procedure",
                     "calls", "avg_us", "p50_us", "p99_us", "max_us");
  for (const rpc::Program& p : dispatcher_.programs()) {
    for (const rpc::Procedure& proc : p.procs) {
      uint64_t calls = proc.stats.Calls();
      if (calls == 0) continue;
      out += fmt::format("{:<8} {:<12} {:>10} {:>10.1f} {:>8} {:>8} {:>10.1f}\n", p.name, proc.name,
                         calls, proc.stats.TotalNs() / 1000.0 / calls,
                         proc.stats.PercentileMicros(0.5), proc.stats.PercentileMicros(0.99),
                         proc.stats.MaxNs() / 1000.0);
    }
  }
  return out;
}

}  // namespace nfsx::server
