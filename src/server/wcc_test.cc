// Exact wcc_data: every WRITE's (pre, post) interval is taken atomically with it, so
// the intervals of all writes to a file chain up with no gaps and no overlaps, and
// the times strictly increase. Clients rely on this to tell their own writes from
// someone else's (seed 000).
#include <algorithm>
#include <thread>

#include "server/testing/server_fixture.h"

namespace nfsx::server::testing {
namespace {

class WccTest : public ServerTest {};

struct Interval {
  wcc_attr pre, post;
};

wcc_attr Wcc(const fattr3& f) { return wcc_attr{f.size, f.mtime, f.ctime}; }

TEST_P(WccTest, SequentialWritesChainAndTimesStrictlyIncrease) {
  nfs_fh3 fh = MustCreate("seq");
  std::optional<wcc_attr> last;
  for (int i = 0; i < 300; ++i) {
    auto w = WriteTo(fh, 0, "x");  // same size every time: only the times can tell
    ASSERT_EQ(w.status, NFS3_OK);
    ASSERT_TRUE(w.resok.file_wcc.before && w.resok.file_wcc.after);
    wcc_attr pre = *w.resok.file_wcc.before, post = Wcc(*w.resok.file_wcc.after);
    EXPECT_GT(post.mtime, pre.mtime) << i;
    EXPECT_GT(post.ctime, pre.ctime) << i;
    if (last) {
      EXPECT_EQ(pre, *last) << "write " << i << " did not start where the last ended";
    }
    last = post;
  }
  EXPECT_EQ(Wcc(AttrOf(fh)), *last);  // GETATTR agrees with the last post-op attributes
}

TEST_P(WccTest, ConcurrentWritersProduceOneUnbrokenChain) {
  nfs_fh3 fh = MustCreate("conc");
  auto start = AttrOf(fh);
  constexpr int kThreads = 4, kWrites = 150;
  std::mutex mu;
  std::vector<Interval> intervals;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto client = harness_->Connect(harness_->server().nfs_port());
      for (int i = 0; i < kWrites; ++i) {
        auto owner = std::make_shared<std::string>(std::string(1 + (i % 7), char('a' + t)));
        WRITE3args a;
        a.file = fh;
        a.offset = static_cast<uint64_t>((t * kWrites + i) * 8);
        a.count = static_cast<uint32_t>(owner->size());
        a.data = {std::as_bytes(std::span(*owner)), owner};
        auto r = client::CallSync<WRITE3res>(*client, NFS_PROGRAM, NFS_V3,
                                             static_cast<uint32_t>(nfsproc3::WRITE), cred_, a);
        if (!r || r->status != NFS3_OK || !r->resok.file_wcc.before || !r->resok.file_wcc.after) {
          ADD_FAILURE() << "write failed";
          return;
        }
        std::lock_guard lock(mu);
        intervals.push_back({*r->resok.file_wcc.before, Wcc(*r->resok.file_wcc.after)});
      }
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_EQ(intervals.size(), static_cast<size_t>(kThreads * kWrites));
  // Order by start time; each interval must begin exactly where the previous ended.
  std::sort(intervals.begin(), intervals.end(),
            [](const Interval& a, const Interval& b) { return a.pre.ctime < b.pre.ctime; });
  EXPECT_EQ(intervals.front().pre, Wcc(start));
  for (size_t i = 1; i < intervals.size(); ++i) {
    ASSERT_EQ(intervals[i].pre, intervals[i - 1].post) << "gap or overlap at " << i;
    ASSERT_GT(intervals[i].post.ctime, intervals[i].pre.ctime);
  }
  EXPECT_EQ(Wcc(AttrOf(fh)), intervals.back().post);
}

TEST_P(WccTest, DirectoryChangesChainToo) {
  std::optional<wcc_attr> last;
  for (int i = 0; i < 50; ++i) {
    auto c = CreateIn(root_, "f" + std::to_string(i));
    ASSERT_EQ(c.status, NFS3_OK);
    ASSERT_TRUE(c.resok.dir_wcc.before && c.resok.dir_wcc.after);
    if (last) {
      EXPECT_EQ(*c.resok.dir_wcc.before, *last);
    }
    EXPECT_GT(c.resok.dir_wcc.after->mtime, c.resok.dir_wcc.before->mtime);
    last = Wcc(*c.resok.dir_wcc.after);
    auto rm = Call<REMOVE3res>(nfsproc3::REMOVE, REMOVE3args{{root_, {"f" + std::to_string(i)}}});
    ASSERT_EQ(rm.status, NFS3_OK);
    EXPECT_EQ(*rm.resok.wcc.before, *last);
    last = Wcc(*rm.resok.wcc.after);
  }
}

TEST_P(WccTest, CommitReportsAnEmptyInterval) {
  nfs_fh3 fh = MustCreate("commit");
  WriteTo(fh, 0, "data");
  auto c = Call<COMMIT3res>(nfsproc3::COMMIT, COMMIT3args{fh, 0, 0});
  ASSERT_EQ(c.status, NFS3_OK);
  ASSERT_TRUE(c.resok.file_wcc.before && c.resok.file_wcc.after);
  EXPECT_EQ(*c.resok.file_wcc.before, Wcc(*c.resok.file_wcc.after));
}

INSTANTIATE_TEST_SUITE_P(Backends, WccTest,
                         ::testing::Values(BackendKind::kMemory, BackendKind::kLocal), BackendName);

}  // namespace
}  // namespace nfsx::server::testing
