#include "apps/nfsx/client/nfs_url.h"

#include <vector>

#include "apps/nfsx/client/path_util.h"

namespace nfsx::app::cli {
namespace {

constexpr std::string_view kScheme = "nfs://";

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::optional<std::string> PercentDecode(std::string_view in) {
  std::string out;
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out.push_back(in[i]);
      continue;
    }
    int hi = i + 2 < in.size() ? HexValue(in[i + 1]) : -1;
    int lo = i + 2 < in.size() ? HexValue(in[i + 2]) : -1;
    if (hi < 0 || lo < 0) return std::nullopt;
    out.push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return out;
}

// Readable where possible: names with spaces or UTF-8 stay legible in messages.
std::string EncodePath(std::string_view path) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (char ch : path) {
    auto c = static_cast<unsigned char>(ch);
    if (c == '%' || c == '?' || c == '#' || c <= 0x20 || c == 0x7f) {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += ch;
    }
  }
  return out;
}

}  // namespace

bool IsNfsUrl(std::string_view arg) { return arg.starts_with(kScheme); }

std::optional<UrlParts> SplitNfsUrl(std::string_view url) {
  if (!IsNfsUrl(url)) return std::nullopt;
  url.remove_prefix(kScheme.size());
  UrlParts out;
  size_t q = url.find('?');
  if (q != std::string_view::npos) out.query = std::string(url.substr(q + 1));
  url = url.substr(0, q);
  size_t slash = url.find('/');
  out.authority = std::string(url.substr(0, slash));
  if (out.authority.empty()) return std::nullopt;
  std::string_view raw = slash == std::string_view::npos ? "/" : url.substr(slash);
  auto decoded = PercentDecode(raw);
  if (!decoded) return std::nullopt;
  // Dot segments are resolved as in any URL (RFC 3986), so that a URL's path is a plain
  // prefix test away from the directory a client mounted.
  out.path = "/";
  std::vector<std::string> parts;
  for (std::string& part : SplitPath(*decoded)) {
    if (part != "..") {
      parts.push_back(std::move(part));
    } else if (!parts.empty()) {
      parts.pop_back();
    }
  }
  for (const std::string& part : parts) out.path = JoinPath(out.path, part);
  return out;
}

std::string LastComponentAsWritten(std::string_view url) {
  if (!IsNfsUrl(url)) return "";
  url.remove_prefix(kScheme.size());
  url = url.substr(0, url.find('?'));
  size_t slash = url.find('/');
  if (slash == std::string_view::npos) return "";
  std::vector<std::string> parts;
  for (std::string_view rest = url.substr(slash); !rest.empty();) {
    size_t next = rest.find('/', 1);
    std::string_view part = rest.substr(1, next == std::string_view::npos ? rest.npos : next - 1);
    if (!part.empty()) parts.emplace_back(part);
    rest = next == std::string_view::npos ? std::string_view() : rest.substr(next);
  }
  return parts.empty() ? "" : parts.back();
}

std::string BuildNfsUrl(const UrlParts& parts) {
  std::string out = std::string(kScheme) + parts.authority + EncodePath(parts.path);
  if (!parts.query.empty()) out += '?' + parts.query;
  return out;
}

std::string ChildUrl(UrlParts parts, std::string_view name) {
  parts.path = JoinPath(parts.path, name);
  return BuildNfsUrl(parts);
}

}  // namespace nfsx::app::cli
