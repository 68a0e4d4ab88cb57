#include "bench/context.h"

#include "bench/workloads.h"

namespace nfsx::bench {

Context::Snapshot Context::Take() const {
  Snapshot s;
  s.wire = driver_.counters();
  if (server_) s.server = server_->calls();
  if (options_.server_pid > 0) s.server_cpu = ProcessCpuSeconds(options_.server_pid);
  s.client_cpu = SelfCpuSeconds();
  return s;
}

Json Context::Between(const Snapshot& before, const Snapshot& now) const {
  Json out = Json::MakeObject();
  out.Set("wire", now.wire && before.wire ? WireJson(*now.wire - *before.wire) : Json());
  out.Set("server_calls",
          now.server && before.server ? ServerCallsJson(*now.server - *before.server) : Json());
  std::optional<CpuSeconds> server;
  if (now.server_cpu && before.server_cpu) server = *now.server_cpu - *before.server_cpu;
  out.Set("server_cpu_seconds", server ? Json(server->total()) : Json());
  out.Set("server_user_cpu_seconds", server ? Json(server->user) : Json());
  out.Set("client_cpu_seconds", now.client_cpu - before.client_cpu);
  return out;
}

const std::vector<Workload>& Workloads() {
  static const std::vector<Workload> kAll = {
      {"iozone", "write/rewrite/read/reread of one file per record size (seeds 000, 004)",
       &RunIozone},
      {"throughput", "N threads each write, rewrite, read their own file (seed 003)",
       &RunThroughput},
      {"append", "O_APPEND writes: one open, open/close per write, naive (seed 001)", &RunAppend},
      {"randread", "T threads of 4 KiB random reads of one cached file (seed 002)", &RunRandRead},
      {"randwrite", "T threads of 4 KiB random O_DIRECT writes of one file", &RunRandWrite},
      {"asyncread", "one thread, D 4 KiB random O_DIRECT reads in flight (async API)",
       &RunAsyncRead},
      {"asyncwrite", "one thread, D 4 KiB random O_DIRECT writes in flight (async API)",
       &RunAsyncWrite},
      {"ping", "NULL RPC round trips, 1 and many in flight, and raw loopback TCP", &RunPing},
  };
  return kAll;
}

}  // namespace nfsx::bench
