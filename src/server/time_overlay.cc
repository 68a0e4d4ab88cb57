#include "server/time_overlay.h"

#include <algorithm>

namespace nfsx::server {

vfs::Timespec TimeOverlay::Next(vfs::Timespec t) {
  if (++t.nsec >= 1000000000u) {
    t.nsec = 0;
    ++t.sec;
  }
  return t;
}

TimeOverlay::Outcome TimeOverlay::PresentLocked(vfs::Attr& attr, uint8_t changes,
                                                bool observation) {
  State& s = state_;
  if (!valid_) {
    valid_ = true;
    s.fs_mtime = s.shown_mtime = attr.mtime;
    s.fs_ctime = s.shown_ctime = attr.ctime;
    s.fs_size = attr.size;
    return Outcome::kShown;
  }
  // The filesystem's ctime only moves forward (every change sets it to the
  // current time); an observation behind the last one presented was taken
  // before it, by a reader that lost a race with another.
  if (observation && attr.ctime < s.fs_ctime) return Outcome::kStale;
  bool changed = changes != kNone || attr.ctime != s.fs_ctime || attr.mtime != s.fs_mtime ||
                 attr.size != s.fs_size;
  if (changed) {
    // A change, ours or someone else's: it must show as later than before.
    vfs::Timespec ctime = std::max(attr.ctime, Next(s.shown_ctime));
    vfs::Timespec mtime;
    if (changes & kMtimeExact) {
      mtime = attr.mtime;
    } else if (attr.mtime < s.fs_mtime) {
      mtime = attr.mtime;  // set back explicitly (utimes): shown as set, like kMtimeExact
    } else if (attr.mtime > s.fs_mtime || (changes & kMtime) || attr.size != s.fs_size) {
      mtime = std::max(attr.mtime, Next(s.shown_mtime));
    } else {
      mtime = s.shown_mtime;  // the inode changed, its data did not
    }
    s.fs_mtime = attr.mtime;
    s.fs_ctime = attr.ctime;
    s.fs_size = attr.size;
    s.shown_mtime = mtime;
    s.shown_ctime = ctime;
  }
  attr.mtime = s.shown_mtime;
  attr.ctime = s.shown_ctime;
  return Outcome::kShown;
}

void TimeOverlay::Present(vfs::Attr& attr, uint8_t changes) {
  std::lock_guard lock(mu_);
  PresentLocked(attr, changes, false);
}

uint64_t TimeOverlay::Seq() {
  std::lock_guard lock(mu_);
  return seq_;
}

TimeOverlay::Outcome TimeOverlay::PresentObservation(vfs::Attr& attr, uint64_t seq) {
  std::lock_guard lock(mu_);
  if (seq != seq_ || InChange(seq)) return Outcome::kRaced;
  return PresentLocked(attr, kNone, true);
}

void TimeOverlay::PresentUnsettled(vfs::Attr& attr) {
  std::lock_guard lock(mu_);
  if (!valid_) return;
  attr.mtime = state_.shown_mtime;
  attr.ctime = state_.shown_ctime;
}

void TimeOverlay::BeginChange() {
  std::lock_guard lock(mu_);
  ++seq_;
}

void TimeOverlay::EndChange() {
  std::lock_guard lock(mu_);
  ++seq_;
}

std::optional<TimeOverlay::State> TimeOverlay::Snapshot() {
  std::lock_guard lock(mu_);
  if (!valid_ || !state_.ahead()) return std::nullopt;
  return state_;
}

void TimeOverlay::Restore(const State& state) {
  std::lock_guard lock(mu_);
  state_ = state;
  valid_ = true;
}

}  // namespace nfsx::server
