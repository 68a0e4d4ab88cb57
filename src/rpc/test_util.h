// Helpers for RPC tests: build call records by hand.
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <thread>
#include <vector>

#include "rpc/message.h"
#include "rpc/record_marking.h"

namespace nfsx::rpc::testing {

// Polls `done` until it holds or `limit` passes (a deadline for a broken build, never
// reached by a working one however loaded the machine). Returns whether it held.
inline bool WaitFor(const std::function<bool()>& done,
                    std::chrono::milliseconds limit = std::chrono::minutes(1)) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

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

// A TCP connection to a loopback port, optionally from another loopback source
// address (127.0.0.2 is a different client to the server), with a receive buffer
// of `rcvbuf` bytes when nonzero.
inline int RawLoopbackSocket(uint16_t port, const char* source = nullptr, int rcvbuf = 0) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (rcvbuf > 0) setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
  if (source) {
    sockaddr_in s{};
    s.sin_family = AF_INET;
    inet_pton(AF_INET, source, &s.sin_addr);
    EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&s), sizeof(s)), 0) << source;
  }
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  return fd;
}

// A socket listening on an ephemeral loopback port, which goes to *port.
inline int LoopbackListener(uint16_t* port, int backlog = 8) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  EXPECT_EQ(listen(fd, backlog), 0);
  socklen_t len = sizeof(a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  *port = ntohs(a.sin_port);
  return fd;
}

// Appends `call` to `out` as one record.
inline void AppendRecord(std::vector<std::byte>* out, const std::vector<std::byte>& call) {
  size_t at = out->size();
  out->resize(at + 4);
  xdr::StoreBe32(out->data() + at, kLastFragment | static_cast<uint32_t>(call.size()));
  out->insert(out->end(), call.begin(), call.end());
}

inline bool WriteAll(int fd, const std::vector<std::byte>& bytes) {
  size_t sent = 0;
  while (sent < bytes.size()) {
    ssize_t n = write(fd, bytes.data() + sent, bytes.size() - sent);
    if (n <= 0) return false;
    sent += static_cast<size_t>(n);
  }
  return true;
}

inline bool ReadAll(int fd, std::byte* to, size_t size) {
  size_t got = 0;
  while (got < size) {
    ssize_t n = read(fd, to + got, size - got);
    if (n <= 0) return false;
    got += static_cast<size_t>(n);
  }
  return true;
}

// Reads one single-fragment record; empty when the connection ends first.
inline std::vector<std::byte> ReadRecord(int fd) {
  std::byte mark[4];
  if (!ReadAll(fd, mark, 4)) return {};
  std::vector<std::byte> record(xdr::LoadBe32(mark) & ~kLastFragment);
  if (!ReadAll(fd, record.data(), record.size())) return {};
  return record;
}

}  // namespace nfsx::rpc::testing
