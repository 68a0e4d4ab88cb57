// `nfsx serve`: export local directories over NFSv3.
#include <fmt/format.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <filesystem>
#include <memory>

#include "apps/nfsx/commands.h"
#include "base/logging.h"
#include "server/server.h"

namespace nfsx::app {
namespace {

struct ServeArgs {
  std::string dir;
  std::string exports_file;
  std::string listen = "127.0.0.1";
  uint16_t port = 2049;
  uint16_t mount_port = 20048;
  bool portmap = false;
  uint16_t portmap_port = 111;
  std::string state_dir;
  int threads = 0;  // one per usable CPU
  int workers = 8;
  std::string backend = "localfs";
  size_t max_record = 4u << 20;
  uint32_t max_io = 1u << 20;
  // Per-connection and server-wide limits: rpc::TcpServerOptions says what each does.
  size_t max_connections = rpc::TcpServerOptions{}.max_connections;
  size_t max_queued_reply_bytes = rpc::TcpServerOptions{}.max_queued_reply_bytes;
  size_t max_calls_in_flight = rpc::TcpServerOptions{}.max_calls_in_flight;
  size_t max_reply_memory = rpc::TcpServerOptions{}.max_reply_memory;
  size_t max_receive_memory = rpc::TcpServerOptions{}.max_receive_memory;
  int64_t idle_timeout = rpc::TcpServerOptions{}.idle_timeout.count();
  int64_t stall_timeout = rpc::TcpServerOptions{}.stall_timeout.count();
  int64_t send_timeout = rpc::TcpServerOptions{}.send_timeout.count();
  int64_t drc_window = rpc::DrcOptions{}.window.count();
  size_t drc_memory_mib = (rpc::DrcOptions{}.namespace_bytes + rpc::DrcOptions{}.write_bytes) >> 20;
  int stats_interval = 0;
  std::string ports_file;
  bool test_lose_unsynced_writes = false;
};

std::string DefaultStateDir() {
  if (geteuid() == 0) return "/var/lib/nfsx";
  if (const char* xdg = std::getenv("XDG_STATE_HOME")) return std::string(xdg) + "/nfsx";
  if (const char* home = std::getenv("HOME")) return std::string(home) + "/.local/state/nfsx";
  return ".nfsx-state";
}

void PrintHowToMount(const server::Server& s, const ServeArgs& a) {
  std::string host = a.listen == "0.0.0.0" || a.listen == "::" ? "127.0.0.1" : a.listen;
  for (const server::Export& e : s.exports().exports()) {
    std::string path = e.path == "/" ? "" : e.path;
    fmt::print("nfsx: exporting {} (export id {})\n", e.path, e.export_id);
    fmt::print("  libnfs URL:  nfs://{}{}/?version=3&nfsport={}&mountport={}\n", host, path,
               s.nfs_port(), s.mount_port());
    fmt::print(
        "  Linux:       mount -t nfs -o vers=3,proto=tcp,port={},mountport={},mountproto=tcp,"
        "nolock {}:{} /mnt\n",
        s.nfs_port(), s.mount_port(), host, e.path);
  }
  if (s.portmap_port()) fmt::print("  portmapper on port {}\n", s.portmap_port());
  fmt::print("Serving until Ctrl-C (SIGUSR1 prints statistics).\n");
  std::fflush(stdout);
}

int RunServe(const ServeArgs& a) {
  std::string error;
  server::ExportTable table;
  if (!a.exports_file.empty()) {
    auto loaded = server::ExportTable::Load(a.exports_file, &error);
    if (!loaded) {
      fmt::print(stderr, "nfsx serve: {}\n", error);
      return 2;
    }
    table = std::move(*loaded);
  } else {
    std::string dir = a.dir.empty() ? "." : a.dir;
    char resolved[PATH_MAX];
    if (!realpath(dir.c_str(), resolved)) {
      fmt::print(stderr, "nfsx serve: {}: {}\n", dir, std::strerror(errno));
      return 2;
    }
    struct stat st;
    if (stat(resolved, &st) != 0 || !S_ISDIR(st.st_mode)) {
      fmt::print(stderr, "nfsx serve: {}: not a directory\n", dir);
      return 2;
    }
    table = server::ExportTable::Single(resolved);
  }

  server::ServerOptions o;
  o.listen = a.listen;
  o.nfs_port = a.port;
  o.mount_port = a.mount_port;
  o.portmap = a.portmap;
  o.portmap_port = a.portmap_port;
  o.state_dir = a.state_dir.empty() ? DefaultStateDir() : a.state_dir;
  o.backend = a.backend == "memfs" ? server::Backend::kMemory : server::Backend::kLocal;
  o.transport.io_threads = a.threads;
  o.transport.worker_threads = a.workers;
  o.transport.max_record = a.max_record;
  o.transport.max_connections = a.max_connections;
  o.transport.max_queued_reply_bytes = a.max_queued_reply_bytes;
  o.transport.max_calls_in_flight = a.max_calls_in_flight;
  o.transport.max_reply_memory = a.max_reply_memory;
  o.transport.max_receive_memory = a.max_receive_memory;
  o.transport.idle_timeout = std::chrono::seconds(a.idle_timeout);
  o.transport.stall_timeout = std::chrono::seconds(a.stall_timeout);
  o.transport.send_timeout = std::chrono::seconds(a.send_timeout);
  o.drc.window = std::chrono::seconds(a.drc_window);
  // An eighth for WRITE replies, the rest for the namespace operations that matter.
  o.drc.write_bytes = (a.drc_memory_mib << 20) / 8;
  o.drc.namespace_bytes = (a.drc_memory_mib << 20) - o.drc.write_bytes;
  o.core.rtmax = o.core.wtmax = a.max_io;
  o.test_lose_unsynced_writes = a.test_lose_unsynced_writes;
  if (a.max_io + 4096 > a.max_record) {
    fmt::print(stderr, "nfsx serve: --max-io must leave 4 KiB of --max-record for headers\n");
    return 2;
  }
  if (o.state_dir.find('/') != std::string::npos) {
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(o.state_dir).parent_path(), ec);
  }

