#include "apps/nfsx/client/path_util.h"

namespace nfsx::app::cli {

std::vector<std::string> SplitPath(std::string_view path) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string_view::npos) j = path.size();
    std::string_view part = path.substr(i, j - i);
    if (!part.empty() && part != ".") out.emplace_back(part);
    i = j + 1;
  }
  return out;
}

std::string NormalizePath(std::string_view path) {
  bool absolute = !path.empty() && path.front() == '/';
  std::string out = absolute ? "/" : "";
  for (const std::string& part : SplitPath(path)) out = JoinPath(out, part);
  return out;
}

std::string JoinPath(std::string_view dir, std::string_view name) {
  std::string out(dir);
  if (!out.empty() && out.back() != '/') out += '/';
  out += name;
  return out;
}

std::string BaseName(std::string_view path) {
  auto parts = SplitPath(path);
  return parts.empty() ? std::string() : parts.back();
}

std::string DirName(std::string_view path) {
  auto parts = SplitPath(path);
  std::string out = !path.empty() && path.front() == '/' ? "/" : "";
  for (size_t i = 0; i + 1 < parts.size(); ++i) out = JoinPath(out, parts[i]);
  return out;
}

std::optional<std::string> PathBelow(std::string_view base, std::string_view path) {
  auto b = SplitPath(base);
  auto p = SplitPath(path);
  if (p.size() < b.size()) return std::nullopt;
  for (size_t i = 0; i < b.size(); ++i) {
    if (b[i] != p[i]) return std::nullopt;
  }
  std::string rest;
  for (size_t i = b.size(); i < p.size(); ++i) rest = JoinPath(rest, p[i]);
  return rest;
}

std::optional<std::string> PathWithoutTail(std::string_view path, std::string_view tail) {
  auto p = SplitPath(path);
  auto t = SplitPath(tail);
  if (t.size() > p.size()) return std::nullopt;
  size_t keep = p.size() - t.size();
  for (size_t i = 0; i < t.size(); ++i) {
    if (p[keep + i] != t[i]) return std::nullopt;
  }
  std::string out = !path.empty() && path.front() == '/' ? "/" : "";
  for (size_t i = 0; i < keep; ++i) out = JoinPath(out, p[i]);
  return out;
}

}  // namespace nfsx::app::cli
