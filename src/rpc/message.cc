#include "rpc/message.h"

namespace nfsx::rpc {
namespace {

bool DecodeAuthSys(std::span<const std::byte> body, Credential* cred) {
  xdr::XdrDecoder d(body);
  d(cred->stamp);
  std::string_view name = d.View(kMaxMachineName);
  d(cred->uid);
  d(cred->gid);
  uint32_t n = 0;
  d(n);
  if (!d.ok() || n > kMaxAuthSysGroups) return false;
  for (uint32_t i = 0; i < n; ++i) d(cred->gids[i]);
  if (!d.ok() || d.remaining() != 0) return false;
  cred->machinename.assign(name);
  cred->ngids = n;
  cred->flavor = auth_flavor::AUTH_SYS;
  return true;
}

}  // namespace

bool PeekXid(std::span<const std::byte> message, uint32_t* xid) {
  if (message.size() < 4) return false;
  *xid = xdr::LoadBe32(message.data());
  return true;
}

CallDecode DecodeCallHeader(xdr::XdrDecoder& d, CallHeader* h) {
  uint32_t mtype = 0, rpcvers = 0;
  d(h->xid);
  d(mtype);
  if (!d.ok() || mtype != static_cast<uint32_t>(msg_type::CALL)) return CallDecode::kNotACall;
  d(rpcvers);
  if (!d.ok()) return CallDecode::kNotACall;
  if (rpcvers != kRpcVersion) return CallDecode::kRpcMismatch;
  d(h->prog);
  d(h->vers);
  d(h->proc);
  uint32_t flavor = 0;
  d(flavor);
  std::span<const std::byte> cred_body = d.OpaqueView(kMaxAuthBytes);
  if (!d.ok()) return CallDecode::kBadCred;
  uint32_t verf_flavor = 0;
  d(verf_flavor);
  d.OpaqueView(kMaxAuthBytes);
  if (!d.ok()) return CallDecode::kBadVerf;

  h->cred = Credential{};
  switch (static_cast<auth_flavor>(flavor)) {
    case auth_flavor::AUTH_NONE:
      break;
    case auth_flavor::AUTH_SYS:
      if (!DecodeAuthSys(cred_body, &h->cred)) return CallDecode::kBadCred;
      break;
    default:
      return CallDecode::kBadCred;
  }
  // With AUTH_NONE and AUTH_SYS the verifier must be AUTH_NONE.
  if (verf_flavor != static_cast<uint32_t>(auth_flavor::AUTH_NONE)) return CallDecode::kBadVerf;
  return CallDecode::kOk;
}

static void EncodeNullVerifier(xdr::XdrEncoder& e) {
  e(auth_flavor::AUTH_NONE);
  e(uint32_t{0});
}

void EncodeAcceptedReply(xdr::XdrEncoder& e, uint32_t xid, accept_stat stat) {
  e(xid);
  e(msg_type::REPLY);
  e(reply_stat::MSG_ACCEPTED);
  EncodeNullVerifier(e);
  e(stat);
}

void EncodeProgMismatch(xdr::XdrEncoder& e, uint32_t xid, uint32_t low, uint32_t high) {
  EncodeAcceptedReply(e, xid, accept_stat::PROG_MISMATCH);
  e(low);
  e(high);
}

void EncodeRpcMismatch(xdr::XdrEncoder& e, uint32_t xid) {
  e(xid);
  e(msg_type::REPLY);
  e(reply_stat::MSG_DENIED);
  e(reject_stat::RPC_MISMATCH);
  e(kRpcVersion);
  e(kRpcVersion);
}

void EncodeAuthError(xdr::XdrEncoder& e, uint32_t xid, auth_stat stat) {
  e(xid);
  e(msg_type::REPLY);
  e(reply_stat::MSG_DENIED);
  e(reject_stat::AUTH_ERROR);
  e(stat);
}

void EncodeCallHeader(xdr::XdrEncoder& e, uint32_t xid, uint32_t prog, uint32_t vers,
                      uint32_t proc, const Credential& cred) {
  e(xid);
  e(msg_type::CALL);
  e(kRpcVersion);
  e(prog);
  e(vers);
  e(proc);
  if (cred.flavor == auth_flavor::AUTH_SYS) {
    OutBuffer& out = e.buffer();
    e(auth_flavor::AUTH_SYS);
    size_t len_at = out.inline_size();
    e(uint32_t{0});
    e(cred.stamp);
    e.String(cred.machinename);
    e(cred.uid);
    e(cred.gid);
    e(cred.ngids);
    for (uint32_t g : cred.groups()) e(g);
    out.PatchU32(len_at, static_cast<uint32_t>(out.inline_size() - len_at - 4));
  } else {
    EncodeNullVerifier(e);
  }
  EncodeNullVerifier(e);
}

bool DecodeReplyHeader(xdr::XdrDecoder& d, ReplyHeader* h) {
  uint32_t mtype = 0;
  d(h->xid);
  d(mtype);
  if (!d.ok() || mtype != static_cast<uint32_t>(msg_type::REPLY)) return false;
  d(h->stat);
  if (h->stat == reply_stat::MSG_ACCEPTED) {
    uint32_t verf_flavor;
    d(verf_flavor);
    d.OpaqueView(kMaxAuthBytes);
    d(h->accepted);
    if (h->accepted == accept_stat::PROG_MISMATCH) {
      d(h->mismatch_low);
      d(h->mismatch_high);
    }
  } else if (h->stat == reply_stat::MSG_DENIED) {
    d(h->rejected);
    if (h->rejected == reject_stat::RPC_MISMATCH) {
      d(h->mismatch_low);
      d(h->mismatch_high);
    } else {
      d(h->auth);
    }
  } else {
    return false;
  }
  return d.ok();
}

}  // namespace nfsx::rpc
