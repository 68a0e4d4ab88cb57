// The setuid/setgid bits that a write or truncation by anyone but root clears: setuid
// always, setgid when the file is group-executable (otherwise it marks mandatory
// locking, not a privilege). What Linux does for a local file (file_remove_privs).
// The server applies it; the client predicts it to send such a write at once.
#pragma once

#include <cstdint>

namespace nfsx {

inline uint32_t SetIdBitsClearedByWrite(uint32_t mode) {
  constexpr uint32_t kSetUid = 04000, kSetGid = 02000, kGroupExec = 00010;
  uint32_t bits = mode & kSetUid;
  if ((mode & (kSetGid | kGroupExec)) == (kSetGid | kGroupExec)) bits |= kSetGid;
  return bits;
}

}  // namespace nfsx
