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
  r.reverse = [](const Address16& a) {
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
    int rc = getnameinfo(reinterpret_cast<sockaddr*>(&ss), len, host, sizeof(host), nullptr, 0,
                         NI_NAMEREQD);
    if (rc == 0) return ReverseAnswer{ReverseAnswer::kName, host};
    return ReverseAnswer{rc == EAI_NONAME ? ReverseAnswer::kNone : ReverseAnswer::kFailed, {}};
  };
  r.forward = [](const std::string& name) {
    ForwardAnswer out;
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* list = nullptr;
    int rc = getaddrinfo(name.c_str(), nullptr, &hints, &list);
    if (rc != 0) {
      out.failed = rc != EAI_NONAME && rc != EAI_NODATA;
      return out;
    }
    for (addrinfo* ai = list; ai; ai = ai->ai_next) {
      if (auto a = ClientAddress(ai->ai_addr)) out.addresses.push_back(*a);
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

ClientNames::Verdict ClientNames::Verify(const Address16& addr) const {
  ReverseAnswer name = resolver_.reverse(addr);
  if (name.kind == ReverseAnswer::kFailed) return {true, {}};
  if (name.kind == ReverseAnswer::kNone || name.name.empty()) return {};
  ForwardAnswer back = resolver_.forward(name.name);
  if (back.failed) return {true, {}};
  if (std::ranges::find(back.addresses, addr) == back.addresses.end()) return {};
  return {false, Canonical(std::move(name.name))};
}

void ClientNames::Store(const Address16& addr, const Verdict& v) {
  std::lock_guard lock(mu_);
  ++resolutions_;
  int64_t now = Now();
  auto it = entries_.find(addr);
  if (v.failed && it != entries_.end() && !it->second.name.empty()) {
    // Keep what we knew through a DNS outage; Refresh() asks again after the
    // negative ttl (it renews names in the last quarter of their life).
    it->second.expires_ns = now + Ttl(it->second.name) / 4 + Ttl({});
    return;
  }
  if (it == entries_.end() && entries_.size() >= options_.max_entries) {
    std::erase_if(entries_, [&](const auto& kv) { return kv.second.expires_ns <= now; });
    if (entries_.size() >= options_.max_entries) entries_.erase(entries_.begin());
  }
  Entry& e = entries_[addr];
  e.name = v.name;
  e.expires_ns = now + Ttl(e.name);
  e.used = false;
}

bool ClientNames::Cached(const sockaddr* sa) const {
  auto addr = ClientAddress(sa);
  if (!addr) return true;  // NameOf answers at once
  std::lock_guard lock(mu_);
  auto it = entries_.find(*addr);
  return it != entries_.end() && it->second.expires_ns > Now();
}

std::string ClientNames::NameOf(const sockaddr* sa) {
  auto addr = ClientAddress(sa);
  if (!addr) return {};
  std::shared_ptr<Resolving> wait;
  bool mine = false;
  {
    std::lock_guard lock(mu_);
    auto it = entries_.find(*addr);
    if (it != entries_.end() && it->second.expires_ns > Now()) {
      it->second.used = true;
      return it->second.name;
    }
    auto [r, inserted] = resolving_.try_emplace(*addr);
    if (inserted) r->second = std::make_shared<Resolving>();
    wait = r->second;
    mine = inserted;
  }
  if (!mine) {
    shared_lookups_.fetch_add(1, std::memory_order_relaxed);
    std::unique_lock lock(wait->mu);
    wait->cv.wait(lock, [&] { return wait->done; });
    return wait->name;
  }
  // Outside the lock: a slow DNS answer for one client must not hold up the others.
  Verdict v = Verify(*addr);
  Store(*addr, v);
  std::string name;
  {
    std::lock_guard lock(mu_);
    resolving_.erase(*addr);
    auto it = entries_.find(*addr);
    if (it != entries_.end()) name = it->second.name;
  }
  {
    std::lock_guard lock(wait->mu);
    wait->done = true;
    wait->name = name;
  }
  wait->cv.notify_all();
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
  for (const Address16& a : due) Store(a, Verify(a));
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
