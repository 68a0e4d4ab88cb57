// ping: NULL RPC round trips to the NFS program, one at a time and many in flight, and the
// same message sizes over a raw loopback TCP connection: the floor every other figure sits
// on. The target is a NULL call within 1.3x of the raw round trip.
#include <fmt/format.h>
#include <unistd.h>

#include "bench/io_util.h"
#include "bench/loopback.h"
#include "bench/table.h"
#include "bench/workloads.h"
#include "proto/nfs3_types.h"
#include "rpc/message.h"

namespace nfsx::bench {
namespace {

// The bytes of a NULL call (AUTH_SYS, this host's name, no groups: what the nfsx driver
// sends) and of its reply, record marks included.
std::pair<size_t, size_t> NullMessageSizes() {
  rpc::Credential c;
  c.flavor = rpc::auth_flavor::AUTH_SYS;
  char host[256] = "nfsx";
  gethostname(host, sizeof(host) - 1);
  c.machinename = host;
  OutBuffer call;
  xdr::XdrEncoder e(&call);
  rpc::EncodeCallHeader(e, 1, nfs3::NFS_PROGRAM, nfs3::NFS_V3, 0, c);
  OutBuffer reply;
  xdr::XdrEncoder r(&reply);
  rpc::EncodeAcceptedReply(r, 1, rpc::accept_stat::SUCCESS);
  return {call.total_size() + 4, reply.total_size() + 4};
}

Json Point(const load::Histogram& h, double seconds) {
  Json p = Json::MakeObject();
  p.Set("calls", h.count());
  p.Set("seconds", seconds);
  p.Set("calls_per_s", seconds > 0 ? static_cast<double>(h.count()) / seconds : 0.0);
  p.Set("latency_us", LatencyJson(h));
  return p;
}

}  // namespace

WorkloadOutcome RunPing(Context& ctx) {
  const BenchOptions& o = ctx.options();
  const uint64_t calls = o.ops ? o.ops : 20000;
  const int depth = o.depth > 0 ? o.depth : 16;
  const uint64_t warm = std::min<uint64_t>(1000, calls / 10 + 1);
  auto [req, rep] = NullMessageSizes();
  WorkloadOutcome out;
  Json results = Json::MakeObject();
  results.Set("calls", calls);
  results.Set("in_flight_many", depth);
  results.Set("request_bytes", static_cast<uint64_t>(req));
  results.Set("reply_bytes", static_cast<uint64_t>(rep));
  Table table(
      {"round trips", "in flight", "calls/s", "mean us", "p50 us", "p99 us", "p50 / raw TCP"});

  struct Measure {
    const char* key;
    const char* label;
    bool nfs;
    int in_flight;
  };
  const Measure kMeasures[] = {{"tcp_1", "raw loopback TCP", false, 1},
                               {"null_1", "NFS NULL", true, 1},
                               {"tcp_many", "raw loopback TCP", false, depth},
                               {"null_many", "NFS NULL", true, depth}};
  double raw_p50[2] = {0, 0};
  for (const Measure& m : kMeasures) {
    load::Histogram warm_h, h;
    ctx.progress().Phase(fmt::format("ping {} x{}", m.label, m.in_flight), calls, "calls");
    auto run = [&](uint64_t n, load::Histogram* into) -> Result<void> {
      if (m.nfs) return ctx.driver().Ping(m.in_flight, n, into);
      return LoopbackRoundTrips(req, rep, m.in_flight, n, into);
    };
    if (auto w = run(warm, &warm_h); !w) {
      if (m.nfs && w.error().code == ENOTSUP) {
        ctx.Note(fmt::format("driver {} sends no RPCs: NULL round trips not measured",
                             ctx.driver().kind()));
        results.Set(m.key, Json());
        continue;
      }
      out.error = fmt::format("{}: {}", m.label, ErrorString(w.error()));
      break;
    }
    auto start = Clock::now();
    auto r = run(calls, &h);
    double secs = Since(start);
    if (!r) {
      out.error = fmt::format("{}: {}", m.label, ErrorString(r.error()));
      break;
    }
    Json p = Point(h, secs);
    double p50 = static_cast<double>(h.Quantile(0.5));
    int slot = m.in_flight == 1 ? 0 : 1;
    if (!m.nfs) raw_p50[slot] = p50;
    double ratio = raw_p50[slot] > 0 ? p50 / raw_p50[slot] : 0;
    if (m.nfs) p.Set("p50_ratio_to_tcp", ratio);
    table.Row({m.label, fmt::format("{}", m.in_flight), Fixed(p.Get("calls_per_s").AsNumber(), 0),
               Fixed(h.mean() / 1000, 1), Fixed(p50 / 1000, 1),
               Fixed(static_cast<double>(h.Quantile(0.99)) / 1000, 1),
               m.nfs ? Fixed(ratio, 2) : "1.00"});
    results.Set(m.key, std::move(p));
  }
  ctx.progress().Clear();
  std::printf(
      "ping: %llu round trips each; NULL call %zu bytes, reply %zu bytes (record marks "
      "included)\n",
      static_cast<unsigned long long>(calls), req, rep);
  table.Print(stdout);
  const Json& null1 = results.Get("null_1");
  const Json& tcp1 = results.Get("tcp_1");
  if (!null1.is_null() && !tcp1.is_null()) {
    results.Set("null_to_tcp_p50", null1.Get("p50_ratio_to_tcp"));
    results.Set("null_to_tcp_mean",
                null1.Path("latency_us.mean").AsNumber() / tcp1.Path("latency_us.mean").AsNumber());
  }
  out.results = std::move(results);
  return out;
}

}  // namespace nfsx::bench
