#include <cstring>

#include <fmt/format.h>

#include "nfsx/error.h"

namespace nfsx {

std::string ErrorString(const Error& error) {
  const char* name = strerrorname_np(error.code);
  return fmt::format("{} ({})", std::strerror(error.code), name ? name : "?");
}

}  // namespace nfsx
