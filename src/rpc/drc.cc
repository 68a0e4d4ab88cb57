#include "rpc/drc.h"

#include <netinet/in.h>

#include <algorithm>
#include <cstring>

#include "base/logging.h"

namespace nfsx::rpc {
namespace {

uint64_t Fnv1a(std::span<const std::byte> bytes, uint64_t h = 1469598103934665603ull) {
  for (std::byte b : bytes) {
    h ^= static_cast<uint64_t>(b);
    h *= 1099511628211ull;
  }
  return h;
}

std::array<std::byte, 16> AddressOnly(const Peer& peer) {
  std::array<std::byte, 16> out{};
  const auto* sa = reinterpret_cast<const sockaddr*>(&peer.addr);
  if (sa->sa_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&peer.addr);
    std::memcpy(out.data(), &in->sin_addr, sizeof(in->sin_addr));
  } else if (sa->sa_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&peer.addr);
    std::memcpy(out.data(), &in6->sin6_addr, sizeof(in6->sin6_addr));
  } else {
    // Not an IP peer (tests, Unix sockets): the name stands for the address.
    uint64_t h = Fnv1a(std::as_bytes(std::span(peer.host)));
    std::memcpy(out.data(), &h, sizeof(h));
    out[15] = std::byte{1};
  }
  return out;
}

// splitmix64's finaliser: every input bit reaches every output bit, so keys that
// differ only in their xid spread over all shards and buckets.
uint64_t Mix(uint64_t h) {
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebull;
  return h ^ (h >> 31);
}

struct KeyHash {
  size_t operator()(const DuplicateRequestCache::Key& k) const {
    uint64_t h = Mix(Fnv1a(k.client) ^ k.xid);
    h = Mix(h ^ (uint64_t(k.prog) << 32 | k.proc) ^ (uint64_t(k.vers) << 56));
    return static_cast<size_t>(Mix(h ^ k.checksum));
  }
};

}  // namespace

struct DuplicateRequestCache::Shard {
  struct Entry {
    DrcClass cls = DrcClass::kNamespace;
    bool done = false;
    int64_t finished_ns = 0;
    std::vector<std::byte> reply;
    std::list<Key>::iterator order;  // valid once done
    size_t cost() const { return kEntryOverhead + reply.capacity(); }
  };

  std::mutex mu;
  std::unordered_map<Key, Entry, KeyHash> entries;
  // Per class, the finished entries, oldest first. Entries in progress are in
  // no list: they cannot be evicted, or a retransmission arriving meanwhile
  // would run the call a second time beside the original. Their number is
  // bounded by the calls the transport lets run at once.
  std::array<std::list<Key>, 2> order;
  std::array<size_t, 2> bytes{};
  std::array<size_t, 2> budget{};

  void Erase(std::unordered_map<Key, Entry, KeyHash>::iterator it) {
    auto c = static_cast<size_t>(it->second.cls);
    bytes[c] -= it->second.cost();
    if (it->second.done) order[c].erase(it->second.order);
    entries.erase(it);
  }

  // Drops what is past the window, then the oldest while over budget.
  // Returns how many namespace replies went before their window ended.
  uint64_t Trim(DrcClass cls, int64_t now, int64_t window_ns) {
    auto c = static_cast<size_t>(cls);
    uint64_t early = 0;
    while (!order[c].empty()) {
      auto it = entries.find(order[c].front());
      bool expired = now - it->second.finished_ns > window_ns;
      if (!expired && bytes[c] <= budget[c]) break;
      if (!expired && cls == DrcClass::kNamespace) ++early;
      Erase(it);
    }
    return early;
  }
};

DuplicateRequestCache::DuplicateRequestCache(DrcOptions options)
    : options_(std::move(options)),
      shards_(std::make_unique<Shard[]>(std::max<size_t>(options_.shards, 1))) {
  size_t n = std::max<size_t>(options_.shards, 1);
  for (size_t i = 0; i < n; ++i) {
    shards_[i].budget = {options_.namespace_bytes / n, options_.write_bytes / n};
  }
}

