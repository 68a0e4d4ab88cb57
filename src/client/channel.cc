#include "client/channel.h"

#include <fmt/format.h>

namespace nfsx::client {

Result<std::unique_ptr<Channel>> Channel::Open(const std::string& host, uint16_t port, int nconnect,
                                               rpc::RpcClientOptions options,
                                               rpc::Credential cred) {
  std::vector<std::unique_ptr<rpc::RpcClient>> conns;
  if (!options.silence) options.silence = std::make_shared<rpc::ServerSilence>();  // one server
  for (int i = 0; i < std::max(1, nconnect); ++i) {
    auto c = rpc::RpcClient::Connect(host, port, options);
    if (!c) return std::unexpected(c.error());
    conns.push_back(std::move(*c));
  }
  return std::unique_ptr<Channel>(new Channel(std::move(conns), std::move(cred)));
}

Result<nfs3::READ3res> Channel::ReadSync(const nfs3::nfs_fh3& fh, uint64_t offset,
                                         std::span<std::byte> dest) {
  nfs3::READ3args args{fh, offset, static_cast<uint32_t>(dest.size())};
  rpc::ReplyLanding landing = ReadLanding(dest);
  return RetryJukebox<nfs3::READ3res>(nfs3::nfsproc3::READ, [&]() -> Result<nfs3::READ3res> {
    auto reply = Next().CallSync(
        nfs3::NFS_PROGRAM, nfs3::NFS_V3, static_cast<uint32_t>(nfs3::nfsproc3::READ),
        ActingAs::Or(cred_), [&](xdr::XdrEncoder& e) { e(args); }, &landing);
    auto res = DecodeReply<nfs3::READ3res>(reply);
    if (res) PlaceReadData(*res, *reply, dest);
    return res;
  });
}

Channel::SentRead Channel::ReadAsync(const nfs3::nfs_fh3& fh, uint64_t offset,
                                     std::span<std::byte> dest,
                                     std::move_only_function<void(Result<nfs3::READ3res>)> done) {
  Count(nfs3::nfsproc3::READ);
  nfs3::READ3args args{fh, offset, static_cast<uint32_t>(dest.size())};
  // The landing lives in the callback, which the connection keeps until it has run.
  auto landing = std::make_unique<rpc::ReplyLanding>(ReadLanding(dest));
  const rpc::ReplyLanding* where = landing.get();
  rpc::RpcClient& conn = Next();
  uint32_t xid = conn.Call(
      nfs3::NFS_PROGRAM, nfs3::NFS_V3, static_cast<uint32_t>(nfs3::nfsproc3::READ),
      ActingAs::Or(cred_), [&](xdr::XdrEncoder& e) { e(args); },
      [landing = std::move(landing), done = std::move(done)](Result<rpc::RpcReply> reply) mutable {
        auto res = DecodeReply<nfs3::READ3res>(reply);
        if (res) PlaceReadData(*res, *reply, landing->dest);
        done(std::move(res));
      },
      where);
  return {&conn, xid};
}

void Channel::ReadAsyncRetrying(const nfs3::nfs_fh3& fh, uint64_t offset, std::span<std::byte> dest,
                                std::move_only_function<void(Result<nfs3::READ3res>)> done,
                                std::chrono::milliseconds delay) {
  ReadAsync(fh, offset, dest,
            [this, fh, offset, dest, done = std::move(done), delay,
             cred = ActingAs::Or(cred_)](Result<nfs3::READ3res> r) mutable {
              if (!r || r->status != nfs3::NFS3ERR_JUKEBOX) return done(std::move(r));
              jukebox_retries_.fetch_add(1, std::memory_order_relaxed);
              // From the retry thread: this is a reader thread, which must not wait.
              retries_.After(delay, [this, fh, offset, dest, done = std::move(done), delay,
                                     cred = std::move(cred)]() mutable {
                ActingAs as(cred);  // the reader the READ was sent for
                ReadAsyncRetrying(fh, offset, dest, std::move(done),
                                  std::min(delay * 2, kMaxJukeboxDelay));
              });
            });
}

void Channel::Shutdown() {
  for (auto& c : conns_) c->Shutdown();
  // Retries still waiting run now, against shut-down connections: each caller
  // hears ESHUTDOWN once.
  retries_.Stop();
}

size_t Channel::in_flight() const {
  size_t n = 0;
  for (const auto& c : conns_) n += c->in_flight();
  return n;
}

WireStats Channel::stats() const {
  WireStats s;
  for (size_t i = 0; i < calls_.size(); ++i) {
    s.nfs_calls[i] = calls_[i].load(std::memory_order_relaxed);
    s.rpc_calls += s.nfs_calls[i];
  }
  for (const auto& c : conns_) {
    s.retransmits += c->counters().retransmits.load();
    s.reconnects += c->counters().reconnects.load();
    s.read_bytes_landed += c->counters().landed_bytes.load();
  }
  s.write_bytes = write_bytes_.load();
  s.read_bytes = read_bytes_.load();
  s.resent_bytes = resent_bytes_.load();
  s.commits_ahead = commits_ahead_.load();
  s.invalidations = invalidations_.load();
  return s;
}

}  // namespace nfsx::client

namespace nfsx {

std::string FormatNfsstat(const WireStats& s) {
  // The layout of Linux `nfsstat -c`: rows of six 13-column fields.
  std::string out = "Client rpc stats:\n";
  out += fmt::format("{:<11}{:<11}{:<11}\n", "calls", "retrans", "authrefrsh");
  out += fmt::format("{:<11}{:<11}{:<11}\n\n", s.rpc_calls, s.retransmits, 0);
  out += "Client nfs v3:\n";
  uint64_t total = 0;
  for (uint64_t c : s.nfs_calls) total += c;
  for (int row = 0; row < nfs3::kNumProcs; row += 6) {
    std::string names, values;
    for (int i = row; i < std::min(row + 6, nfs3::kNumProcs); ++i) {
      names += fmt::format("{:<14}", nfs3::ProcName(static_cast<uint32_t>(i)));
      uint64_t pct = total ? (s.nfs_calls[i] * 100 + total / 2) / total : 0;
      values += fmt::format("{:<9} {:<4}", s.nfs_calls[i], fmt::format("{}%", pct));
    }
    out += names + "\n" + values + "\n";
  }
  return out;
}

}  // namespace nfsx
