#include "server/file_handle.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <cstring>

namespace nfsx::server {

void HandleCodec::Mac(std::span<const std::byte> data, std::byte out[kHandleMac]) const {
  unsigned char full[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key_.data(), static_cast<int>(key_.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), full, &len);
  std::memcpy(out, full, kHandleMac);
}

nfs3::nfs_fh3 HandleCodec::Make(uint16_t export_id, std::span<const std::byte> backend) const {
  nfs3::nfs_fh3 fh;
  std::byte* p = fh.data.data();
  p[0] = std::byte{kHandleVersion};
  p[1] = std::byte(backend.size());
  p[2] = std::byte(export_id >> 8);
  p[3] = std::byte(export_id);
  std::memcpy(p + kHandleHeader, backend.data(), backend.size());
  size_t body = kHandleHeader + backend.size();
  Mac({p, body}, p + body);
  fh.size = static_cast<uint32_t>(body + kHandleMac);
  return fh;
}

HandleCodec::Check HandleCodec::Parse(std::span<const std::byte> fh, DecodedHandle* out) const {
  if (fh.size() < kHandleHeader + kHandleMac) return Check::kMalformed;
  if (fh[0] != std::byte{kHandleVersion}) return Check::kMalformed;
  size_t backend_len = static_cast<size_t>(fh[1]);
  if (backend_len > vfs::kMaxBackendHandle ||
      fh.size() != kHandleHeader + backend_len + kHandleMac) {
    return Check::kMalformed;
  }
  size_t body = kHandleHeader + backend_len;
  std::byte mac[kHandleMac];
  Mac(fh.first(body), mac);
  if (CRYPTO_memcmp(mac, fh.data() + body, kHandleMac) != 0) return Check::kForged;
  out->export_id =
      static_cast<uint16_t>((static_cast<unsigned>(fh[2]) << 8) | static_cast<unsigned>(fh[3]));
  out->backend = fh.subspan(kHandleHeader, backend_len);
  return Check::kOk;
}

}  // namespace nfsx::server
