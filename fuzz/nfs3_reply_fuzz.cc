// What our client reads from an untrusted server: procedure results. The first byte picks
// the procedure (0-21 NFSv3, 22-27 MOUNTv3 by mountproc3, wrapping around); the rest is the
// result body that follows the RPC reply header. Seeds: every captured reply.
#include <cstddef>
#include <cstdint>
#include <span>

#include "fuzz/round_trip.h"
#include "proto/nfs3_read_data.h"
#include "xdr/xdr.h"

namespace {

// The client finds a READ reply's data before the reply is whole
// (LocateRead3Data): on every prefix it must stay inside the prefix, and on a
// reply that decodes with NFS3_OK it must point at the data's length word.
void CheckReadDataLocation(std::span<const std::byte> body) {
  using namespace nfsx;
  for (size_t n = 0; n <= body.size(); ++n) {
    std::ptrdiff_t at = nfs3::LocateRead3Data(body.first(n));
    if (at >= 0 && static_cast<size_t>(at) + 4 > n) fuzz::Violation("past the prefix", "READ3res");
  }
  nfs3::READ3res res;
  xdr::XdrDecoder d(body);
  d(res);
  if (!d.ok()) return;
  std::ptrdiff_t at = nfs3::LocateRead3Data(body);
  if (res.status != nfs3::NFS3_OK) {
    if (at != -1) fuzz::Violation("data located in an error reply", "READ3res");
    return;
  }
  if (at < 0) fuzz::Violation("data of a decodable reply not located", "READ3res");
  const std::byte* data = res.resok.data.bytes.data();
  if (xdr::LoadBe32(body.data() + at) != res.resok.data.bytes.size() ||
      (!res.resok.data.bytes.empty() && data != body.data() + at + 4)) {
    fuzz::Violation("located length word is not the data's", "READ3res");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace nfsx;
  if (size < 1) return 0;
  uint32_t selector = data[0] % (nfs3::kNumProcs + fuzz::kNumMountProcs);
  const fuzz::ProcCodecs& proc = selector < nfs3::kNumProcs
                                     ? fuzz::kNfs3Procs[selector]
                                     : fuzz::kMount3Procs[selector - nfs3::kNumProcs];
  std::span body(reinterpret_cast<const std::byte*>(data) + 1, size - 1);
  proc.res(body, proc.name);
  if (selector == static_cast<uint32_t>(nfs3::nfsproc3::READ)) CheckReadDataLocation(body);
  return 0;
}
