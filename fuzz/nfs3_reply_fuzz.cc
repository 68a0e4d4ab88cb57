// What our client reads from an untrusted server: procedure results. The first byte picks
// the procedure (0-21 NFSv3, 22-27 MOUNTv3 by mountproc3, wrapping around); the rest is the
// result body that follows the RPC reply header. Seeds: every captured reply.
#include <cstddef>
#include <cstdint>
#include <span>

#include "fuzz/round_trip.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace nfsx;
  if (size < 1) return 0;
  uint32_t selector = data[0] % (nfs3::kNumProcs + fuzz::kNumMountProcs);
  const fuzz::ProcCodecs& proc = selector < nfs3::kNumProcs
                                     ? fuzz::kNfs3Procs[selector]
                                     : fuzz::kMount3Procs[selector - nfs3::kNumProcs];
  proc.res(std::span(reinterpret_cast<const std::byte*>(data) + 1, size - 1), proc.name);
  return 0;
}
