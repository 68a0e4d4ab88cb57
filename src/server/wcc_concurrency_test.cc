// Exact wcc_data while other calls look at the file (seed 000 through the server):
// a GETATTR, READ, ACCESS, FSSTAT, LOOKUP or READDIRPLUS that runs beside WRITEs
// and SETATTRs must neither break the chain of their (pre, post) intervals nor
// show a state that no modification's post-op attributes showed. And times shown never go
// backwards, even when the file's server-side state is evicted between two looks.
#include <algorithm>
#include <atomic>
#include <map>
#include <set>
#include <thread>

#include "server/testing/server_fixture.h"

namespace nfsx::server::testing {
namespace {

wcc_attr Wcc(const fattr3& f) { return wcc_attr{f.size, f.mtime, f.ctime}; }

struct Interval {
  wcc_attr pre, post;
};

struct StateOrder {
  bool operator()(const wcc_attr& a, const wcc_attr& b) const {
    return std::tie(a.ctime, a.mtime, a.size) < std::tie(b.ctime, b.mtime, b.size);
  }
};

class WccConcurrencyTest : public ServerTest {
 protected:
  template <class Res, class Args>
  std::optional<Res> CallOn(rpc::RpcClient& c, nfsproc3 proc, const Args& args) {
    auto r =
        client::CallSync<Res>(c, NFS_PROGRAM, NFS_V3, static_cast<uint32_t>(proc), cred_, args);
    if (!r || r->status != NFS3_OK) return std::nullopt;
    return *r;
  }
};

TEST_P(WccConcurrencyTest, WritersAndPollersChainExactly) {
  nfs_fh3 fh = MustCreate("hot");
  const wcc_attr start = Wcc(AttrOf(fh));
  constexpr int kWriters = 2, kWritesEach = 10000, kBlock = 512, kSetattrs = 2000;
  std::atomic<int> writers_left{kWriters + 1};
  std::mutex mu;
  std::vector<Interval> intervals;
  std::vector<std::pair<const char*, wcc_attr>> seen;  // what the pollers were shown
  std::atomic<int> failures{0};

  std::vector<std::thread> threads;
  for (int t = 0; t < kWriters; ++t) {
    threads.emplace_back([&, t] {
      auto c = harness_->Connect(harness_->server().nfs_port());
      auto data = std::make_shared<std::string>(kBlock, char('a' + t));
      std::vector<Interval> mine;
      for (int i = 0; i < kWritesEach; ++i) {
        WRITE3args a;
        a.file = fh;
        a.offset = static_cast<uint64_t>(i * kWriters + t) * kBlock;
        a.count = kBlock;
        a.data = {std::as_bytes(std::span(*data)), data};
        auto r = CallOn<WRITE3res>(*c, nfsproc3::WRITE, a);
        if (!r || !r->resok.file_wcc.before || !r->resok.file_wcc.after) {
          failures.fetch_add(1);
          break;
        }
        mine.push_back({*r->resok.file_wcc.before, Wcc(*r->resok.file_wcc.after)});
      }
      writers_left.fetch_sub(1);
      std::lock_guard lock(mu);
      intervals.insert(intervals.end(), mine.begin(), mine.end());
    });
  }
  // A chmod among the WRITEs: another modification in the same chain.
  threads.emplace_back([&] {
    auto c = harness_->Connect(harness_->server().nfs_port());
    std::vector<Interval> mine;
    for (int i = 0; i < kSetattrs; ++i) {
      SETATTR3args a;
      a.object = fh;
      a.new_attributes.mode = i % 2 ? 0600 : 0644;
      auto r = CallOn<SETATTR3res>(*c, nfsproc3::SETATTR, a);
      if (!r || !r->resok.obj_wcc.before || !r->resok.obj_wcc.after) {
        failures.fetch_add(1);
        break;
      }
      mine.push_back({*r->resok.obj_wcc.before, Wcc(*r->resok.obj_wcc.after)});
    }
    writers_left.fetch_sub(1);
    std::lock_guard lock(mu);
    intervals.insert(intervals.end(), mine.begin(), mine.end());
  });
  auto poll = [&](const char* what, auto&& once) {
    threads.emplace_back([&, what, once] {
      auto c = harness_->Connect(harness_->server().nfs_port());
      std::vector<std::pair<const char*, wcc_attr>> mine;
      while (writers_left.load() > 0) {
        std::optional<fattr3> attr = once(*c);
        if (!attr) {
          failures.fetch_add(1);
          break;
        }
        mine.push_back({what, Wcc(*attr)});
      }
      std::lock_guard lock(mu);
      seen.insert(seen.end(), mine.begin(), mine.end());
    });
  };
  poll("GETATTR", [&](rpc::RpcClient& c) -> std::optional<fattr3> {
    auto r = CallOn<GETATTR3res>(c, nfsproc3::GETATTR, GETATTR3args{fh});
    return r ? std::optional(r->resok.obj_attributes) : std::nullopt;
  });
  poll("READ", [&](rpc::RpcClient& c) -> std::optional<fattr3> {
    auto r = CallOn<READ3res>(c, nfsproc3::READ, READ3args{fh, 0, 4096});
    return r ? r->resok.file_attributes : std::nullopt;
  });
  poll("ACCESS", [&](rpc::RpcClient& c) -> std::optional<fattr3> {
    auto r = CallOn<ACCESS3res>(c, nfsproc3::ACCESS, ACCESS3args{fh, 0x3f});
    return r ? r->resok.obj_attributes : std::nullopt;
  });
  poll("FSSTAT", [&](rpc::RpcClient& c) -> std::optional<fattr3> {
    auto r = CallOn<FSSTAT3res>(c, nfsproc3::FSSTAT, FSSTAT3args{fh});
    return r ? r->resok.obj_attributes : std::nullopt;
  });
  poll("LOOKUP", [&](rpc::RpcClient& c) -> std::optional<fattr3> {
    auto r = CallOn<LOOKUP3res>(c, nfsproc3::LOOKUP, LOOKUP3args{{root_, {"hot"}}});
    return r ? r->resok.obj_attributes : std::nullopt;
  });
  poll("READDIRPLUS", [&](rpc::RpcClient& c) -> std::optional<fattr3> {
    READDIRPLUS3args a{root_, 0, {}, 4096, 65536};
    auto r = CallOn<READDIRPLUS3res>(c, nfsproc3::READDIRPLUS, a);
    if (!r) return std::nullopt;
    for (const entryplus3& e : r->resok.entries) {
      if (e.name.value == "hot") return e.name_attributes;
    }
    return std::nullopt;
  });
  for (auto& t : threads) t.join();
  ASSERT_EQ(failures.load(), 0);
  ASSERT_EQ(intervals.size(), static_cast<size_t>(kWriters * kWritesEach + kSetattrs));

  // One unbroken chain from the start, in the order the server ran the WRITEs.
  std::sort(intervals.begin(), intervals.end(),
            [](const Interval& a, const Interval& b) { return a.pre.ctime < b.pre.ctime; });
  EXPECT_EQ(intervals.front().pre, start);
  int breaks = 0;
  for (size_t i = 1; i < intervals.size(); ++i) {
    if (intervals[i].pre != intervals[i - 1].post) ++breaks;
    EXPECT_GT(intervals[i].post.ctime, intervals[i].pre.ctime);
  }
  EXPECT_EQ(breaks, 0)
      << "modifications whose pre-op state was not the previous one's post-op state";

  // Every state a poller saw is one the chain went through.
  std::set<wcc_attr, StateOrder> states{start};
  for (const Interval& i : intervals) states.insert(i.post);
  int strangers = 0;
  for (const auto& [what, attr] : seen) {
    if (!states.contains(attr) && strangers++ < 5) {
      ADD_FAILURE() << what << " showed a state no WRITE produced: size " << attr.size << " ctime "
                    << attr.ctime.seconds << "." << attr.ctime.nseconds;
    }
  }
  EXPECT_EQ(strangers, 0) << "of " << seen.size() << " observations";
  EXPECT_GT(seen.size(), 4u) << "the pollers never ran beside the writers";
  EXPECT_EQ(Wcc(AttrOf(fh)), intervals.back().post);
}

// The server forgets the state of files nobody uses (a small table here, so it
// forgets all the time) on a filesystem whose clock ticks once a second: every
// second change within a tick is shown a nanosecond later than the first, and
// that must survive the file's state being evicted and made anew.
class WccEvictionTest : public WccConcurrencyTest {
 protected:
  WccEvictionTest() {
    tune_ = [](server::ServerOptions& o) { o.core.file_table_capacity = 16; };
  }
};

TEST_P(WccEvictionTest, ShownTimesNeverGoBackAfterEviction) {
  harness_->faults().SetTimeGranularity(1000000000);
  constexpr int kFiles = 48, kDirs = 16, kRounds = 3;
  std::vector<nfs_fh3> files, dirs;
  for (int i = 0; i < kFiles; ++i) files.push_back(MustCreate("f" + std::to_string(i)));
  for (int i = 0; i < kDirs; ++i) {
    MKDIR3args a;
    a.where = {root_, {"d" + std::to_string(i)}};
    a.attributes.mode = 0755;
    auto r = Call<MKDIR3res>(nfsproc3::MKDIR, a);
    ASSERT_EQ(r.status, NFS3_OK);
    dirs.push_back(*r.resok.obj);
  }
  std::map<std::string, wcc_attr> last;  // by handle: the latest state shown
  auto key = [](const nfs_fh3& fh) {
    return std::string(reinterpret_cast<const char*>(fh.data.data()), fh.size);
  };
  auto shown = [&](const nfs_fh3& fh, const wcc_attr& now, const char* by) {
    auto it = last.find(key(fh));
    if (it != last.end()) {
      EXPECT_GE(now.ctime, it->second.ctime) << by << ": ctime went backwards";
      EXPECT_GE(now.mtime, it->second.mtime) << by << ": mtime went backwards";
    }
    last[key(fh)] = now;
  };
  for (int round = 0; round < kRounds; ++round) {
    // Two changes of each file's inode, and two of each directory's entries.
    for (const nfs_fh3& fh : files) {
      for (uint32_t mode : {0600u, 0644u}) {
        SETATTR3args a;
        a.object = fh;
        a.new_attributes.mode = mode;
        auto r = Call<SETATTR3res>(nfsproc3::SETATTR, a);
        ASSERT_EQ(r.status, NFS3_OK);
        shown(fh, Wcc(*r.resok.obj_wcc.after), "SETATTR");
      }
    }
    for (const nfs_fh3& dir : dirs) {
      auto c = CreateIn(dir, "x");
      ASSERT_EQ(c.status, NFS3_OK);
      shown(dir, Wcc(*c.resok.dir_wcc.after), "CREATE");
      auto rm = Call<REMOVE3res>(nfsproc3::REMOVE, REMOVE3args{{dir, {"x"}}});
      ASSERT_EQ(rm.status, NFS3_OK);
      shown(dir, Wcc(*rm.resok.wcc.after), "REMOVE");
    }
    // By now most of them were evicted: look again.
    for (const nfs_fh3& fh : files) shown(fh, Wcc(AttrOf(fh)), "GETATTR of a file");
    for (const nfs_fh3& dir : dirs) shown(dir, Wcc(AttrOf(dir)), "GETATTR of a directory");
  }
  EXPECT_GT(harness_->server().core().files().restored(), 0u)
      << "no file's state was ever evicted ahead of the filesystem: the test tested nothing";
}

INSTANTIATE_TEST_SUITE_P(Backends, WccConcurrencyTest,
                         ::testing::Values(BackendKind::kMemory, BackendKind::kLocal), BackendName);
INSTANTIATE_TEST_SUITE_P(Backends, WccEvictionTest,
                         ::testing::Values(BackendKind::kMemory, BackendKind::kLocal), BackendName);

}  // namespace
}  // namespace nfsx::server::testing
