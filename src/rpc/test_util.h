// Helpers for RPC tests: build call records by hand.
#pragma once

#include <vector>

#include "rpc/message.h"
#include "rpc/record_marking.h"

namespace nfsx::rpc::testing {

// A complete call message (no record mark) with the given header fields.
inline std::vector<std::byte> CallBytes(uint32_t xid, uint32_t prog, uint32_t vers, uint32_t proc,
                                        const Credential& cred = {},
                                        std::function<void(xdr::XdrEncoder&)> args = nullptr) {
  OutBuffer out;
  xdr::XdrEncoder e(&out);
  EncodeCallHeader(e, xid, prog, vers, proc, cred);
  if (args) args(e);
  return out.Flatten();
}

inline Credential SysCred(uint32_t uid, uint32_t gid, std::vector<uint32_t> groups = {}) {
  Credential c;
  c.flavor = auth_flavor::AUTH_SYS;
  c.machinename = "test";
  c.uid = uid;
  c.gid = gid;
  c.ngids = static_cast<uint32_t>(groups.size());
  for (size_t i = 0; i < groups.size() && i < kMaxAuthSysGroups; ++i) c.gids[i] = groups[i];
  return c;
}

}  // namespace nfsx::rpc::testing
