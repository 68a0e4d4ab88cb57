#include "client/typed_call.h"

namespace nfsx::client {

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
