// ActingAs: the identity that the calls a thread makes carry, for as long as the
// guard lives, instead of the client's own.
//
// A FUSE mount shared by several users sends each request with the caller's
// AUTH_SYS identity, as the kernel NFS client does, so that the server decides
// what each user may do and files belong to whoever created them. Write-back
// carries the identity of the last writer of the file (Inode::writer).
//
// The credential is encoded when a call is made, so a guard may end while the
// call is still in flight.
#pragma once

#include <cstdint>

#include "rpc/message.h"

namespace nfsx::client {

class ActingAs {
 public:
  explicit ActingAs(const rpc::Credential& who) : previous_(current_) { current_ = &who; }
  ~ActingAs() { current_ = previous_; }
  ActingAs(const ActingAs&) = delete;
  ActingAs& operator=(const ActingAs&) = delete;

  // The identity of this thread's guard, or null.
  static const rpc::Credential* Current() { return current_; }
  static const rpc::Credential& Or(const rpc::Credential& own) {
    return current_ ? *current_ : own;
  }

 private:
  static inline thread_local const rpc::Credential* current_ = nullptr;
  const rpc::Credential* previous_;
};

// A key for per-identity caches (ACCESS answers): uid, gid and groups.
inline uint64_t IdentityKey(const rpc::Credential& c) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](uint32_t v) { h = (h ^ v) * 1099511628211ull; };
  mix(c.uid);
  mix(c.gid);
  for (uint32_t g : c.groups()) mix(g);
  return h;
}

}  // namespace nfsx::client
