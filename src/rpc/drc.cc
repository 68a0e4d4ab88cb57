#include "rpc/drc.h"

#include <netinet/in.h>

#include <cstring>

namespace nfsx::rpc {
namespace {

uint64_t Fnv1a(std::span<const std::byte> bytes, uint64_t h = 1469598103934665603ull) {
  for (std::byte b : bytes) {
    h ^= static_cast<uint64_t>(b);
    h *= 1099511628211ull;
  }
  return h;
}

std::string AddressOnly(const Peer& peer) {
  const auto* sa = reinterpret_cast<const sockaddr*>(&peer.addr);
  if (sa->sa_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&peer.addr);
    return std::string(reinterpret_cast<const char*>(&in->sin_addr), sizeof(in->sin_addr));
  }
  if (sa->sa_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&peer.addr);
    return std::string(reinterpret_cast<const char*>(&in6->sin6_addr), sizeof(in6->sin6_addr));
  }
  return peer.host;
}

}  // namespace

DuplicateRequestCache::Key DuplicateRequestCache::MakeKey(const CallHeader& h, const Peer& peer,
                                                          std::span<const std::byte> args) {
  // A bounded prefix is enough to tell a reused xid from a retransmission, and keeps
  // the cost flat for 1 MiB WRITEs; the length covers the rest.
  constexpr size_t kChecksumBytes = 512;
  uint64_t sum = Fnv1a(args.first(std::min(args.size(), kChecksumBytes)));
  sum ^= args.size() * 0x9e3779b97f4a7c15ull;
  return Key{AddressOnly(peer), h.xid, h.prog, h.vers, h.proc, sum};
}

size_t DuplicateRequestCache::KeyHash::operator()(const Key& k) const {
  uint64_t h = Fnv1a(std::as_bytes(std::span(k.client)));
  h ^= (uint64_t(k.xid) << 32 | k.proc) * 0x9e3779b97f4a7c15ull;
  return static_cast<size_t>(h ^ k.checksum);
}

DuplicateRequestCache::Lookup DuplicateRequestCache::Begin(const Key& key,
                                                           std::vector<std::byte>* reply) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(key);
  if (it != entries_.end()) {
    ++hits_;
    if (!it->second.done) return Lookup::kInProgress;
    *reply = it->second.reply;
    return Lookup::kDone;
  }
  while (entries_.size() >= max_entries_ && !order_.empty()) {
    entries_.erase(order_.front());
    order_.pop_front();
  }
  order_.push_back(key);
  Entry& e = entries_[key];
  e.order = std::prev(order_.end());
  return Lookup::kNew;
}

void DuplicateRequestCache::Finish(const Key& key, std::vector<std::byte> reply) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) return;  // evicted while running
  it->second.done = true;
  it->second.reply = std::move(reply);
}

void DuplicateRequestCache::Abandon(const Key& key) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end() || it->second.done) return;
  order_.erase(it->second.order);
  entries_.erase(it);
}

size_t DuplicateRequestCache::size() const {
  std::lock_guard lock(mu_);
  return entries_.size();
}

uint64_t DuplicateRequestCache::hits() const {
  std::lock_guard lock(mu_);
  return hits_;
}

}  // namespace nfsx::rpc
