// Sizes and rates as the bench's command line takes them and its tables print them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nfsx::bench {

// "4096", "4k", "1m", "2g" (binary multiples).
std::optional<uint64_t> ParseSize(std::string_view text);
// Record sizes: "4k", "4k,1m", or a range of powers of two "1k-16m" (both ends included).
std::optional<std::vector<uint64_t>> ParseSizeList(std::string_view text);
// Thread counts: "8" means 1,2,4,8; "1,3,6" is taken as written.
std::optional<std::vector<int>> ParseThreadList(std::string_view text);

// 1024 -> "1k", 16777216 -> "16m", 1000 -> "1000" (iozone-style column labels).
std::string ShortSize(uint64_t bytes);
// 4096 -> "4 KiB".
std::string LongSize(uint64_t bytes);

inline double MiBPerSecond(uint64_t bytes, double seconds) {
  return seconds > 0 ? static_cast<double>(bytes) / (1024.0 * 1024.0) / seconds : 0;
}

}  // namespace nfsx::bench
