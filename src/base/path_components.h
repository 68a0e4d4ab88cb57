// Splitting slash-separated paths (MOUNT paths, URL paths, paths below a mount).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace nfsx {

// Splits "/a//b/c/" into {"a", "b", "c"}: empty components are dropped.
inline std::vector<std::string> PathComponents(std::string_view path) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string_view::npos) j = path.size();
    if (j > i) out.emplace_back(path.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

}  // namespace nfsx
