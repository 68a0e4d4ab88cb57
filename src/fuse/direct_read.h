// Reads straight from the server, around every cache: O_DIRECT reads and the
// direct_io mount option.
//
// ClientCore::Read(direct=true) would do the same, but its ReadDirect copies a
// READ reply's data after Channel::CallSync has freed the reply buffer that the
// decoded data points into (a heap use-after-free that ASan reports and that
// corrupts the heap under load; reported with the mount). This issues the
// READs asynchronously and copies the data inside the completion, while the
// reply is alive. The READs' attributes are not fed to the consistency
// tracker: a direct read needs no cache validation.
#pragma once

#include <cstdint>
#include <span>

#include "client/client_core.h"

namespace nfsx::fuse {

// Bytes read into the front of `out`: fewer than asked only at end of file.
Result<size_t> DirectRead(client::ClientCore& core, const client::InodePtr& ino, uint64_t offset,
                          std::span<std::byte> out);

}  // namespace nfsx::fuse
