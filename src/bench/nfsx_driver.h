// The nfsx client library as a bench driver.
#pragma once

#include <memory>
#include <string>

#include "bench/driver.h"

namespace nfsx::bench {

Result<std::unique_ptr<Driver>> MakeNfsxDriver(const std::string& url, std::string* error);

}  // namespace nfsx::bench
