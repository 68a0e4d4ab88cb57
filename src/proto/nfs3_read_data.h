// Where a READ reply's data lies in its XDR encoding, so that the client's
// receiver can read the data straight into the caller's memory (see
// rpc::ReplyLanding) before the reply is whole.
#pragma once

#include <cstddef>
#include <span>

namespace nfsx::nfs3 {

// For READ3res results (or a prefix of them): the offset of the data opaque's
// length word; -1 when the status is not NFS3_OK (no data follows), -2 when
// `results` is too short to tell. Untrusted input: never reads past `results`.
std::ptrdiff_t LocateRead3Data(std::span<const std::byte> results);

}  // namespace nfsx::nfs3
