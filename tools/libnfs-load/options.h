// Command-line settings of nfsx-libnfs-load and the small parsers behind them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nfsx::load {

enum class Mode {
  kWrite,      // one sequential pass of writes
  kRead,       // one sequential pass of reads, every block checked
  kRandWrite,  // random writes for --seconds
  kRandRead,   // random reads for --seconds, every block checked
  kRandRw,     // random mix, --mixed R of them reads
  kVerify,     // one sequential pass of reads, payload compared too, file size checked
};

std::string_view ModeName(Mode mode);
// "write,verify" -> {kWrite, kVerify}; nullopt on an unknown name or an empty list.
std::optional<std::vector<Mode>> ParseModes(std::string_view text);
bool IsRandom(Mode mode);
bool Writes(Mode mode);

// "4096", "4k", "256K", "1m", "2g" (binary multiples); nullopt on anything else.
std::optional<uint64_t> ParseSize(std::string_view text);
// 4096 -> "4 KiB", 1048576 -> "1 MiB", 1000 -> "1000 B".
std::string FormatSize(uint64_t bytes);

struct Options {
  std::string url;
  std::vector<Mode> phases;
  int jobs = 1;
  int depth = 16;
  uint64_t block_size = 4096;
  uint64_t file_size = 64ull << 20;
  double seconds = 10;   // random modes
  uint64_t max_ops = 0;  // random modes: per job, 0 = no limit
  double read_fraction = 0.5;
  bool shared = false;
  bool create = false;
  bool fsync = false;
  uint64_t seed = 1;
  int timeout_ms = 60000;
  int max_reports = 20;  // mismatch lines printed (all are counted)
  std::string json_path;
  std::string state_path;
};

}  // namespace nfsx::load
