// What a server reads from the network: an RPC call header, then the arguments of the
// procedure it names. Seeds: every captured NFSv3/MOUNTv3 call (fuzz/make_seeds.py).
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "base/out_buffer.h"
#include "fuzz/round_trip.h"
#include "rpc/message.h"
#include "xdr/xdr.h"

namespace nfsx::fuzz {
namespace {

// Our client encodes calls from a CallHeader: the decoded one must come back unchanged.
// (Not byte-exact: the decoder accepts and drops an AUTH_NONE body and any verifier body.)
void CheckHeaderRoundTrip(const rpc::CallHeader& h) {
  OutBuffer out;
  xdr::XdrEncoder e(&out);
  rpc::EncodeCallHeader(e, h.xid, h.prog, h.vers, h.proc, h.cred);
  std::vector<std::byte> bytes = out.Flatten();
  xdr::XdrDecoder d(bytes);
  rpc::CallHeader back;
  if (rpc::DecodeCallHeader(d, &back) != rpc::CallDecode::kOk) {
    Violation("our encoding does not decode", "CallHeader");
  }
  const rpc::Credential& a = h.cred;
  const rpc::Credential& b = back.cred;
  if (d.remaining() != 0 || back.xid != h.xid || back.prog != h.prog || back.vers != h.vers ||
      back.proc != h.proc || b.flavor != a.flavor || b.stamp != a.stamp ||
      b.machinename != a.machinename || b.uid != a.uid || b.gid != a.gid || b.ngids != a.ngids ||
      !std::ranges::equal(b.groups(), a.groups())) {
    Violation("decoded header differs", "CallHeader");
  }
}

}  // namespace
}  // namespace nfsx::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace nfsx;
  std::span<const std::byte> in(reinterpret_cast<const std::byte*>(data), size);
  xdr::XdrDecoder d(in);
  rpc::CallHeader h;
  if (rpc::DecodeCallHeader(d, &h) != rpc::CallDecode::kOk) return 0;
  fuzz::CheckHeaderRoundTrip(h);
  const fuzz::ProcCodecs* proc = fuzz::FindProc(h.prog, h.vers, h.proc);
  if (proc == nullptr) return 0;
  proc->args(in.subspan(in.size() - d.remaining()), proc->name);
  return 0;
}
