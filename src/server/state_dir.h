// The server's state directory: the file-handle key and anything else that
// must survive a restart.
#pragma once

#include <array>
#include <cstddef>
#include <string>

#include "base/result.h"

namespace nfsx::server {

inline constexpr size_t kHandleKeySize = 32;
using HandleKey = std::array<std::byte, kHandleKeySize>;

// Creates `dir` (mode 0700) if needed and returns the handle key stored in
// dir/fh.key, creating it with mode 0600 from the system's random source on
// first use. The file is written to a temporary name, synced and renamed, so a
// crash never leaves half a key behind.
Result<HandleKey> LoadOrCreateHandleKey(const std::string& dir);

}  // namespace nfsx::server
