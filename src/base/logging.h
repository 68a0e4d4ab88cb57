// Levelled, structured logging. Formatting happens only when the level is on;
// the backend (spdlog) lives in one translation unit to keep builds fast.
#pragma once

#include <fmt/format.h>

#include <string_view>

namespace nfsx::log {

enum class Level { kTrace = 0, kDebug, kInfo, kWarn, kError, kOff };

// Thread-safe. Defaults to kInfo, or to NFSX_LOG_LEVEL (trace|debug|info|warn|error|off).
void SetLevel(Level level);
Level GetLevel();
bool ParseLevel(std::string_view name, Level* out);
void Write(Level level, std::string_view message);

inline bool Enabled(Level level) { return level >= GetLevel(); }

template <class... Args>
void Trace(fmt::format_string<Args...> f, Args&&... args) {
  if (Enabled(Level::kTrace)) Write(Level::kTrace, fmt::format(f, std::forward<Args>(args)...));
}
template <class... Args>
void Debug(fmt::format_string<Args...> f, Args&&... args) {
  if (Enabled(Level::kDebug)) Write(Level::kDebug, fmt::format(f, std::forward<Args>(args)...));
}
template <class... Args>
void Info(fmt::format_string<Args...> f, Args&&... args) {
  if (Enabled(Level::kInfo)) Write(Level::kInfo, fmt::format(f, std::forward<Args>(args)...));
}
template <class... Args>
void Warn(fmt::format_string<Args...> f, Args&&... args) {
  if (Enabled(Level::kWarn)) Write(Level::kWarn, fmt::format(f, std::forward<Args>(args)...));
}
template <class... Args>
void Error(fmt::format_string<Args...> f, Args&&... args) {
  if (Enabled(Level::kError)) Write(Level::kError, fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace nfsx::log
