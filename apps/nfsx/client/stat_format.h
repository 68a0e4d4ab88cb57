// Spelling file attributes the way ls(1) and stat(1) do.
#pragma once

#include <cstdint>
#include <string>

#include "nfsx/client.h"

namespace nfsx::app::cli {

// "-rw-r--r--", "drwxrwxrwt", "lrwxrwxrwx", with s/S/t/T for the special bits.
std::string ModeString(FileType type, uint32_t mode);

// As stat(1) names types: "regular file", "regular empty file", "directory", ...
std::string TypeName(FileType type, uint64_t size);

// "2024-05-01 13:07:09.123456789 +0200", stat(1)'s format, in local time.
std::string FullTime(const Timestamp& t);

// "2024-05-01 13:07", ls --time-style=long-iso, in local time.
std::string ShortTime(const Timestamp& t);

}  // namespace nfsx::app::cli