DuplicateRequestCache::~DuplicateRequestCache() = default;

DuplicateRequestCache::Key DuplicateRequestCache::MakeKey(const CallHeader& h, const Peer& peer,
                                                          std::span<const std::byte> args) {
  // A bounded prefix is enough to tell a reused xid from a retransmission, and keeps
  // the cost flat for 1 MiB WRITEs; the length covers the rest.
  constexpr size_t kChecksumBytes = 512;
  uint64_t sum = Fnv1a(args.first(std::min(args.size(), kChecksumBytes)));
  sum ^= args.size() * 0x9e3779b97f4a7c15ull;
  return Key{AddressOnly(peer), h.xid, h.prog, h.vers, h.proc, sum};
}

DuplicateRequestCache::Shard& DuplicateRequestCache::ShardOf(const Key& key) {
  return shards_[KeyHash{}(key) % std::max<size_t>(options_.shards, 1)];
}

int64_t DuplicateRequestCache::Now() const {
  if (options_.now_ns) return options_.now_ns();
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

DuplicateRequestCache::Lookup DuplicateRequestCache::Begin(const Key& key, DrcClass cls,
                                                           std::vector<std::byte>* reply) {
  Shard& s = ShardOf(key);
  {
    std::lock_guard lock(s.mu);
    auto it = s.entries.find(key);
    if (it != s.entries.end()) {
      hits_.fetch_add(1, std::memory_order_relaxed);
      if (!it->second.done) return Lookup::kInProgress;
      *reply = it->second.reply;
      return Lookup::kDone;
    }
    Shard::Entry& e = s.entries[key];
    e.cls = cls;
    s.bytes[static_cast<size_t>(cls)] += e.cost();
  }
  return Lookup::kNew;
}

void DuplicateRequestCache::Finish(const Key& key, std::vector<std::byte> reply) {
  Shard& s = ShardOf(key);
  int64_t now = Now();
  int64_t window_ns = std::chrono::nanoseconds(options_.window).count();
  uint64_t early;
  {
    std::lock_guard lock(s.mu);
    auto it = s.entries.find(key);
    if (it == s.entries.end() || it->second.done) return;
    Shard::Entry& e = it->second;
    auto c = static_cast<size_t>(e.cls);
    s.bytes[c] -= e.cost();
    e.done = true;
    e.finished_ns = now;
    e.reply = std::move(reply);
    e.reply.shrink_to_fit();
    s.bytes[c] += e.cost();
    s.order[c].push_back(key);
    e.order = std::prev(s.order[c].end());
    early = s.Trim(e.cls, now, window_ns);
  }
  CountEarlyEvictions(early);
}

void DuplicateRequestCache::CountEarlyEvictions(uint64_t n) {
  if (n == 0) return;
  early_evictions_.fetch_add(n, std::memory_order_relaxed);
  if (!warned_.exchange(true)) {
    log::Warn(
        "duplicate request cache: namespace replies evicted before their {} s window; "
        "retransmissions after a reconnect may run twice (raise --drc-memory)",
        options_.window.count());
  }
}

void DuplicateRequestCache::Abandon(const Key& key) {
  Shard& s = ShardOf(key);
  std::lock_guard lock(s.mu);
  auto it = s.entries.find(key);
  if (it == s.entries.end() || it->second.done) return;
  s.Erase(it);
}

DuplicateRequestCache::Stats DuplicateRequestCache::stats() const {
  Stats out;
  for (size_t i = 0; i < std::max<size_t>(options_.shards, 1); ++i) {
    Shard& s = shards_[i];
    std::lock_guard lock(s.mu);
    out.entries += s.entries.size();
    out.bytes[0] += s.bytes[0];
    out.bytes[1] += s.bytes[1];
  }
  out.hits = hits();
  out.early_evictions = early_evictions_.load(std::memory_order_relaxed);
  return out;
}

}  // namespace nfsx::rpc
