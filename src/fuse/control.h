// Talking to a running mount from another process (`nfsx mountstat`,
// `nfsx umount`): through read-only extended attributes of the mount's root,
// answered by the daemon itself (docs/fuse.md, "Control"). No socket, no state
// directory: whoever can see the mount can ask it.
#pragma once

#include <string>

#include "nfsx/result.h"

namespace nfsx::fuse {

inline constexpr const char kStatsXattr[] = "user.nfsx.stats";  // nfsstat-style table
inline constexpr const char kPidXattr[] = "user.nfsx.pid";      // the daemon's pid
inline constexpr const char kSyncXattr[] = "user.nfsx.sync";    // flush+commit all: "ok"

struct MountInfo {
  std::string mountpoint;  // absolute
  std::string source;      // host:/path
};

// The nfsx mount whose root is `path`; otherwise an error that *error explains
// (no such path, not a mount point, another file system).
Result<MountInfo> FindNfsxMount(const std::string& path, std::string* error);

// The value of a control attribute of the mount at `mountpoint`.
Result<std::string> ReadControl(const std::string& mountpoint, const char* name);

}  // namespace nfsx::fuse
