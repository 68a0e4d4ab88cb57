#include "rpc/tcp_client.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <climits>
#include <cstring>
#include <random>

#include "base/interruption.h"
#include "base/logging.h"
#include "rpc/record_marking.h"
#include "rpc/send_no_signal.h"

namespace nfsx::rpc {
namespace {

using Clock = std::chrono::steady_clock;

bool BindReservedPort(int fd, int family) {
  for (int port = 1023; port >= 600; --port) {
    sockaddr_storage ss{};
    socklen_t len;
    if (family == AF_INET6) {
      auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
      a->sin6_family = AF_INET6;
      a->sin6_port = htons(static_cast<uint16_t>(port));
      len = sizeof(*a);
    } else {
      auto* a = reinterpret_cast<sockaddr_in*>(&ss);
      a->sin_family = AF_INET;
      a->sin_port = htons(static_cast<uint16_t>(port));
      len = sizeof(*a);
    }
    if (bind(fd, reinterpret_cast<sockaddr*>(&ss), len) == 0) return true;
    if (errno != EADDRINUSE) return false;
  }
  return false;
}

// A connection not told which server's it is is one of its own.
RpcClientOptions WithSilence(RpcClientOptions o) {
  if (!o.silence) o.silence = std::make_shared<ServerSilence>();
  return o;
}

}  // namespace

RpcClient::RpcClient(std::string host, uint16_t port, RpcClientOptions options)
    : host_(std::move(host)),
      port_(port),
      options_(WithSilence(std::move(options))),
      records_(options_.max_record),
      hard_(options_.hard),
      timeout_error_(options_.timeout_error) {
  std::random_device rd;
  next_xid_.store(rd());
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  caller_wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
}

Result<std::unique_ptr<RpcClient>> RpcClient::Connect(const std::string& host, uint16_t port,
                                                      RpcClientOptions options) {
  std::unique_ptr<RpcClient> client(new RpcClient(host, port, options));
  auto fd = client->Dial();
  if (!fd) return std::unexpected(fd.error());
  client->fd_ = *fd;
  RpcClient* raw = client.get();
  client->reader_ = std::thread([raw] { raw->ReaderLoop(); });
  return client;
}

RpcClient::~RpcClient() {
  Shutdown();
  std::lock_guard lock(mu_);
  if (not_responding_) options_.silence->silent.fetch_sub(1);  // the others may still say OK
  ::close(wake_fd_);
  ::close(caller_wake_fd_);
}

void RpcClient::Shutdown() {
  // Once: a second caller waits until the first has run every callback.
  std::call_once(shutdown_once_, [this] {
    {
      std::lock_guard lock(mu_);
      shutdown_ = true;
      // A receiving caller sees its poll end at once and gives the socket back.
      if (receiver_ == Receiver::kCaller && fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);
    }
    Wake(wake_fd_);
    if (reader_.joinable()) reader_.join();
    {
      std::unique_lock lock(mu_);
      receiver_cv_.wait(lock, [&] { return receiver_ != Receiver::kCaller; });
    }
    // Nobody receives any more (Send refuses calls now): what a caller left for
    // the reader thread runs here, then everything still waiting fails.
    RunDeferred();
    std::vector<Callback> failed;
    {
      std::lock_guard lock(mu_);
      FailAllLocked(ESHUTDOWN, &failed);
      if (fd_ >= 0) ::close(fd_);
      fd_ = -1;
    }
    for (auto& cb : failed) cb(Fail(ESHUTDOWN));
    // The callbacks (and what they captured) go here too, not on another thread.
    failed.clear();
  });
}

void RpcClient::SetSilent(bool silent) {
  ServerSilence& s = *options_.silence;
  not_responding_ = silent;
  if (silent) {
    counters_.not_responding.fetch_add(1);
    if (s.silent.fetch_add(1) == 0) {
      s.said_not_responding.fetch_add(1);
      log::Warn("nfsx: server {}:{} not responding, still trying", host_, port_);
    }
  } else {
    counters_.responding_again.fetch_add(1);
    if (s.silent.fetch_sub(1) == 1) {
      s.said_ok.fetch_add(1);
      log::Warn("nfsx: server {}:{} OK", host_, port_);
    }
  }
}

// A connect(2) to a host that does not answer waits for the kernel's SYN retries
// (over two minutes); meanwhile no timeout of a soft call would be noticed. So it
// waits at most one timeout, and never more than Linux's 60 s (XS_TCP_CONN_TO).
Result<void> RpcClient::ConnectWithin(int fd, const sockaddr* addr, socklen_t len) const {
  if (::connect(fd, addr, len) == 0) return {};
  if (errno != EINPROGRESS) return FailErrno();
  auto limit = std::min<std::chrono::milliseconds>(options_.timeout, std::chrono::seconds(60));
  pollfd p{fd, POLLOUT, 0};
  int rc;
  do {
    rc = ::poll(&p, 1, static_cast<int>(limit.count()));
  } while (rc < 0 && errno == EINTR);
  if (rc == 0) return Fail(ETIMEDOUT);
  if (rc < 0) return FailErrno();
  int err = 0;
  socklen_t err_len = sizeof(err);
  if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &err_len) != 0) return FailErrno();
  if (err != 0) return Fail(err);
  return {};
}

