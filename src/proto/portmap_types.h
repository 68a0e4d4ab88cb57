// Port mapper version 2 (RFC 1833 §3).
#pragma once

#include <cstdint>
#include <vector>

#include "proto/mount3_types.h"

namespace nfsx::portmap {

inline constexpr uint32_t PMAP_PROGRAM = 100000;
inline constexpr uint32_t PMAP_VERS = 2;
inline constexpr uint16_t PMAP_PORT = 111;
inline constexpr uint32_t IPPROTO_TCP_ = 6;
inline constexpr uint32_t IPPROTO_UDP_ = 17;

enum class pmapproc : uint32_t { NULLPROC = 0, SET = 1, UNSET = 2, GETPORT = 3, DUMP = 4, CALLIT = 5 };

struct mapping {
  uint32_t prog = 0;
  uint32_t vers = 0;
  uint32_t prot = 0;
  uint32_t port = 0;
  friend bool operator==(const mapping&, const mapping&) = default;
};
template <class X>
void Xdr(X& x, mapping& v) {
  x(v.prog);
  x(v.vers);
  x(v.prot);
  x(v.port);
}

struct pmaplist {
  std::vector<mapping> entries;
};
template <class X>
void Xdr(X& x, pmaplist& v) {
  mount3::XdrList(x, v.entries, [&](mapping& m) { x(m); });
}

}  // namespace nfsx::portmap
