#include "tools/libnfs-load/options.h"

#include <fmt/format.h>

#include <charconv>

namespace nfsx::load {

std::string_view ModeName(Mode mode) {
  switch (mode) {
    case Mode::kWrite:
      return "write";
    case Mode::kRead:
      return "read";
    case Mode::kRandWrite:
      return "randwrite";
    case Mode::kRandRead:
      return "randread";
    case Mode::kRandRw:
      return "randrw";
    case Mode::kVerify:
      return "verify";
  }
  return "?";
}

std::optional<std::vector<Mode>> ParseModes(std::string_view text) {
  static constexpr Mode kAll[] = {Mode::kWrite,    Mode::kRead,   Mode::kRandWrite,
                                  Mode::kRandRead, Mode::kRandRw, Mode::kVerify};
  std::vector<Mode> out;
  while (!text.empty()) {
    size_t comma = text.find(',');
    std::string_view name = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    bool found = false;
    for (Mode m : kAll) {
      if (ModeName(m) == name) {
        out.push_back(m);
        found = true;
      }
    }
    if (!found) return std::nullopt;
  }
  if (out.empty()) return std::nullopt;
  return out;
}

bool IsRandom(Mode mode) {
  return mode == Mode::kRandWrite || mode == Mode::kRandRead || mode == Mode::kRandRw;
}

bool Writes(Mode mode) {
  return mode == Mode::kWrite || mode == Mode::kRandWrite || mode == Mode::kRandRw;
}

std::optional<uint64_t> ParseSize(std::string_view text) {
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end == text.data()) return std::nullopt;
  std::string_view suffix(end, static_cast<size_t>(text.data() + text.size() - end));
  int shift = 0;
  if (suffix.empty() || suffix == "b" || suffix == "B") {
    shift = 0;
  } else if (suffix == "k" || suffix == "K" || suffix == "KiB") {
    shift = 10;
  } else if (suffix == "m" || suffix == "M" || suffix == "MiB") {
    shift = 20;
  } else if (suffix == "g" || suffix == "G" || suffix == "GiB") {
    shift = 30;
  } else {
    return std::nullopt;
  }
  if (shift && value > (UINT64_MAX >> shift)) return std::nullopt;
  return value << shift;
}

std::string FormatSize(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB"};
  int unit = 0;
  while (unit < 3 && bytes >= 1024 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++unit;
  }
  return fmt::format("{} {}", bytes, kUnits[unit]);
}

}  // namespace nfsx::load
