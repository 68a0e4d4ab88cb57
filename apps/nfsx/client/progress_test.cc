#include "apps/nfsx/client/progress.h"

#include <gtest/gtest.h>

namespace nfsx::app::cli {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

TEST(Progress, Bytes) {
  EXPECT_EQ(FormatBytes(0), "0 B");
  EXPECT_EQ(FormatBytes(1023), "1023 B");
  EXPECT_EQ(FormatBytes(1024), "1.0 KiB");
  EXPECT_EQ(FormatBytes(1536), "1.5 KiB");
  EXPECT_EQ(FormatBytes(312 * kMiB + kMiB / 2), "312.5 MiB");
  EXPECT_EQ(FormatBytes(1024 * kMiB), "1.0 GiB");
}

TEST(Progress, Eta) {
  EXPECT_EQ(FormatEta(0), "0:00");
  EXPECT_EQ(FormatEta(7.4), "0:07");
  EXPECT_EQ(FormatEta(754), "12:34");
  EXPECT_EQ(FormatEta(3723), "1:02:03");
  EXPECT_EQ(FormatEta(-1), "--:--");
  EXPECT_EQ(FormatEta(1e12), "--:--");
}

TEST(Progress, LineFillsTheTerminalLessOneColumn) {
  std::string line = FormatProgressLine(12 * kMiB, 32 * kMiB, 4.0 * kMiB, 80);
  EXPECT_EQ(line,
            "  12.0 MiB / 32.0 MiB   37% [=========>                ]    4.0 MiB/s  ETA 0:05");
  EXPECT_EQ(line.size(), 79u);
}

TEST(Progress, LineAtBothEnds) {
  EXPECT_EQ(FormatProgressLine(0, 10 * kMiB, 0, 70),
            "       0 B / 10.0 MiB    0% [>              ]        0 B/s  ETA --:--");
  EXPECT_EQ(FormatProgressLine(10 * kMiB, 10 * kMiB, kMiB, 70),
            "  10.0 MiB / 10.0 MiB  100% [================]    1.0 MiB/s  ETA 0:00");
}

TEST(Progress, GrowingFilesNeverPassAHundredPercent) {
  std::string line = FormatProgressLine(20 * kMiB, 10 * kMiB, kMiB, 80);
  EXPECT_NE(line.find("20.0 MiB / 20.0 MiB  100%"), std::string::npos) << line;
}

TEST(Progress, NarrowTerminalKeepsTheNumbers) {
  EXPECT_EQ(FormatProgressLine(12 * kMiB, 32 * kMiB, 4.0 * kMiB, 60),
            "  12.0 MiB / 32.0 MiB   37%     4.0 MiB/s  ETA 0:05");
  EXPECT_EQ(FormatProgressLine(12 * kMiB, 32 * kMiB, 4.0 * kMiB, 40),
            "  12.0 MiB / 32.0 MiB   37% ETA 0:05");
  EXPECT_EQ(FormatProgressLine(12 * kMiB, 32 * kMiB, 4.0 * kMiB, 20), "  12.0 MiB / 32.0 M");
}

TEST(Progress, RateFollowsTheLastSeconds) {
  RateWindow w(3);
  EXPECT_EQ(w.BytesPerSecond(), 0);
  w.Add(0, 0);
  w.Add(1, 100);
  w.Add(2, 300);
  EXPECT_DOUBLE_EQ(w.BytesPerSecond(), 150);
  w.Add(5, 600);  // the samples at 0 and 1 fall out of the window
  EXPECT_DOUBLE_EQ(w.BytesPerSecond(), 100);
}

TEST(Progress, DrawsAfterASecondThenTenTimesASecond) {
  DrawThrottle t(10.0);
  EXPECT_FALSE(t.Due(10.0));
  EXPECT_FALSE(t.Due(10.99));
  EXPECT_TRUE(t.Due(11.0));
  EXPECT_FALSE(t.Due(11.05));
  EXPECT_TRUE(t.Due(11.15));
  EXPECT_FALSE(t.Due(11.2));
  EXPECT_TRUE(t.Due(20));
}

}  // namespace
}  // namespace nfsx::app::cli
