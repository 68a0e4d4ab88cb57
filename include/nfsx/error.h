// nfsx::Error: an errno-style error, and its readable text. Separate from
// result.h so that code without std::expected (the fuzz build's clang) can use it.
#pragma once

#include <cerrno>
#include <string>

namespace nfsx {

struct Error {
  int code = EIO;  // an errno value, never 0
};

// "No such file or directory (ENOENT)".
std::string ErrorString(const Error& error);

}  // namespace nfsx