  // Signals are taken synchronously by this thread; every other thread blocks them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  auto server = server::Server::Create(std::move(table), o, &error);
  if (!server) {
    fmt::print(stderr, "nfsx serve: {}\n", error);
    return 1;
  }
  if (auto started = (*server)->Start(&error); !started) {
    fmt::print(stderr, "nfsx serve: cannot listen: {}\n", error);
    return 1;
  }
  if (!a.ports_file.empty()) {
    // Written after binding, renamed into place: a script polling for it sees all or nothing.
    std::string tmp = a.ports_file + ".tmp";
    if (FILE* f = std::fopen(tmp.c_str(), "w")) {
      fmt::print(f, "{} {} {}\n", (*server)->nfs_port(), (*server)->mount_port(),
                 (*server)->portmap_port());
      std::fclose(f);
      std::rename(tmp.c_str(), a.ports_file.c_str());
    }
  }
  PrintHowToMount(**server, a);
  for (;;) {
    int sig = 0;
    if (a.stats_interval > 0) {
      timespec timeout{a.stats_interval, 0};
      sig = sigtimedwait(&signals, nullptr, &timeout);
      if (sig < 0) {
        fmt::print(stderr, "{}", (*server)->StatsReport());
        continue;
      }
    } else if (sigwait(&signals, &sig) != 0) {
      continue;
    }
    if (sig == SIGUSR1) {
      fmt::print(stderr, "{}", (*server)->StatsReport());
      continue;
    }
    break;
  }
  log::Info("shutting down");
  (*server)->Stop();
  fmt::print(stderr, "{}", (*server)->StatsReport());
  return 0;
}

}  // namespace

