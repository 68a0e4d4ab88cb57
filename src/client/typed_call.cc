#include "client/typed_call.h"

#include <cstring>

#include "proto/nfs3_read_data.h"

namespace nfsx::client {

void PlaceReadData(nfs3::READ3res& res, const rpc::RpcReply& reply, std::span<std::byte> dest) {
  if (res.status != nfs3::NFS3_OK) return;
  auto& data = res.resok.data;
  if (reply.landed) {
    data.bytes = dest.first(std::min(*reply.landed, dest.size()));
  } else {
    size_t n = std::min(data.bytes.size(), dest.size());
    if (n > 0) std::memcpy(dest.data(), data.bytes.data(), n);
    data.bytes = dest.first(n);
  }
  data.owner = nullptr;  // the caller's memory now
}

rpc::ReplyLanding ReadLanding(std::span<std::byte> dest) {
  return rpc::ReplyLanding{dest, &nfs3::LocateRead3Data};
}

int ErrnoFromReplyHeader(const rpc::ReplyHeader& h) {
  if (h.stat == rpc::reply_stat::MSG_DENIED) {
    return h.rejected == rpc::reject_stat::AUTH_ERROR ? EACCES : EPROTO;
  }
  switch (h.accepted) {
    case rpc::accept_stat::SUCCESS:
      return 0;
    case rpc::accept_stat::PROG_UNAVAIL:
    case rpc::accept_stat::PROG_MISMATCH:
    case rpc::accept_stat::PROC_UNAVAIL:
      return EPROTONOSUPPORT;
    case rpc::accept_stat::GARBAGE_ARGS:
      return EINVAL;
    case rpc::accept_stat::SYSTEM_ERR:
      return EREMOTEIO;
  }
  return EPROTO;
}

}  // namespace nfsx::client
