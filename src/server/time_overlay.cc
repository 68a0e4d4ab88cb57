#include "server/time_overlay.h"

namespace nfsx::server {

vfs::Timespec TimeOverlay::Next(vfs::Timespec t) {
  if (++t.nsec >= 1000000000u) {
    t.nsec = 0;
    ++t.sec;
  }
  return t;
}

vfs::Timespec TimeOverlay::Show(vfs::Timespec fs, vfs::Timespec& fs_prev,
                                vfs::Timespec& shown_prev, bool modified, bool exact) {
  vfs::Timespec shown;
  if (exact) {
    shown = fs;
  } else if (modified || fs != fs_prev) {
    // A change, ours or someone else's: it must show as later than before.
    shown = fs > shown_prev ? fs : Next(shown_prev);
  } else {
    shown = shown_prev;  // nothing changed on disk since we last looked
  }
  fs_prev = fs;
  shown_prev = shown;
  return shown;
}

void TimeOverlay::Present(vfs::Attr& attr, uint8_t changes) {
  std::lock_guard lock(mu_);
  if (!valid_) {
    valid_ = true;
    fs_mtime_ = shown_mtime_ = attr.mtime;
    fs_ctime_ = shown_ctime_ = attr.ctime;
    return;
  }
  attr.mtime = Show(attr.mtime, fs_mtime_, shown_mtime_, changes & kMtime, changes & kMtimeExact);
  attr.ctime = Show(attr.ctime, fs_ctime_, shown_ctime_, changes & kCtime, false);
}

}  // namespace nfsx::server