Runner AddServe(CLI::App& app) {
  auto a = std::make_shared<ServeArgs>();
  CLI::App* cmd = app.add_subcommand("serve", "Export local directories over NFSv3");
  cmd->footer(
      "With DIR, exports DIR (MOUNT path = its absolute path) read-write to loopback clients\n"
      "only, root_squash, insecure (unprivileged source ports allowed), sync.\n"
      "With --exports FILE, exports what FILE says, in exports(5) syntax, e.g.\n"
      "  /srv/a 127.0.0.1(rw,sync,root_squash) 192.0.2.0/24(ro)\n"
      "Options: rw ro root_squash no_root_squash all_squash anonuid=N anongid=N secure\n"
      "insecure sync async fsid=N; clients: address, CIDR, host name, *.pattern, '*'.\n"
      "`async` skips the fsync of directories after namespace changes; data writes\n"
      "always reach the stability they report.");
  cmd->add_option("dir", a->dir, "Directory to export (default: the current directory)");
  cmd->add_option("--exports", a->exports_file, "exports(5)-syntax file (instead of DIR)")
      ->excludes(cmd->get_option("dir"));
  cmd->add_option("--listen", a->listen, "Address to listen on")->capture_default_str();
  cmd->add_option("--port", a->port, "NFS port (0 picks a free one)")->capture_default_str();
  cmd->add_option("--mount-port", a->mount_port, "MOUNT port (0 picks a free one)")
      ->capture_default_str();
  cmd->add_flag("--portmap", a->portmap, "Also answer portmap v2 (GETPORT, DUMP)");
  cmd->add_option("--portmap-port", a->portmap_port, "Port of the built-in portmapper")
      ->capture_default_str();
  cmd->add_option("--state-dir", a->state_dir,
                  "Where the file handle key lives (default /var/lib/nfsx as root, else "
                  "~/.local/state/nfsx)");
  cmd->add_option("--threads", a->threads,
                  "Event loops (I/O threads); 0: one per CPU the server may run on")
      ->capture_default_str();
  cmd->add_option("--workers", a->workers, "Worker threads for calls that wait on the disk")
      ->capture_default_str();
  cmd->add_option("--backend", a->backend, "localfs (the directory) or memfs (in memory)")
      ->check(CLI::IsMember({"localfs", "memfs"}))
      ->capture_default_str();
  cmd->add_option("--max-record", a->max_record, "Largest RPC record accepted, in bytes")
      ->capture_default_str();
  cmd->add_option("--max-io", a->max_io, "rtmax/wtmax advertised in FSINFO, in bytes")
      ->capture_default_str();
  cmd->add_option("--max-connections", a->max_connections,
                  "Connections open at once; more are closed at accept (logged once per episode)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--max-queued-reply-bytes", a->max_queued_reply_bytes,
                  "Per connection: reply bytes queued for a client beyond which its calls are "
                  "no longer read")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--max-reply-memory", a->max_reply_memory,
                  "All connections together: reply bytes queued and calls being served beyond "
                  "which connections with replies outstanding run no more calls (0: no limit)")
      ->capture_default_str();
  cmd->add_option("--max-receive-memory", a->max_receive_memory,
                  "All connections together: bytes of calls being received beyond 64 KiB per "
                  "connection; a connection that needs more waits, not reading (0: no limit; "
                  "else at least twice --max-record)")
      ->capture_default_str();
  cmd->add_option("--max-calls-in-flight", a->max_calls_in_flight,
                  "Per connection: calls being served at once beyond which its calls are no "
                  "longer read")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--idle-timeout", a->idle_timeout,
                  "Seconds without any traffic after which a connection is closed")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--stall-timeout", a->stall_timeout,
                  "Seconds a half-received record may wait for its next byte")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--send-timeout", a->send_timeout,
                  "Seconds a connection's queued replies may go unread before it is closed")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--drc-window", a->drc_window,
                  "Seconds the duplicate request cache keeps the replies of CREATE, REMOVE, "
                  "RENAME... for a retransmission after a reconnect")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--drc-memory", a->drc_memory_mib,
                  "MiB for the duplicate request cache (an eighth of it for WRITE replies)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--ports-file", a->ports_file,
                  "Once listening, write \"NFS_PORT MOUNT_PORT PORTMAP_PORT\" to this file "
                  "(for scripts using port 0)");
  cmd->add_flag("--test-lose-unsynced-writes", a->test_lose_unsynced_writes,
                "For crash tests only: journal every write (in the state directory), and at "
                "start overwrite what the last run wrote and never synced, as a power cut "
                "would lose it (a SIGKILL alone loses nothing the kernel holds)");
  cmd->add_option("--stats-interval", a->stats_interval,
                  "Print per-procedure statistics every N seconds (0: only at exit)")
      ->capture_default_str();
  return [a, cmd] { return cmd->parsed() ? RunServe(*a) : -1; };
}

}  // namespace nfsx::app