Result<int> RpcClient::Dial() {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  std::string port_str = std::to_string(port_);
  int gai = getaddrinfo(host_.c_str(), port_str.c_str(), &hints, &res);
  if (gai != 0) return Fail(EHOSTUNREACH);
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> guard(res, freeaddrinfo);
  int last_err = ECONNREFUSED;
  for (addrinfo* ai = res; ai; ai = ai->ai_next) {
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      last_err = errno;
      continue;
    }
    if (options_.privileged_port) BindReservedPort(fd, ai->ai_family);
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    if (auto connected = ConnectWithin(fd, ai->ai_addr, ai->ai_addrlen); !connected) {
      last_err = connected.error().code;
      ::close(fd);
      continue;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
  }
  return Fail(last_err);
}

uint32_t RpcClient::Call(uint32_t prog, uint32_t vers, uint32_t proc, const Credential& cred,
                         const ArgsEncoder& args, Callback cb, const ReplyLanding* landing) {
  return Send(prog, vers, proc, cred, args, std::move(cb), landing);
}

uint32_t RpcClient::Send(uint32_t prog, uint32_t vers, uint32_t proc, const Credential& cred,
                         const ArgsEncoder& args, Callback cb, const ReplyLanding* landing,
                         bool* receive) {
  uint32_t xid = next_xid_.fetch_add(1, std::memory_order_relaxed);
  auto request = std::make_shared<OutBuffer>();
  BeginRecord(request.get());
  xdr::XdrEncoder e(request.get());
  EncodeCallHeader(e, xid, prog, vers, proc, cred);
  if (args) args(e);
  EndRecord(request.get());
  counters_.calls.fetch_add(1, std::memory_order_relaxed);

  std::unique_lock lock(mu_);
  if (shutdown_ || (fd_ < 0 && !options_.reconnect)) {
    int err = shutdown_ ? ESHUTDOWN : ENOTCONN;
    lock.unlock();
    cb(Fail(err));
    return xid;
  }
  pending_.emplace(xid, Pending{request, std::move(cb), Clock::now() + options_.timeout, 0,
                                receive != nullptr, landing});
  if (fd_ < 0) return xid;  // the reader thread is reconnecting; it sends everything then
  send_queue_.push_back(std::move(request));
  // A longer queue is being written out already by whoever polls for POLLOUT.
  bool flushed = send_queue_.size() > 1 || FlushLocked();
  if (receive && receiver_ == Receiver::kNobody) {
    receiver_ = Receiver::kCaller;
    *receive = true;
  } else if (receiver_ == Receiver::kNobody) {
    Wake(wake_fd_);  // the reader thread receives from now on
    return xid;
  }
  if (!flushed) WakeWriterLocked();
  return xid;
}

