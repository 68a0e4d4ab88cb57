// FuseMount: one `nfsx mount`: the client connected to the server, the FUSE
// session mounted on the mountpoint, and the request loop.
#pragma once

#include <memory>
#include <string>

#include "nfsx/result.h"

struct fuse_session;

namespace nfsx::fuse {

class NfsFuse;

class FuseMount {
 public:
  // Connects to the server named by `url`, resolves the path below the export,
  // and mounts it on `mountpoint` with the -o `options`. On failure *error is one
  // line saying what went wrong (bad URL, server unreachable, export refused,
  // missing mountpoint, no FUSE...). Call with SIGINT/SIGTERM/SIGHUP not yet
  // handled: they are blocked in every thread but the one that calls Run().
  static Result<std::unique_ptr<FuseMount>> Create(const std::string& url,
                                                   const std::string& mountpoint,
                                                   const std::string& options, std::string* error);
  ~FuseMount();

  const std::string& mountpoint() const { return mountpoint_; }

  // Serves requests until the file system is unmounted (umount, fusermount3 -u,
  // nfsx umount) or SIGINT/SIGTERM/SIGHUP arrives; then unmounts if still
  // mounted, and flushes and commits everything written. 0 if all data reached
  // the server's disk, 1 otherwise.
  int Run();

 private:
  FuseMount() = default;

  std::string mountpoint_;
  int max_threads_ = 32;
  std::unique_ptr<NfsFuse> fs_;
  fuse_session* se_ = nullptr;
};

}  // namespace nfsx::fuse
