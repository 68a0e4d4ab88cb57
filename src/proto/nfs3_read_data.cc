#include "proto/nfs3_read_data.h"

#include "proto/nfs3_types.h"
#include "xdr/xdr.h"

namespace nfsx::nfs3 {

std::ptrdiff_t LocateRead3Data(std::span<const std::byte> results) {
  constexpr std::ptrdiff_t kNoData = -1, kNeedMore = -2;
  // status, post_op_attr's discriminant, [fattr3], count, eof, data length.
  if (results.size() < 8) return kNeedMore;
  if (xdr::LoadBe32(results.data()) != static_cast<uint32_t>(NFS3_OK)) return kNoData;
  uint32_t attributes_follow = xdr::LoadBe32(results.data() + 4);
  if (attributes_follow > 1) return kNoData;  // not a bool: let the decoder say so
  size_t len_word = 8 + (attributes_follow ? kFattr3Size : 0) + 8;
  if (results.size() < len_word + 4) return kNeedMore;
  return static_cast<std::ptrdiff_t>(len_word);
}

}  // namespace nfsx::nfs3
