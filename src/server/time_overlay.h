// TimeOverlay: makes the mtime/ctime that clients see strictly increase across
// successive modifications of a file made through this server.
//
// Clients tell their own writes from other people's by comparing wcc
// intervals (pre-op and post-op attributes). If two WRITEs land in the same
// tick of the filesystem's clock, both show the same mtime and the client
// cannot order them. Where the filesystem's clock is too coarse, the overlay
// shows the previous value plus one nanosecond instead; as soon as the
// filesystem's own value moves past what was shown, it is shown unchanged.
// (On Linux >= 6.13 multigrain timestamps usually make the overlay a no-op.)
//
// Thread-safe.
#pragma once

#include <cstdint>
#include <mutex>

#include "vfs/vfs.h"

namespace nfsx::server {

class TimeOverlay {
 public:
  enum Change : uint8_t {
    kNone = 0,
    kMtime = 1,       // the operation modified the data (or the directory's entries)
    kCtime = 2,       // the operation modified the inode
    kMtimeExact = 4,  // the client set mtime to a value of its own: show it as is
  };

  // Rewrites attr.mtime/ctime into what clients see. `changes` names what the
  // operation that produced `attr` modified (kNone for a plain GETATTR).
  void Present(vfs::Attr& attr, uint8_t changes);

 private:
  static vfs::Timespec Next(vfs::Timespec t);
  static vfs::Timespec Show(vfs::Timespec fs, vfs::Timespec& fs_prev, vfs::Timespec& shown_prev,
                            bool modified, bool exact);

  std::mutex mu_;
  bool valid_ = false;
  vfs::Timespec fs_mtime_, fs_ctime_;        // GUARDED_BY(mu_): last filesystem values
  vfs::Timespec shown_mtime_, shown_ctime_;  // GUARDED_BY(mu_): last values shown
};

}  // namespace nfsx::server
