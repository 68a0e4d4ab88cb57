// Splitting nfs:// URLs (libnfs syntax) into the pieces the commands need: which server a
// URL names (to share one connection), the path (to find the export and what lies below),
// and how to spell the URL of a file below it in messages.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace nfsx::app::cli {

// True for arguments meant as URLs rather than local paths.
bool IsNfsUrl(std::string_view arg);

struct UrlParts {
  std::string authority;  // host[:port], as written
  std::string path;       // percent-decoded, normalized, without "." and "..": "/export/dir"
  std::string query;      // options, without the '?'

  // URLs with the same key reach the same server with the same options.
  std::string ServerKey() const { return authority + '?' + query; }
};

// nullopt when `url` is not nfs://... or has a bad %-escape. The library parses the
// URL again to connect; this only has to agree with it on the path.
std::optional<UrlParts> SplitNfsUrl(std::string_view url);

// The last component of the URL's path as written, before dot segments are resolved
// ("nfs://h/e/a/.." gives ".."): rm refuses to remove "." and "..", as rm(1) does.
std::string LastComponentAsWritten(std::string_view url);

// The URL for `parts`, escaping only what would change its meaning when parsed again.
std::string BuildNfsUrl(const UrlParts& parts);

// The URL of `name` inside the directory `parts` names.
std::string ChildUrl(UrlParts parts, std::string_view name);

}  // namespace nfsx::app::cli
