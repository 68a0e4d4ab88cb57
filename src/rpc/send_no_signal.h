#pragma once

#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <climits>
#include <cstddef>

namespace nfsx::rpc {

// writev() on a socket whose peer has gone raises SIGPIPE, which kills any
// program that links the client library and did not ignore it. sendmsg with
// MSG_NOSIGNAL reports EPIPE instead, and the reader then sees the closed
// connection and reconnects.
inline ssize_t SendNoSignal(int fd, iovec* iov, size_t count) {
  msghdr msg{};
  msg.msg_iov = iov;
  msg.msg_iovlen = std::min<size_t>(count, IOV_MAX);
  return ::sendmsg(fd, &msg, MSG_NOSIGNAL);
}

}  // namespace nfsx::rpc
