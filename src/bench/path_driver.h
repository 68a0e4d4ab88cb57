// Plain POSIX calls in a directory: an `nfsx mount`, any other mount, or the local
// filesystem as the no-NFS limit. No wire counters.
#pragma once

#include <memory>
#include <string>

#include "bench/driver.h"

namespace nfsx::bench {

Result<std::unique_ptr<Driver>> MakePathDriver(const std::string& dir, std::string* error);

}  // namespace nfsx::bench