void RpcClient::Cancel(uint32_t xid, int err) {
  Callback cb;
  {
    std::unique_lock lock(mu_);
    auto it = pending_.find(xid);
    if (it == pending_.end()) return;  // answered meanwhile
    cb = std::move(it->second.cb);
    const ReplyLanding* landing = it->second.landing;
    pending_.erase(it);
    WaitLandingReleasedLocked(lock, landing);
  }
  cb(Fail(err));
}

void RpcClient::WaitLandingReleasedLocked(std::unique_lock<std::mutex>& lock,
                                          const ReplyLanding* landing) {
  // The call is out of pending_: once the receiver's read into it ends, no
  // other begins, and the callback may hand the memory back to its owner.
  if (landing) landing_cv_.wait(lock, [&] { return landing_in_use_ != landing; });
}

Result<RpcReply> RpcClient::CallSync(uint32_t prog, uint32_t vers, uint32_t proc,
                                     const Credential& cred, const ArgsEncoder& args,
                                     const ReplyLanding* landing) {
  struct Waiter {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    Result<RpcReply> result = Fail(EIO);
    std::thread::id caller = std::this_thread::get_id();
    std::atomic<bool> receiving{false};
  };
  // Whoever asked is gone already: nothing is sent.
  if (InterruptScope::Interrupted()) return Fail(EINTR);
  auto w = std::make_shared<Waiter>();
  bool receive = false;
  uint32_t xid = Send(
      prog, vers, proc, cred, args,
      [this, w](Result<RpcReply> r) {
        {
          std::lock_guard lock(w->mu);
          w->result = std::move(r);
          w->done = true;
          w->cv.notify_one();
        }
        // Ended elsewhere (a timeout, a cancel, a shutdown) while its caller polls the socket.
        if (w->receiving.load() && std::this_thread::get_id() != w->caller) Wake(caller_wake_fd_);
      },
      landing, &receive);
  auto done = [&] {
    std::lock_guard lock(w->mu);
    return w->done;
  };
  if (receive) {
    w->receiving.store(true);
    ReceiveAsCaller(done);
    w->receiving.store(false);
  }
  std::unique_lock lock(w->mu);
  if (!WaitUnlessInterrupted(lock, w->cv, [&] { return w->done; })) {
    // Whoever asked is gone (a signal): stop retransmitting. The server may
    // still run the call, as with an interrupted call of the kernel client.
    lock.unlock();
    Cancel(xid, EINTR);
    lock.lock();
    // Cancel ran the callback, or the reader thread is running it with the reply.
    w->cv.wait(lock, [&] { return w->done; });
  }
  return std::move(w->result);
}

size_t RpcClient::in_flight() const {
  std::lock_guard lock(mu_);
  return pending_.size();
}

// Writes queued requests until the socket is full. Returns true when the queue is empty.
bool RpcClient::FlushLocked() {
  std::vector<iovec> iov;
  while (!send_queue_.empty() && fd_ >= 0) {
    iov.clear();
    size_t skip = send_offset_;
    for (const auto& b : send_queue_) {
      b->GatherIovecs(skip, &iov);
      skip = 0;
      if (iov.size() >= 256) break;
    }
    ssize_t n = SendNoSignal(fd_, iov.data(), iov.size());
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) return false;
      return false;  // the reader notices the broken connection
    }
    size_t left = static_cast<size_t>(n);
    while (left > 0) {
      size_t front_left = send_queue_.front()->total_size() - send_offset_;
      if (left >= front_left) {
        left -= front_left;
        send_offset_ = 0;
        send_queue_.pop_front();
      } else {
        send_offset_ += left;
        left = 0;
      }
    }
  }
  return send_queue_.empty();
}

