// TimeOverlay: makes the mtime/ctime that clients see strictly increase across
// successive modifications of a file made through this server, and never go
// backwards while the server runs.
//
// Clients tell their own writes from other people's by comparing wcc
// intervals (pre-op and post-op attributes). If two WRITEs land in the same
// tick of the filesystem's clock, both show the same mtime and the client
// cannot order them. Where the filesystem's clock is too coarse, the overlay
// shows the previous value plus one nanosecond instead; as soon as the
// filesystem's own value moves past what was shown, it is shown unchanged.
// (On Linux >= 6.13 multigrain timestamps usually make the overlay a no-op.)
//
// The overlay also tells observations (GETATTR and the like) that may have been
// taken while a modification was under way from those that cannot have been:
// every modification runs between BeginChange() and EndChange(), and an
// observation is shown only if no change began or ended since the Seq() it
// read before its stat (see Core::Attr). An observation older than one already
// presented (its ctime is behind) is refused as stale rather than taken for a
// new change.
//
// Thread-safe.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>

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
  enum class Outcome : uint8_t {
    kShown,  // attr now holds what clients see
    kRaced,  // a modification began or ended since `seq`: stat again
    kStale,  // older than an observation already presented: stat again
  };

  // What the overlay knows of a file: enough to rebuild it after the file's
  // state was evicted from the server's table (FileTable keeps it).
  struct State {
    vfs::Timespec fs_mtime, fs_ctime;        // last filesystem values
    vfs::Timespec shown_mtime, shown_ctime;  // last values shown
    uint64_t fs_size = 0;
    // Shown times differ from the filesystem's: a fresh overlay would show older ones.
    bool ahead() const { return shown_mtime != fs_mtime || shown_ctime != fs_ctime; }
  };

  // Rewrites attr.mtime/ctime into what clients see. `changes` names what the
  // operation that produced `attr` modified (kNone for a pre-op stat).
  // REQUIRES: the caller holds the file's modification (FileState::Modification)
  // or otherwise excludes modifications.
  void Present(vfs::Attr& attr, uint8_t changes);

  // For observations taken without excluding modifications: `seq` is what Seq()
  // returned before the stat that produced `attr`.
  uint64_t Seq();
  Outcome PresentObservation(vfs::Attr& attr, uint64_t seq);
  static bool InChange(uint64_t seq) { return seq & 1; }
  // For attributes taken while a modification may be under way, not to be sent:
  // gives them the latest times shown, and learns nothing from them.
  void PresentUnsettled(vfs::Attr& attr);

  // Bracket every modification. REQUIRES: modifications of the file are serialised.
  void BeginChange();
  void EndChange();

  // The state to keep when the file's entry is evicted, if a fresh overlay could
  // not reproduce it; Restore() before first use of a fresh overlay.
  std::optional<State> Snapshot();
  void Restore(const State& state);

 private:
  static vfs::Timespec Next(vfs::Timespec t);
  // REQUIRES: mu_ held.
  Outcome PresentLocked(vfs::Attr& attr, uint8_t changes, bool observation);

  std::mutex mu_;
  uint64_t seq_ = 0;  // GUARDED_BY(mu_): odd while a modification runs
  bool valid_ = false;
  State state_;  // GUARDED_BY(mu_)
};

}  // namespace nfsx::server
