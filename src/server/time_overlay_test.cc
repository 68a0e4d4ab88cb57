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
  // Someone wrote to the file directly within the same tick: the times on disk
  // did not move, the size did. It must still look like a change.
  vfs::Attr other = At(5, 999999999);
  other.size = 7;
  EXPECT_EQ(o.PresentObservation(other, o.Seq()), TimeOverlay::Outcome::kShown);
  EXPECT_GT(other.mtime, w.mtime);
  EXPECT_GT(other.ctime, w.ctime);
}

TEST(TimeOverlayTest, AnObservationOlderThanOneShownIsStaleNotAChange) {
  TimeOverlay o;
  vfs::Attr a = At(10, 0);
  o.Present(a, TimeOverlay::kNone);
  vfs::Attr newer = At(10, 500);  // somebody changed the file: seen by one reader...
  ASSERT_EQ(o.PresentObservation(newer, o.Seq()), TimeOverlay::Outcome::kShown);
  vfs::Attr older = At(10, 0);  // ...while another reader's stat from before arrives late
  EXPECT_EQ(o.PresentObservation(older, o.Seq()), TimeOverlay::Outcome::kStale);
  vfs::Attr again = At(10, 500);  // stat again: the same state as shown, not a new one
  ASSERT_EQ(o.PresentObservation(again, o.Seq()), TimeOverlay::Outcome::kShown);
  EXPECT_EQ(again.ctime, newer.ctime);
  EXPECT_EQ(again.mtime, newer.mtime);
}

TEST(TimeOverlayTest, AnObservationRacingAModificationIsRefused) {
  TimeOverlay o;
  vfs::Attr a = At(1, 0);
  o.Present(a, TimeOverlay::kNone);
  uint64_t before = o.Seq();
  o.BeginChange();
  vfs::Attr during = At(1, 0);
  EXPECT_EQ(o.PresentObservation(during, before), TimeOverlay::Outcome::kRaced);
  EXPECT_TRUE(TimeOverlay::InChange(o.Seq()));
  vfs::Attr post = At(1, 0);
  o.Present(post, TimeOverlay::kMtime | TimeOverlay::kCtime);
  o.EndChange();
  EXPECT_EQ(o.PresentObservation(during, before), TimeOverlay::Outcome::kRaced);
  vfs::Attr after = At(1, 0);
  ASSERT_EQ(o.PresentObservation(after, o.Seq()), TimeOverlay::Outcome::kShown);
  EXPECT_EQ(after.ctime, post.ctime);  // the state the modification showed, nothing newer
}

TEST(TimeOverlayTest, MtimeSetBackByAThirdPartyIsShownAsSet) {
  TimeOverlay o;
  vfs::Attr a = At(100, 0);
  o.Present(a, TimeOverlay::kNone);
  vfs::Attr touched = At(50, 0);  // `touch -d` on the server: mtime back, ctime now
  touched.ctime = {101, 0};
  ASSERT_EQ(o.PresentObservation(touched, o.Seq()), TimeOverlay::Outcome::kShown);
  EXPECT_EQ(touched.mtime, (vfs::Timespec{50, 0}));
  EXPECT_EQ(touched.ctime, (vfs::Timespec{101, 0}));
}

TEST(TimeOverlayTest, RestoredStateKeepsShowingTheSameTimes) {
  TimeOverlay o;
  vfs::Attr a = At(7, 0);
  o.Present(a, TimeOverlay::kNone);
  EXPECT_FALSE(o.Snapshot()) << "nothing to keep: the filesystem shows the same";
  vfs::Attr w = At(7, 0);
  o.Present(w, TimeOverlay::kMtime | TimeOverlay::kCtime);
  auto kept = o.Snapshot();
  ASSERT_TRUE(kept);
  TimeOverlay fresh;
  fresh.Restore(*kept);
  vfs::Attr g = At(7, 0);
  ASSERT_EQ(fresh.PresentObservation(g, fresh.Seq()), TimeOverlay::Outcome::kShown);
  EXPECT_EQ(g.mtime, w.mtime);
  EXPECT_EQ(g.ctime, w.ctime);
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
