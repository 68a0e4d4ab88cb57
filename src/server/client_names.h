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
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace nfsx::server {

using Address16 = std::array<uint8_t, 16>;  // as ClientAddress() gives it

struct NameResolver {
  // The name a reverse lookup of the address gives, if any.
  std::function<std::optional<std::string>(const Address16&)> reverse;
  // The addresses a forward lookup of the name gives.
  std::function<std::vector<Address16>(const std::string&)> forward;
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
  // empty when it has none. On a cache miss, resolves first (blocking the caller).
  std::string NameOf(const sockaddr* addr);
  // Re-resolves the entries used since their last resolution that expire within a
  // quarter of their lifetime, and drops expired ones nobody used. For the
  // maintenance thread: keeps DNS off the calls of known clients.
  void Refresh();

  size_t size() const;
  uint64_t resolutions() const;

 private:
  struct Entry {
    std::string name;
    int64_t expires_ns = 0;
    bool used = false;
  };
  struct AddressHash {
    size_t operator()(const Address16& a) const;
  };

  std::string Verify(const Address16& addr) const;
  int64_t Now() const;
  int64_t Ttl(const std::string& name) const;
  void Store(const Address16& addr, std::string name, bool used);

  const NameResolver resolver_;
  const ClientNamesOptions options_;
  mutable std::mutex mu_;
  std::unordered_map<Address16, Entry, AddressHash> entries_;  // GUARDED_BY(mu_)
  uint64_t resolutions_ = 0;                                   // GUARDED_BY(mu_)
};

}  // namespace nfsx::server
