#include "bench/units.h"

#include <fmt/format.h>

#include <charconv>

#include "tools/libnfs-load/options.h"

namespace nfsx::bench {

std::optional<uint64_t> ParseSize(std::string_view text) { return load::ParseSize(text); }

std::optional<std::vector<uint64_t>> ParseSizeList(std::string_view text) {
  std::vector<uint64_t> out;
  while (!text.empty()) {
    size_t comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    size_t dash = item.find('-');
    if (dash == std::string_view::npos) {
      auto v = ParseSize(item);
      if (!v || *v == 0) return std::nullopt;
      out.push_back(*v);
      continue;
    }
    auto lo = ParseSize(item.substr(0, dash));
    auto hi = ParseSize(item.substr(dash + 1));
    if (!lo || !hi || *lo == 0 || *lo > *hi) return std::nullopt;
    for (uint64_t v = *lo; v <= *hi; v *= 2) out.push_back(v);
  }
  if (out.empty()) return std::nullopt;
  return out;
}

std::optional<std::vector<int>> ParseThreadList(std::string_view text) {
  std::vector<int> out;
  bool list = text.find(',') != std::string_view::npos;
  while (!text.empty()) {
    size_t comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    int v = 0;
    auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (ec != std::errc() || end != item.data() + item.size() || v < 1 || v > 1024) {
      return std::nullopt;
    }
    out.push_back(v);
  }
  if (out.empty()) return std::nullopt;
  if (!list) {
    int max = out[0];
    out.clear();
    for (int t = 1; t < max; t *= 2) out.push_back(t);
    out.push_back(max);
  }
  return out;
}

std::string ShortSize(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"", "k", "m", "g", "t"};
  int unit = 0;
  while (unit < 4 && bytes >= 1024 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++unit;
  }
  return fmt::format("{}{}", bytes, kUnits[unit]);
}

std::string LongSize(uint64_t bytes) { return load::FormatSize(bytes); }

}  // namespace nfsx::bench