void RpcClient::WakeWriterLocked() {
  // The receiver polls for POLLOUT; with nobody receiving, the reader thread
  // takes the socket (a non-empty send queue makes it the receiver).
  Wake(receiver_ == Receiver::kCaller ? caller_wake_fd_ : wake_fd_);
}

// Nobody receives when this runs (Shutdown, or a connection that was closed and
// is not reopened), so no landing is being written.
void RpcClient::FailAllLocked(int err, std::vector<Callback>* out) {
  (void)err;
  for (auto& [xid, p] : pending_) out->push_back(std::move(p.cb));
  pending_.clear();
  send_queue_.clear();
  send_offset_ = 0;
}

// Called with mu_ held and the old socket gone. Dials without the lock.
bool RpcClient::ReconnectLocked() {
  if (!options_.reconnect || shutdown_) return false;
  mu_.unlock();
  auto fd = Dial();
  mu_.lock();
  if (!fd) return false;
  if (shutdown_) {
    ::close(*fd);
    return false;
  }
  fd_ = *fd;
  counters_.reconnects.fetch_add(1);
  log::Debug("rpc client: reconnected to {}:{}, resending {} calls", host_, port_, pending_.size());
  send_queue_.clear();
  send_offset_ = 0;
  for (auto& [xid, p] : pending_) {
    send_queue_.push_back(p.request);
    // A retransmission's grown wait stays (CheckTimeouts reconnected for it).
    p.deadline = std::max(p.deadline, Clock::now() + options_.timeout);
    counters_.retransmits.fetch_add(1);
  }
  FlushLocked();
  return true;
}

void RpcClient::CheckTimeouts() {
  std::vector<Callback> expired;
  std::vector<const ReplyLanding*> expired_landings;
  bool disconnect = false;
  int timeout_error;
  {
    std::unique_lock lock(mu_);
    timeout_error = timeout_error_;
    auto now = Clock::now();
    for (auto it = pending_.begin(); it != pending_.end();) {
      Pending& p = it->second;
      if (p.deadline > now) {
        ++it;
        continue;
      }
      // Waits grow by `timeout` per retransmission: timeout, 2 timeout, 3 timeout...
      auto wait = options_.timeout * (p.retransmits + 2);
      if (p.retransmits >= options_.max_retransmits) {  // a major timeout
        if (!hard_) {
          expired.push_back(std::move(p.cb));
          if (p.landing) expired_landings.push_back(p.landing);
          it = pending_.erase(it);
          continue;
        }
        if (!not_responding_) SetSilent(true);
        p.retransmits = -1;  // the next round starts again at `timeout`, as Linux's
        wait = options_.timeout;
      }
      ++p.retransmits;
      p.deadline = now + std::min(wait, options_.max_timeout);
      if (options_.reconnect) {
        // Over TCP a call sent again on the same connection is one the server already
        // has, or one a dead connection swallows: a server that lost it (a restart
        // behind a NAT, a half-open connection, a stalled peer) answers only on a new
        // one. So a retransmission goes over a new connection, as Linux's NFS client
        // does (RPC_CLNT_CREATE_DISCRTRY): the receiver sees the end of the stream and
        // the reader thread reconnects and resends every call still waiting.
        disconnect = true;
      } else {
        counters_.retransmits.fetch_add(1);
        if (fd_ >= 0) send_queue_.push_back(p.request);
      }
      ++it;
    }
    if (disconnect && fd_ >= 0) {
      log::Debug("rpc client: no reply from {}:{} in time: reconnecting", host_, port_);
      ::shutdown(fd_, SHUT_RDWR);
      Wake(receiver_ == Receiver::kCaller ? caller_wake_fd_ : wake_fd_);
    } else if (fd_ >= 0 && !FlushLocked()) {
      WakeWriterLocked();
    }
    for (const ReplyLanding* l : expired_landings) WaitLandingReleasedLocked(lock, l);
  }
  for (auto& cb : expired) cb(Fail(timeout_error));
}

}  // namespace nfsx::rpc
