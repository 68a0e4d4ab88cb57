// Typed RPC calls: encode ARGS, send, decode RES. The thin layer between the
// RPC transport and everything that speaks NFS or MOUNT as a client.
#pragma once

#include "base/result.h"
#include "proto/nfs3_types.h"
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

// A READ reply's data as the front of `dest`, whether the receiver read it
// there (a landing) or it came in the reply record (copied now). Data beyond
// `dest`, which a server should not send, is not kept.
void PlaceReadData(nfs3::READ3res& res, const rpc::RpcReply& reply, std::span<std::byte> dest);

// A landing for READ data into `dest`.
rpc::ReplyLanding ReadLanding(std::span<std::byte> dest);

template <class Res, class Args>
Result<Res> CallSync(rpc::RpcClient& client, uint32_t prog, uint32_t vers, uint32_t proc,
                     const rpc::Credential& cred, const Args& args) {
  auto reply = client.CallSync(prog, vers, proc, cred, [&](xdr::XdrEncoder& e) { e(args); });
  return DecodeReply<Res>(reply);
}

}  // namespace nfsx::client
