// Typed RPC calls: encode ARGS, send, decode RES. The thin layer between the
// RPC transport and everything that speaks NFS or MOUNT as a client.
#pragma once

#include "base/result.h"
#include "rpc/tcp_client.h"
#include "xdr/xdr.h"

namespace nfsx::client {

// An RPC-level refusal (PROG_UNAVAIL, AUTH_ERROR...) becomes EPROTO, ENOSYS or
// EACCES; a reply that does not decode becomes EBADMSG.
int ErrnoFromReplyHeader(const rpc::ReplyHeader& h);

template <class Res>
Result<Res> DecodeReply(const Result<rpc::RpcReply>& reply) {
  if (!reply) return std::unexpected(reply.error());
  if (!reply->header.ok()) return Fail(ErrnoFromReplyHeader(reply->header));
  Res res;
  // Opaque results (READ data) point into the reply record: they keep it alive.
  xdr::XdrDecoder d(reply->results, reply->record);
  d(res);
  if (!d.ok()) return Fail(EBADMSG);
  return res;
}

template <class Res, class Args>
Result<Res> CallSync(rpc::RpcClient& client, uint32_t prog, uint32_t vers, uint32_t proc,
                     const rpc::Credential& cred, const Args& args) {
  auto reply = client.CallSync(prog, vers, proc, cred, [&](xdr::XdrEncoder& e) { e(args); });
  return DecodeReply<Res>(reply);
}

}  // namespace nfsx::client
