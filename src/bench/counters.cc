#include "bench/counters.h"

#include <cctype>
#include <string>

#include "proto/nfs3_types.h"

namespace nfsx::bench {
namespace {

std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

Json CallsJson(const uint64_t (&calls)[22]) {
  Json out = Json::MakeObject();
  for (uint32_t i = 0; i < 22; ++i) out.Set(Upper(nfs3::ProcName(i)), calls[i]);
  return out;
}

}  // namespace

WireStats operator+(const WireStats& a, const WireStats& b) {
  WireStats s = a;
  s.rpc_calls += b.rpc_calls;
  s.retransmits += b.retransmits;
  s.reconnects += b.reconnects;
  for (int i = 0; i < 22; ++i) s.nfs_calls[i] += b.nfs_calls[i];
  s.write_bytes += b.write_bytes;
  s.read_bytes += b.read_bytes;
  s.read_bytes_landed += b.read_bytes_landed;
  s.resent_bytes += b.resent_bytes;
  s.commits_ahead += b.commits_ahead;
  s.invalidations += b.invalidations;
  return s;
}

WireStats operator-(const WireStats& a, const WireStats& b) {
  WireStats s = a;
  s.rpc_calls -= b.rpc_calls;
  s.retransmits -= b.retransmits;
  s.reconnects -= b.reconnects;
  for (int i = 0; i < 22; ++i) s.nfs_calls[i] -= b.nfs_calls[i];
  s.write_bytes -= b.write_bytes;
  s.read_bytes -= b.read_bytes;
  s.read_bytes_landed -= b.read_bytes_landed;
  s.resent_bytes -= b.resent_bytes;
  s.commits_ahead -= b.commits_ahead;
  s.invalidations -= b.invalidations;
  return s;
}

Json WireJson(const WireStats& s) {
  Json out = Json::MakeObject();
  out.Set("calls", CallsJson(s.nfs_calls));
  out.Set("rpc_calls", s.rpc_calls);
  out.Set("retransmits", s.retransmits);
  out.Set("reconnects", s.reconnects);
  out.Set("write_bytes", s.write_bytes);
  out.Set("read_bytes", s.read_bytes);
  out.Set("read_bytes_landed", s.read_bytes_landed);
  out.Set("resent_bytes", s.resent_bytes);
  out.Set("commits_ahead", s.commits_ahead);
  out.Set("invalidations", s.invalidations);
  return out;
}

uint64_t WireCalls(const Json& wire, const char* proc) {
  return static_cast<uint64_t>(wire.Get("calls").Get(proc).AsNumber());
}

ServerCalls operator-(const ServerCalls& a, const ServerCalls& b) {
  ServerCalls s = a;
  for (int i = 0; i < 22; ++i) s.calls[i] -= b.calls[i];
  return s;
}

Json ServerCallsJson(const ServerCalls& s) { return CallsJson(s.calls); }

}  // namespace nfsx::bench
