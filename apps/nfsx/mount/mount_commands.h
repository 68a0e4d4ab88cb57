// `nfsx mount`, `nfsx umount`, `nfsx mountstat`: the FUSE mount's commands.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace nfsx::app::mount {

struct MountArgs {
  std::string url;
  std::string mountpoint;
  std::vector<std::string> options;  // -o lists, joined with ','
  bool foreground = false;
  std::string log_file;
};

int RunMount(const MountArgs& args);
int RunUmount(const std::string& mountpoint, bool force);
int RunMountstat(const std::string& mountpoint);

// Runs `body` in a child process that outlives this one (setsid, cwd /). The
// child calls `ready()` once it is mounted: its stdio then goes to `log_file`
// (or /dev/null) and this process returns 0. If the child exits before
// ready(), this returns its exit status; the child printed why, to our stderr.
int RunDetached(const std::function<int(const std::function<void()>& ready)>& body,
                const std::string& log_file);

}  // namespace nfsx::app::mount
