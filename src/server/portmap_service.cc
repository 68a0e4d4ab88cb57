#include "server/portmap_service.h"

namespace nfsx::server {

using namespace portmap;

uint32_t PortmapService::GetPort(const mapping& m) const {
  for (const mapping& have : mappings_) {
    if (have.prog == m.prog && have.vers == m.vers && have.prot == m.prot) return have.port;
  }
  return 0;
}

rpc::Program PortmapService::MakeProgram() {
  using rpc::accept_stat;
  using D = xdr::XdrDecoder;
  using E = xdr::XdrEncoder;
  rpc::Program p{"portmap", PMAP_PROGRAM, PMAP_VERS, {}, {}};
  auto& v = p.procs;
  v.emplace_back("null", [](rpc::CallContext&, D&, E&) { return accept_stat::SUCCESS; });
  auto refuse = [](rpc::CallContext&, D& d, E& e) {
    mapping m;
    d(m);
    if (!d.ok()) return accept_stat::GARBAGE_ARGS;
    e(false);
    return accept_stat::SUCCESS;
  };
  v.emplace_back("set", refuse);
  v.emplace_back("unset", refuse);
  v.emplace_back("getport", [this](rpc::CallContext&, D& d, E& e) {
    mapping m;
    d(m);
    if (!d.ok()) return accept_stat::GARBAGE_ARGS;
    e(GetPort(m));
    return accept_stat::SUCCESS;
  });
  v.emplace_back("dump", [this](rpc::CallContext&, D&, E& e) {
    pmaplist list{mappings_};
    e(list);
    return accept_stat::SUCCESS;
  });
  return p;
}

}  // namespace nfsx::server
