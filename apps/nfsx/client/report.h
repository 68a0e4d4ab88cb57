// How a client command talks to its user on stderr: one line per failure, in the form
// coreutils use ("nfsx cat: nfs://h/e/f: No such file or directory"), and --stats.
#pragma once

#include <string>
#include <string_view>

namespace nfsx::app::cli {

class Connections;

class Reporter {
 public:
  explicit Reporter(std::string_view command) : prefix_("nfsx " + std::string(command)) {}

  // "<prefix>: <what>: <strerror(err)>"; marks the command as failed.
  void Error(std::string_view what, int err);
  // "<prefix>: <what>: <message>"; marks the command as failed.
  void Error(std::string_view what, std::string_view message);
  // "<prefix>: <message>"; marks the command as failed.
  void Error(std::string_view message);

  bool failed() const { return failed_; }
  // 0, or 1 after any failure, as coreutils do.
  int ExitCode() const { return failed_ ? 1 : 0; }

 private:
  std::string prefix_;
  bool failed_ = false;
};

// Writes the command's WireStats in the layout of `nfsstat -c` to stderr.
void PrintStats(const Connections& connections);

}  // namespace nfsx::app::cli
