// ClientNames: the verified host names of clients, for exports(5) rules that
// name hosts (`build.example.com(rw)`, `*.lab.example(ro)`, `localhost(rw)`).
//
// A client's name is the reverse lookup of its address, kept only if a forward
// lookup of that name gives the address back, as mountd does: whoever controls
// the reverse zone of an address cannot claim a name whose forward zone they
// do not control. Names are cached (positive and negative) and refreshed by the
// maintenance thread before they expire, so only the first call from a new
// address waits for DNS. Bounded in entries.
//
// Thread-safe.
#pragma once

#include <sys/socket.h>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace nfsx::server {

using Address16 = std::array<uint8_t, 16>;  // as ClientAddress() gives it

// What a lookup says. kFailed (DNS did not answer) is not kNone (DNS said there
// is no such record): a name already known is kept through a failure.
struct ReverseAnswer {
  enum Kind { kName, kNone, kFailed } kind = kNone;
  std::string name;
};
struct ForwardAnswer {
  bool failed = false;
  std::vector<Address16> addresses;
};

struct NameResolver {
  std::function<ReverseAnswer(const Address16&)> reverse;
  std::function<ForwardAnswer(const std::string&)> forward;
};

// getnameinfo(NI_NAMEREQD) and getaddrinfo: /etc/hosts, then DNS, as nsswitch.conf says.
NameResolver SystemResolver();

struct ClientNamesOptions {
  std::chrono::seconds positive_ttl{300};
  std::chrono::seconds negative_ttl{30};
  size_t max_entries = 4096;
  std::function<int64_t()> now_ns;  // monotonic; tests substitute their own
};

class ClientNames {
 public:
  explicit ClientNames(NameResolver resolver, ClientNamesOptions options = {});

  // The verified, lower-case name of the client at `addr`, without a trailing dot;
  // empty when it has none. On a cache miss, resolves first, blocking the caller;
  // concurrent misses for one address wait for one resolution.
  std::string NameOf(const sockaddr* addr);
  // Whether NameOf(addr) would answer from the cache, without waiting for DNS.
  bool Cached(const sockaddr* addr) const;
  // Re-resolves the entries used since their last resolution that expire within a
  // quarter of their lifetime, and drops expired ones nobody used. For the
  // maintenance thread: keeps DNS off the calls of known clients.
  void Refresh();

  size_t size() const;
  uint64_t resolutions() const;
  // Callers that waited for another caller's resolution of the same address.
  uint64_t shared_lookups() const { return shared_lookups_.load(std::memory_order_relaxed); }

 private:
  struct Entry {
    std::string name;
    int64_t expires_ns = 0;
    bool used = false;
  };
  // A resolution under way, that later callers for the address wait for.
  struct Resolving {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    std::string name;
  };
  struct Verdict {
    bool failed = false;  // DNS did not answer: no verdict
    std::string name;
  };
  struct AddressHash {
    size_t operator()(const Address16& a) const;
  };

  Verdict Verify(const Address16& addr) const;
  int64_t Now() const;
  int64_t Ttl(const std::string& name) const;
  // Records a verdict; a failed one keeps a name already known (retried after
  // the negative ttl) and otherwise caches "no name" for the negative ttl.
  void Store(const Address16& addr, const Verdict& v);

  const NameResolver resolver_;
  const ClientNamesOptions options_;
  mutable std::mutex mu_;
  std::unordered_map<Address16, Entry, AddressHash> entries_;  // GUARDED_BY(mu_)
  std::unordered_map<Address16, std::shared_ptr<Resolving>, AddressHash>
      resolving_;             // GUARDED_BY(mu_)
  uint64_t resolutions_ = 0;  // GUARDED_BY(mu_)
  std::atomic<uint64_t> shared_lookups_{0};
};

}  // namespace nfsx::server
