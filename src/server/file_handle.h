// NFS file handles: opaque to clients, authenticated, stable across restarts.
//
// Layout (see docs/fh_format.md), at most 64 bytes:
//   byte 0      version (1)
//   byte 1      length L of the backend handle (at most vfs::kMaxBackendHandle)
//   bytes 2-3   export id, big-endian
//   bytes 4..   the backend handle (L bytes)
//   16 bytes    HMAC-SHA256 over everything before it, truncated
// A client that alters any byte, or makes a handle up, fails the MAC check.
#pragma once

#include <cstdint>
#include <span>

#include "proto/nfs3_types.h"
#include "server/state_dir.h"
#include "vfs/vfs.h"

namespace nfsx::server {

inline constexpr uint8_t kHandleVersion = 1;
inline constexpr size_t kHandleHeader = 4;
inline constexpr size_t kHandleMac = 16;
static_assert(kHandleHeader + vfs::kMaxBackendHandle + kHandleMac <= nfs3::NFS3_FHSIZE);

struct DecodedHandle {
  uint16_t export_id = 0;
  std::span<const std::byte> backend;  // points into the handle
};

class HandleCodec {
 public:
  explicit HandleCodec(const HandleKey& key) : key_(key) {}

  nfs3::nfs_fh3 Make(uint16_t export_id, std::span<const std::byte> backend) const;

  enum class Check { kOk, kMalformed, kForged };
  // Verifies shape and MAC. kMalformed and kForged both mean NFS3ERR_BADHANDLE.
  Check Parse(std::span<const std::byte> fh, DecodedHandle* out) const;

 private:
  void Mac(std::span<const std::byte> data, std::byte out[kHandleMac]) const;
  HandleKey key_;
};

}  // namespace nfsx::server
