#include "client/url.h"

#include <fmt/format.h>

#include <charconv>

namespace nfsx::client {
namespace {

bool Hex(char c, int* v) {
  if (c >= '0' && c <= '9')
    *v = c - '0';
  else if (c >= 'a' && c <= 'f')
    *v = c - 'a' + 10;
  else if (c >= 'A' && c <= 'F')
    *v = c - 'A' + 10;
  else
    return false;
  return true;
}

bool PercentDecode(std::string_view in, std::string* out) {
  out->clear();
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out->push_back(in[i]);
      continue;
    }
    int hi, lo;
    if (i + 2 >= in.size() || !Hex(in[i + 1], &hi) || !Hex(in[i + 2], &lo)) {
      return false;
    }
    out->push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return true;
}

template <class T>
bool ParseNumber(std::string_view s, T* out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

}  // namespace
}  // namespace nfsx::client

namespace nfsx {

using client::ParseNumber;

Result<void> ClientOptions::ApplyQuery(std::string_view query, std::string* error) {
  while (!query.empty()) {
    size_t amp = query.find('&');
    std::string_view kv = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (kv.empty()) continue;
    size_t eq = kv.find('=');
    std::string_view key = kv.substr(0, eq);
    std::string_view value = eq == std::string_view::npos ? "1" : kv.substr(eq + 1);
    auto bad = [&] {
      if (error) *error = fmt::format("bad value for {}: '{}'", key, value);
      return Fail(EINVAL);
    };
    double d;
    uint32_t u;
    if (key == "version") {
      if (value != "3") {
        if (error) *error = "only NFS version 3 is supported (version=3)";
        return Fail(EPROTONOSUPPORT);
      }
    } else if (key == "nfsport" || key == "port") {
      if (!ParseNumber(value, &u) || u > 65535) return bad();
      nfs_port = static_cast<uint16_t>(u);
    } else if (key == "mountport") {
      if (!ParseNumber(value, &u) || u > 65535) return bad();
      mount_port = static_cast<uint16_t>(u);
    } else if (key == "nconnect") {
      if (!ParseNumber(value, &u) || u < 1 || u > 16) return bad();
      nconnect = static_cast<int>(u);
    } else if (key == "rsize" || key == "wsize") {
      if (!ParseNumber(value, &u) || u < 4096) return bad();
      (key == "rsize" ? rsize : wsize) = u;
    } else if (key == "actimeo") {
      if (!ParseNumber(value, &d) || d < 0) return bad();
      acregmin = acregmax = acdirmin = acdirmax = d;
    } else if (key == "acregmin" || key == "acregmax" || key == "acdirmin" || key == "acdirmax") {
      if (!ParseNumber(value, &d) || d < 0) return bad();
      (key == "acregmin"   ? acregmin
       : key == "acregmax" ? acregmax
       : key == "acdirmin" ? acdirmin
                           : acdirmax) = d;
    } else if (key == "noac") {
      noac = value != "0";
    } else if (key == "nocto") {
      cto = value == "0";
    } else if (key == "uid") {
      if (!ParseNumber(value, &uid)) return bad();
    } else if (key == "gid") {
      if (!ParseNumber(value, &gid)) return bad();
    } else if (key == "timeo") {  // tenths of a second, as the Linux mount option
      if (!ParseNumber(value, &u) || u == 0) return bad();
      timeout = std::chrono::milliseconds(u * 100);
    } else if (key == "hard" || key == "soft" || key == "softerr") {
      if (value != "0") {
        recovery = key == "hard"   ? Recovery::kHard
                   : key == "soft" ? Recovery::kSoft
                                   : Recovery::kSoftErr;
      }
    } else if (key == "retrans") {
      if (!ParseNumber(value, &u)) return bad();
      retrans = static_cast<int>(u);
    } else if (key == "commit_ahead") {
      if (!ParseNumber(value, &commit_ahead_bytes)) return bad();
    } else if (key == "readahead") {
      if (!ParseNumber(value, &u)) return bad();
      readahead_bytes = u;
    } else if (key == "cache") {  // bytes of page cache (libnfs has pagecache=, in pages)
      size_t n;
      if (!ParseNumber(value, &n)) return bad();
      cache_bytes = n;
    } else if (key == "debug" || key == "auto-traverse-mounts" || key == "dircache" ||
               key == "autoreconnect" || key == "tcp-syncnt" || key == "pagecache") {
      // libnfs options without a meaning here; accepted so libnfs URLs work unchanged.
    } else {
      if (error) *error = fmt::format("unknown URL option '{}'", key);
      return Fail(EINVAL);
    }
  }
  return {};
}

}  // namespace nfsx

namespace nfsx::client {

Result<NfsUrl> ParseNfsUrl(std::string_view url, const ClientOptions& defaults,
                           std::string* error) {
  auto fail = [&](std::string what) -> Result<NfsUrl> {
    if (error) *error = std::move(what);
    return Fail(EINVAL);
  };
  constexpr std::string_view kScheme = "nfs://";
  if (url.substr(0, kScheme.size()) != kScheme) return fail("URL must start with nfs://");
  url.remove_prefix(kScheme.size());
  NfsUrl out;
  out.options = defaults;
  size_t q = url.find('?');
  std::string_view query = q == std::string_view::npos ? "" : url.substr(q + 1);
  url = url.substr(0, q);
  size_t slash = url.find('/');
  std::string_view authority = url.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? "/" : url.substr(slash);
  if (authority.empty()) return fail("URL has no host");
  if (authority.front() == '[') {  // [v6]:port
    size_t close = authority.find(']');
    if (close == std::string_view::npos) return fail("unterminated [IPv6] host");
    out.host = std::string(authority.substr(1, close - 1));
    authority.remove_prefix(close + 1);
  } else {
    size_t colon = authority.find(':');
    out.host = std::string(authority.substr(0, colon));
    authority = colon == std::string_view::npos ? "" : authority.substr(colon);
  }
  if (!authority.empty()) {
    uint32_t port;
    if (authority.front() != ':' || !ParseNumber(authority.substr(1), &port) || port > 65535) {
      return fail("bad port in URL");
    }
    out.options.nfs_port = static_cast<uint16_t>(port);
  }
  if (!PercentDecode(path, &out.path)) return fail("bad %-escape in URL path");
  std::string qerr;
  if (auto applied = out.options.ApplyQuery(query, &qerr); !applied) {
    if (error) *error = qerr;
    return std::unexpected(applied.error());
  }
  return out;
}

}  // namespace nfsx::client
