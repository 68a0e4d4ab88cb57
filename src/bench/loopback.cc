#include "bench/loopback.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <deque>
#include <thread>
#include <vector>

namespace nfsx::bench {
namespace {

using Clock = std::chrono::steady_clock;

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

bool WriteAll(int fd, const std::byte* p, size_t n) {
  while (n > 0) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool ReadAll(int fd, std::byte* p, size_t n) {
  while (n > 0) {
    ssize_t r = recv(fd, p, n, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

void NoDelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

}  // namespace

Result<void> LoopbackRoundTrips(size_t request, size_t reply, int in_flight, uint64_t calls,
                                load::Histogram* latency_ns) {
  Fd listener(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (listener.get() < 0) return FailErrno();
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (bind(listener.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(listener.get(), 1) != 0 ||
      getsockname(listener.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return FailErrno();
  }
  std::thread echo([&] {
    Fd conn(accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (conn.get() < 0) return;
    NoDelay(conn.get());
    std::vector<std::byte> in(request), out(reply, std::byte{1});
    while (ReadAll(conn.get(), in.data(), in.size()) &&
           WriteAll(conn.get(), out.data(), out.size())) {
    }
  });
  Result<void> result;
  {
    Fd client(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (client.get() < 0 ||
        connect(client.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      result = FailErrno();
      shutdown(listener.get(), SHUT_RDWR);
    } else {
      NoDelay(client.get());
      std::vector<std::byte> req(request, std::byte{2}), rep(reply);
      std::deque<Clock::time_point> sent_at;
      uint64_t sent = 0, done = 0;
      auto send_one = [&] {
        sent_at.push_back(Clock::now());
        ++sent;
        return WriteAll(client.get(), req.data(), req.size());
      };
      bool ok = true;
      while (ok && sent < calls && sent < static_cast<uint64_t>(std::max(1, in_flight))) {
        ok = send_one();
      }
      while (ok && done < sent) {
        ok = ReadAll(client.get(), rep.data(), rep.size());
        if (!ok) break;
        auto ns =
            std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - sent_at.front());
        sent_at.pop_front();
        latency_ns->Record(static_cast<uint64_t>(ns.count()));
        ++done;
        if (sent < calls) ok = send_one();
      }
      if (!ok) result = Fail(EPIPE);
    }
  }  // closing the client ends the echo loop
  echo.join();
  return result;
}

}  // namespace nfsx::bench
