#include "base/logging.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <cstdlib>

namespace nfsx::log {
namespace {

Level InitialLevel() {
  Level level = Level::kInfo;
  if (const char* env = std::getenv("NFSX_LOG_LEVEL")) ParseLevel(env, &level);
  return level;
}

std::atomic<Level>& CurrentLevel() {
  static std::atomic<Level> level{InitialLevel()};
  return level;
}

spdlog::logger& Logger() {
  // Logs go to stderr so that stdout stays clean for command output.
  static std::shared_ptr<spdlog::logger> logger = [] {
    auto l = spdlog::stderr_color_mt("nfsx");
    l->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ [%t] %v");
    l->set_level(spdlog::level::trace);
    return l;
  }();
  return *logger;
}

}  // namespace

void SetLevel(Level level) { CurrentLevel().store(level, std::memory_order_relaxed); }
Level GetLevel() { return CurrentLevel().load(std::memory_order_relaxed); }

bool ParseLevel(std::string_view name, Level* out) {
  static constexpr std::pair<std::string_view, Level> kNames[] = {
      {"trace", Level::kTrace}, {"debug", Level::kDebug}, {"info", Level::kInfo},
      {"warn", Level::kWarn},   {"error", Level::kError}, {"off", Level::kOff}};
  for (const auto& [n, l] : kNames) {
    if (n == name) {
      *out = l;
      return true;
    }
  }
  return false;
}

void Write(Level level, std::string_view message) {
  static constexpr spdlog::level::level_enum kMap[] = {
      spdlog::level::trace, spdlog::level::debug, spdlog::level::info,
      spdlog::level::warn,  spdlog::level::err,   spdlog::level::off};
  Logger().log(kMap[static_cast<int>(level)], "{}", message);
}

}  // namespace nfsx::log
