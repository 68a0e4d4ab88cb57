#include "server/client_names.h"

#include <netdb.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstring>

#include "server/export_config.h"

namespace nfsx::server {
namespace {

bool IsV4Mapped(const Address16& a) {
  static constexpr uint8_t kPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return std::memcmp(a.data(), kPrefix, 12) == 0;
}

std::string Canonical(std::string name) {
  for (char& c : name) c = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
  if (name.size() > 1 && name.back() == '.') name.pop_back();
  return name;
}

}  // namespace

NameResolver SystemResolver() {
  NameResolver r;
  r.reverse = [](const Address16& a) -> std::optional<std::string> {
    sockaddr_storage ss{};
    socklen_t len;
    if (IsV4Mapped(a)) {
      auto* in = reinterpret_cast<sockaddr_in*>(&ss);
      in->sin_family = AF_INET;
      std::memcpy(&in->sin_addr, a.data() + 12, 4);
      len = sizeof(sockaddr_in);
    } else {
      auto* in6 = reinterpret_cast<sockaddr_in6*>(&ss);
      in6->sin6_family = AF_INET6;
      std::memcpy(&in6->sin6_addr, a.data(), 16);
      len = sizeof(sockaddr_in6);
    }
    char host[NI_MAXHOST];
    if (getnameinfo(reinterpret_cast<sockaddr*>(&ss), len, host, sizeof(host), nullptr, 0,
                    NI_NAMEREQD) != 0) {
      return std::nullopt;
    }
    return std::string(host);
  };
  r.forward = [](const std::string& name) {
    std::vector<Address16> out;
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* list = nullptr;
    if (getaddrinfo(name.c_str(), nullptr, &hints, &list) != 0) return out;
    for (addrinfo* ai = list; ai; ai = ai->ai_next) {
      if (auto a = ClientAddress(ai->ai_addr)) out.push_back(*a);
    }
    freeaddrinfo(list);
    return out;
  };
  return r;
}

ClientNames::ClientNames(NameResolver resolver, ClientNamesOptions options)
    : resolver_(std::move(resolver)), options_(std::move(options)) {}

size_t ClientNames::AddressHash::operator()(const Address16& a) const {
  uint64_t lo, hi;
  std::memcpy(&lo, a.data(), 8);
  std::memcpy(&hi, a.data() + 8, 8);
  return static_cast<size_t>((lo * 0x9e3779b97f4a7c15ull) ^ hi);
}

int64_t ClientNames::Now() const {
  if (options_.now_ns) return options_.now_ns();
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int64_t ClientNames::Ttl(const std::string& name) const {
  return std::chrono::nanoseconds(name.empty() ? options_.negative_ttl : options_.positive_ttl)
      .count();
}

std::string ClientNames::Verify(const Address16& addr) const {
  auto name = resolver_.reverse(addr);
  if (!name || name->empty()) return {};
  std::vector<Address16> back = resolver_.forward(*name);
  if (std::ranges::find(back, addr) == back.end()) return {};
  return Canonical(std::move(*name));
}

void ClientNames::Store(const Address16& addr, std::string name, bool used) {
  std::lock_guard lock(mu_);
  ++resolutions_;
  int64_t now = Now();
  if (entries_.size() >= options_.max_entries && !entries_.contains(addr)) {
    std::erase_if(entries_, [&](const auto& kv) { return kv.second.expires_ns <= now; });
    if (entries_.size() >= options_.max_entries) entries_.erase(entries_.begin());
  }
  int64_t expires = now + Ttl(name);
  entries_[addr] = Entry{std::move(name), expires, used};
}

std::string ClientNames::NameOf(const sockaddr* sa) {
  auto addr = ClientAddress(sa);
  if (!addr) return {};
  {
    std::lock_guard lock(mu_);
    auto it = entries_.find(*addr);
    if (it != entries_.end() && it->second.expires_ns > Now()) {
      it->second.used = true;
      return it->second.name;
    }
  }
  // Outside the lock: a slow DNS answer for one client must not hold up the others.
  std::string name = Verify(*addr);
  Store(*addr, name, false);
  return name;
}

void ClientNames::Refresh() {
  std::vector<Address16> due;
  {
    std::lock_guard lock(mu_);
    int64_t now = Now();
    for (auto it = entries_.begin(); it != entries_.end();) {
      const Entry& e = it->second;
      if (e.expires_ns - now < Ttl(e.name) / 4) {
        if (e.used) {
          due.push_back(it->first);
        } else if (e.expires_ns <= now) {
          it = entries_.erase(it);
          continue;
        }
      }
      ++it;
    }
  }
  for (const Address16& a : due) Store(a, Verify(a), false);
}

size_t ClientNames::size() const {
  std::lock_guard lock(mu_);
  return entries_.size();
}

uint64_t ClientNames::resolutions() const {
  std::lock_guard lock(mu_);
  return resolutions_;
}

}  // namespace nfsx::server
