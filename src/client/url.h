// nfs:// URLs, libnfs style: nfs://host[:port]/path[?key=value&...]
#pragma once

#include <string>
#include <string_view>

#include "nfsx/options.h"

namespace nfsx::client {

struct NfsUrl {
  std::string host;
  std::string path;  // absolute, as written (percent-decoded)
  ClientOptions options;
};

// Parses the URL and applies its query to `defaults`. *error says what is wrong.
Result<NfsUrl> ParseNfsUrl(std::string_view url, const ClientOptions& defaults,
                           std::string* error);

}  // namespace nfsx::client
