#include "server/time_overlay.h"

#include <gtest/gtest.h>

namespace nfsx::server {
namespace {

vfs::Attr At(int64_t sec, uint32_t nsec) {
  vfs::Attr a;
  a.mtime = a.ctime = {sec, nsec};
  return a;
}

TEST(TimeOverlayTest, CoarseClockStillStrictlyIncreases) {
  TimeOverlay o;
  vfs::Attr a = At(100, 0);
  o.Present(a, TimeOverlay::kNone);
  EXPECT_EQ(a.mtime, (vfs::Timespec{100, 0}));
  vfs::Timespec last = a.mtime;
  for (int i = 0; i < 5; ++i) {  // five writes in one tick of a coarse clock
    vfs::Attr w = At(100, 0);
    o.Present(w, TimeOverlay::kMtime | TimeOverlay::kCtime);
    EXPECT_GT(w.mtime, last);
    EXPECT_GT(w.ctime, last);
    last = w.mtime;
  }
  vfs::Attr g = At(100, 0);  // a GETATTR: nothing changed on disk since
  o.Present(g, TimeOverlay::kNone);
  EXPECT_EQ(g.mtime, last);
  vfs::Attr later = At(101, 0);  // the clock moved on: shown as is
  o.Present(later, TimeOverlay::kMtime | TimeOverlay::kCtime);
  EXPECT_EQ(later.mtime, (vfs::Timespec{101, 0}));
}

TEST(TimeOverlayTest, ThirdPartyChangeInTheSameTickIsVisible) {
  TimeOverlay o;
  vfs::Attr a = At(5, 999999999);
  o.Present(a, TimeOverlay::kNone);
  vfs::Attr w = At(5, 999999999);
  o.Present(w, TimeOverlay::kMtime | TimeOverlay::kCtime);
  EXPECT_EQ(w.mtime, (vfs::Timespec{6, 0}));  // nanoseconds carry into seconds
  // Someone changed the file directly: the filesystem shows a new (but older than
  // shown) time. The change must still look like a change.
  vfs::Attr other = At(5, 999999999 - 1);
  o.Present(other, TimeOverlay::kNone);
  EXPECT_GT(other.mtime, w.mtime);
}

TEST(TimeOverlayTest, ClientSetMtimeIsShownExactly) {
  TimeOverlay o;
  vfs::Attr a = At(500, 0);
  o.Present(a, TimeOverlay::kNone);
  vfs::Attr set = At(10, 5);
  set.ctime = {500, 0};
  o.Present(set, TimeOverlay::kMtimeExact | TimeOverlay::kCtime);
  EXPECT_EQ(set.mtime, (vfs::Timespec{10, 5}));
  EXPECT_GT(set.ctime, (vfs::Timespec{500, 0}));
}

}  // namespace
}  // namespace nfsx::server
