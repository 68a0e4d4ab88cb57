#include "server/write_verifier.h"

#include <sys/random.h>

#include <chrono>
#include <cstring>

#include "base/logging.h"

namespace nfsx::server {

WriteVerifiers::WriteVerifiers() {
  // Time keeps verifiers of successive runs apart; randomness covers clock resets.
  uint64_t now = static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch() /
                                       std::chrono::nanoseconds(1));
  uint32_t rnd = 0;
  if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd)) rnd = static_cast<uint32_t>(now >> 7);
  uint64_t v = (now / 1000) ^ (uint64_t{rnd} << 40) ^ rnd;
  std::memcpy(boot_.data(), &v, sizeof(v));
}

nfs3::writeverf3 WriteVerifiers::Verifier(std::string_view file) const {
  if (rotations_.load(std::memory_order_acquire) == 0) return boot_;
  uint64_t epoch = 0;
  {
    std::lock_guard lock(mu_);
    auto it = epochs_.find(std::string(file));
    if (it == epochs_.end()) return boot_;
    epoch = it->second;
  }
  nfs3::writeverf3 v = boot_;
  uint64_t b;
  std::memcpy(&b, v.data(), sizeof(b));
  b ^= epoch * 0x9e3779b97f4a7c15ull;
  std::memcpy(v.data(), &b, sizeof(b));
  return v;
}

void WriteVerifiers::Rotate(std::string_view file) {
  if (keep_through_errors_.load()) {
    log::Warn("write-back error: write verifier kept (a test emulating a global verifier)");
    return;
  }
  {
    std::lock_guard lock(mu_);
    ++epochs_[std::string(file)];
  }
  rotations_.fetch_add(1, std::memory_order_release);
  log::Warn("write-back error: write verifier of a file rotated; its clients will resend");
}

}  // namespace nfsx::server

namespace nfsx::server {

uint64_t WriteVerifiers::BeginSync(std::string_view file) {
  std::lock_guard lock(sync_mu_);
  uint64_t ticket = next_ticket_++;
  syncing_[std::string(file)].insert(ticket);
  return ticket;
}

uint64_t WriteVerifiers::EndSync(std::string_view file, uint64_t ticket, bool failed) {
  if (failed) Rotate(file);  // before the ticket goes: a success waiting on it reads after
  uint64_t horizon;
  {
    std::lock_guard lock(sync_mu_);
    auto it = syncing_.find(std::string(file));
    if (it != syncing_.end()) {
      it->second.erase(ticket);
      if (it->second.empty()) syncing_.erase(it);
    }
    horizon = next_ticket_;
  }
  sync_ended_.notify_all();
  return horizon;
}

nfs3::writeverf3 WriteVerifiers::VerifierAfter(std::string_view file, uint64_t horizon) {
  {
    std::unique_lock lock(sync_mu_);
    std::string key(file);
    sync_ended_.wait(lock, [&] {
      auto it = syncing_.find(key);
      return it == syncing_.end() || *it->second.begin() >= horizon;
    });
  }
  return Verifier(file);
}

}  // namespace nfsx::server
