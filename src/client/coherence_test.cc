// The client's own activity never looks like somebody else's (seed 000 through
// side doors: pollers, LOOKUPs and directory listings beside a writer), and
// somebody else's still does, even while we write without pause.
#include <fcntl.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "client/testing/test_servers.h"

namespace nfsx::client::testing {
namespace {

using namespace std::chrono_literals;

std::string OnDisk(const TestServer& s, const std::string& name) {
  std::ifstream in(s.dir() + "/" + name, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Threads that loop until the test is done with them; joined however the test ends.
class Loopers {
 public:
  ~Loopers() { Stop(); }
  // Runs `once` until Stop(); counts runs and failed runs.
  template <class F>
  void Add(F once) {
    threads_.emplace_back([this, once] {
      while (!done_.load()) {
        if (!once()) errors_.fetch_add(1);
        runs_.fetch_add(1);
      }
    });
  }
  void Stop() {
    done_.store(true);
    for (auto& t : threads_) t.join();
    threads_.clear();
  }
  uint64_t runs() const { return runs_.load(); }
  uint64_t errors() const { return errors_.load(); }

 private:
  std::atomic<bool> done_{false};
  std::atomic<uint64_t> runs_{0}, errors_{0};
  std::vector<std::thread> threads_;
};

// Every stat goes to the server, so the pollers' replies overlap the writes.
ClientOptions NoAttributeCache() {
  ClientOptions o;
  o.acregmin = o.acregmax = o.acdirmin = o.acdirmax = 0;
  return o;
}

TEST_P(ClientTest, WriterBesidePollersNeverInvalidatesItself) {
  auto c = Connect(NoAttributeCache());
  ASSERT_TRUE(c->Mkdir("dir"));
  auto f = c->Open("dir/stream.bin", O_CREAT | O_RDWR, 0644);
  ASSERT_TRUE(f.has_value());
  constexpr size_t kTotal = 64 << 20, kChunk = 256 << 10;
  const std::string chunk = Pattern(kChunk, 9);

  Loopers pollers;
  pollers.Add([&] { return c->GetAttr("dir/stream.bin").has_value(); });  // stat: GETATTR
  pollers.Add([&] { return c->Lstat("dir/stream.bin") && c->GetAttr("dir"); });
  pollers.Add([&] { return c->ReadDir("dir").has_value(); });  // ls -l: READDIRPLUS

  uint64_t last_size = 0;
  for (size_t off = 0; off < kTotal; off += kChunk) {
    ASSERT_TRUE((*f)->Pwrite(Bytes(chunk), off));
    auto st = (*f)->Fstat();
    ASSERT_TRUE(st.has_value());
    ASSERT_GE(st->size, last_size) << "the writer's own fstat went backwards at " << off;
    ASSERT_GE(st->size, off + kChunk);
    last_size = st->size;
  }
  ASSERT_TRUE((*f)->Close());
  pollers.Stop();
  EXPECT_EQ(pollers.errors(), 0u);
  EXPECT_GT(pollers.runs(), 3u) << "the pollers never ran beside the writer";
  EXPECT_EQ(c->stats().invalidations, 0u) << "the client took its own writes for someone else's";
  std::string disk = OnDisk(*server_, "dir/stream.bin");
  ASSERT_EQ(disk.size(), kTotal);
  for (size_t off = 0; off < kTotal; off += kChunk) {
    ASSERT_EQ(disk.compare(off, kChunk, chunk), 0) << off;
  }
}

TEST_P(ClientTest, ThreadsWritingReadingAndPollingOneFileNeverInvalidate) {
  auto c = Connect(NoAttributeCache());
  constexpr size_t kBlock = 64 << 10, kBlocks = 128;
  {
    auto f = c->Open("shared.bin", O_CREAT | O_RDWR, 0644);
    ASSERT_TRUE((*f)->Pwrite(Bytes(std::string(kBlock * kBlocks, 'z')), 0));
    ASSERT_TRUE((*f)->Close());
  }
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      // Two buffered writers, one O_DIRECT writer, one reader, each with its blocks.
      int flags = t == 2 ? (O_RDWR | O_DIRECT) : O_RDWR;
      auto f = c->Open("shared.bin", flags);
      if (!f) {
        errors.fetch_add(1);
        return;
      }
      std::string mine(kBlock, static_cast<char>('a' + t)), got(kBlock, '\0');
      for (int round = 0; round < 8; ++round) {
        for (size_t b = static_cast<size_t>(t); b < kBlocks; b += 4) {
          bool ok =
              t == 3 ? (*f)->Pread(std::as_writable_bytes(std::span(got)), b * kBlock).has_value()
                     : (*f)->Pwrite(Bytes(mine), b * kBlock).has_value();
          if (!ok || !c->GetAttr("shared.bin")) errors.fetch_add(1);
        }
        if (t != 3 && !(*f)->Fsync()) errors.fetch_add(1);
      }
      if (!(*f)->Close()) errors.fetch_add(1);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(c->stats().invalidations, 0u);
  std::string disk = OnDisk(*server_, "shared.bin");
  ASSERT_EQ(disk.size(), kBlock * kBlocks);
  for (size_t b = 0; b < kBlocks; ++b) {
    char want = b % 4 == 3 ? 'z' : static_cast<char>('a' + b % 4);
    ASSERT_EQ(disk[b * kBlock], want) << b;
    ASSERT_EQ(disk[b * kBlock + kBlock - 1], want) << b;
  }
}

uint64_t Reads(const Client& c) {
  return c.stats().nfs_calls[static_cast<int>(nfs3::nfsproc3::READ)];
}

// A RENAME moves the renamed file's ctime on the server; LINK and chmod elsewhere
// too. None of them changes its data: the cache stays.
TEST_P(ClientTest, RenamesAndChmodsKeepCachedData) {
  auto c = Connect(NoAttributeCache());
  const std::string data = Pattern(1 << 20, 5);
  {
    auto f = c->Open("a.bin", O_CREAT | O_RDWR, 0644);
    ASSERT_TRUE((*f)->Pwrite(Bytes(data), 0));
    ASSERT_TRUE((*f)->Close());
  }
  auto read_all = [&](const std::string& name) {
    auto f = c->Open(name, O_RDONLY);
    std::string got(data.size(), '\0');
    EXPECT_TRUE(f && (*f)->Pread(std::as_writable_bytes(std::span(got)), 0));
    return got;
  };
  ASSERT_EQ(read_all("a.bin"), data);
  const uint64_t reads = Reads(*c);
  ASSERT_TRUE(c->Rename("a.bin", "b.bin"));  // ours
  EXPECT_EQ(read_all("b.bin"), data);
  EXPECT_EQ(c->stats().invalidations, 0u) << "after our rename";
  ASSERT_TRUE(c->Link("b.bin", "c.bin"));  // ours
  EXPECT_EQ(read_all("c.bin"), data);
  EXPECT_EQ(c->stats().invalidations, 0u) << "after our link";
  auto other = Connect();
  SetAttrs mode;
  mode.mode = 0600;
  ASSERT_TRUE(other->SetAttr("b.bin", mode));  // theirs, the inode only
  EXPECT_EQ(read_all("c.bin"), data);
  EXPECT_EQ(c->stats().invalidations, 0u) << "after their chmod";
  // Their rename changes the directory too: that one is a change of its entries, so
  // from here on only the file's READs count.
  ASSERT_TRUE(other->Rename("b.bin", "d.bin"));
  EXPECT_EQ(read_all("c.bin"), data);
  auto st = c->GetAttr("c.bin");
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->mode, 0600u) << "the new attributes are seen";
  EXPECT_EQ(Reads(*c), reads) << "cached data was read again";
}

// Another client's write lands while ours stream without pause (four threads
// of direct WRITEs, so ours are always in flight): the pre-op attributes of our
// next WRITEs show a state we did not produce. Needs a server that sends them
// (nfsx; Ganesha sends none on WRITE: docs/client_consistency.md).
TEST(CoherenceTest, ThirdPartyWriteIsSeenWhileWeWriteWithoutPause) {
  NfsxServer server;
  std::string why;
  ASSERT_TRUE(server.Start(&why)) << why;
  ClientOptions o;
  o.acregmin = 1;
  o.acregmax = 2;
  auto a = Client::Connect(server.Url(""), o);
  auto b = Client::Connect(server.Url(""));
  ASSERT_TRUE(a && b);
  constexpr size_t kHead = 64 << 10, kChunk = 64 << 10, kSlots = 256;
  {
    auto f = (*a)->Open("busy.bin", O_CREAT | O_RDWR, 0644);
    ASSERT_TRUE((*f)->Pwrite(Bytes(std::string(kHead, 'a')), 0));
    ASSERT_TRUE((*f)->Close());
  }
  auto cached = (*a)->Open("busy.bin", O_RDONLY);
  ASSERT_TRUE(cached.has_value());
  std::string got(kHead, '\0');
  ASSERT_TRUE((*cached)->Pread(std::as_writable_bytes(std::span(got)), 0));  // now cached

  Loopers writers;
  const std::string ours(kChunk, 'w');
  for (int t = 0; t < 4; ++t) {
    auto f = (*a)->Open("busy.bin", O_WRONLY | O_DIRECT);
    ASSERT_TRUE(f.has_value());
    auto shared = std::shared_ptr<File>(std::move(*f));
    auto slot = std::make_shared<size_t>(0);
    writers.Add([shared, slot, t, &ours] {
      uint64_t off = kHead + ((*slot)++ % kSlots * 4 + static_cast<size_t>(t)) * kChunk;
      return shared->Pwrite(Bytes(ours), off).has_value();
    });
  }
  // Our writes stream for a few seconds (at least 200 of them, bounded), and
  // nobody may have seen a change before B writes.
  const auto streaming_since = std::chrono::steady_clock::now();
  for (auto until = streaming_since + 60s;
       (writers.runs() < 200 || std::chrono::steady_clock::now() < streaming_since + 3s) &&
       std::chrono::steady_clock::now() < until;) {
    std::this_thread::sleep_for(1ms);
  }
  ASSERT_GE(writers.runs(), 200u);
  ASSERT_EQ((*a)->stats().invalidations, 0u) << "a verdict before anybody else wrote";

  const uint64_t runs_before = writers.runs();
  auto fb = (*b)->Open("busy.bin", O_WRONLY);
  ASSERT_TRUE(fb.has_value());
  ASSERT_TRUE((*fb)->Pwrite(Bytes("THEIRS"), 1000));
  ASSERT_TRUE((*fb)->Close());  // on the server now
  // Seen within acregmax and a small margin: the next of our WRITE replies shows a
  // state we did not make, whatever the attribute timer says.
  const auto written = std::chrono::steady_clock::now();
  const auto allowed = std::chrono::seconds(static_cast<int>(o.acregmax)) + 3s;
  while ((*a)->stats().invalidations == 0 && std::chrono::steady_clock::now() < written + allowed) {
    std::this_thread::sleep_for(1ms);
  }
  const auto seen_after = std::chrono::steady_clock::now() - written;
  const uint64_t invalidations = (*a)->stats().invalidations;
  const uint64_t runs = writers.runs();
  writers.Stop();
  EXPECT_EQ(writers.errors(), 0u);
  EXPECT_GE(invalidations, 1u) << "not seen within acregmax + 3 s while we kept writing";
  EXPECT_GT(runs, runs_before) << "our writes did not go on while the change was detected";
  std::printf("third-party write seen %.1f ms after its writer closed the file\n",
              std::chrono::duration<double, std::milli>(seen_after).count());
  // The cache was dropped: our reads see their bytes.
  std::string mid(6, '\0');
  ASSERT_TRUE((*cached)->Pread(std::as_writable_bytes(std::span(mid)), 1000));
  EXPECT_EQ(mid, "THEIRS");
  ASSERT_TRUE((*cached)->Close());
  std::string disk = OnDisk(server, "busy.bin");
  EXPECT_EQ(disk.substr(1000, 6), "THEIRS");
  EXPECT_EQ(disk[999], 'a');
}

// A restart loses the server's memory of times it showed ahead of a coarse
// filesystem clock, so the same file can come back with slightly older times.
// docs/wcc.md: our client takes that for a stale reply, keeps its cache, and
// loses nothing.
TEST(CoherenceTest, TimesOlderAfterAServerRestartLoseNothing) {
  NfsxServer server;
  server.set_time_granularity(1000000000);
  std::string why;
  ASSERT_TRUE(server.Start(&why)) << why;
  ClientOptions o = NoAttributeCache();
  o.timeout = 2000ms;
  o.retrans = 20;
  auto c = Client::Connect(server.Url(""), o);
  ASSERT_TRUE(c.has_value());
  // Several changes of each file within one tick of the clock: shown a nanosecond
  // apart. Three files, so that at least one stays within its tick.
  struct Written {
    std::unique_ptr<File> file;
    std::string data;
    Stat stat;
  };
  std::vector<Written> files;
  for (int n = 0; n < 3; ++n) {
    auto f = (*c)->Open("r" + std::to_string(n) + ".bin", O_CREAT | O_RDWR, 0644);
    ASSERT_TRUE(f.has_value());
    std::string data = Pattern(64 << 10, 3 + n);
    for (int i = 0; i < 4; ++i) {
      ASSERT_TRUE((*f)->Pwrite(Bytes(data.substr(i * 1024, 1024)), i * 1024));
      ASSERT_TRUE((*f)->Fsync());
    }
    ASSERT_TRUE((*f)->Pwrite(Bytes(data), 0));
    ASSERT_TRUE((*f)->Fsync());
    auto st = (*f)->Fstat();
    ASSERT_TRUE(st.has_value());
    files.push_back({std::move(*f), data, *st});
  }

  server.Stop();
  ASSERT_TRUE(server.Start(&why)) << why;
  auto fresh = Client::Connect(server.Url(""), o);
  ASSERT_TRUE(fresh.has_value());
  int older = 0;
  for (int n = 0; n < 3; ++n) {
    auto seen = (*fresh)->GetAttr("r" + std::to_string(n) + ".bin");
    ASSERT_TRUE(seen.has_value());
    const Stat& before = files[n].stat;
    if (std::tie(seen->ctime.sec, seen->ctime.nsec) < std::tie(before.ctime.sec, before.ctime.nsec))
      ++older;
  }
  ASSERT_GT(older, 0) << "no file came back with older times: the test shows nothing";
  // The old client carries on: reads what it wrote, writes more, no invalidation.
  for (int n = 0; n < 3; ++n) {
    std::string name = "r" + std::to_string(n) + ".bin";
    Written& w = files[n];
    std::string got(w.data.size(), '\0');
    ASSERT_TRUE((*c)->GetAttr(name));
    ASSERT_TRUE(w.file->Pread(std::as_writable_bytes(std::span(got)), 0));
    EXPECT_EQ(got, w.data);
    ASSERT_TRUE(w.file->Pwrite(Bytes("after"), 100));
    ASSERT_TRUE(w.file->Close());
    w.data.replace(100, 5, "after");
    EXPECT_EQ(OnDisk(server, name), w.data);
  }
  EXPECT_EQ((*c)->stats().invalidations, 0u);
}

// ---- Found in review: each failed before its fix ----

// Our RENAME of a file whose data we cache: the server moves the file's ctime
// (Linux filesystems do on rename), no call of ours on that file says so, and
// the next GETATTR is judged somebody else's change.
TEST_P(ClientTest, RenamingOurCachedFileDoesNotInvalidateIt) {
  auto c = Connect(NoAttributeCache());
  const std::string data = Pattern(64 << 10, 5);
  {
    auto f = c->Open("before.bin", O_CREAT | O_RDWR, 0644);
    ASSERT_TRUE(f.has_value());
    ASSERT_TRUE((*f)->Pwrite(Bytes(data), 0));
    ASSERT_TRUE((*f)->Close());
  }
  auto f = c->Open("before.bin", O_RDONLY);
  ASSERT_TRUE(f.has_value());
  std::string got(data.size(), '\0');
  ASSERT_TRUE((*f)->Pread(std::as_writable_bytes(std::span(got)), 0));
  ASSERT_EQ(c->stats().invalidations, 0u);
  ASSERT_TRUE(c->Rename("before.bin", "after.bin"));
  ASSERT_TRUE(c->GetAttr("after.bin"));
  ASSERT_TRUE((*f)->Pread(std::as_writable_bytes(std::span(got)), 0));
  EXPECT_EQ(got, data);
  EXPECT_EQ(c->stats().invalidations, 0u) << "our own RENAME taken for another client's change";
}

// Removing one of two names of a cached file (our own LINK, then our own REMOVE):
// the file's nlink and ctime change with no call of ours on the file.
TEST_P(ClientTest, RemovingASecondNameOfOurCachedFileDoesNotInvalidateIt) {
  auto c = Connect(NoAttributeCache());
  const std::string data = Pattern(64 << 10, 6);
  {
    auto f = c->Open("one.bin", O_CREAT | O_RDWR, 0644);
    ASSERT_TRUE(f.has_value());
    ASSERT_TRUE((*f)->Pwrite(Bytes(data), 0));
    ASSERT_TRUE((*f)->Close());
  }
  ASSERT_TRUE(c->Link("one.bin", "two.bin"));
  auto f = c->Open("one.bin", O_RDONLY);
  ASSERT_TRUE(f.has_value());
  std::string got(data.size(), '\0');
  ASSERT_TRUE((*f)->Pread(std::as_writable_bytes(std::span(got)), 0));
  ASSERT_EQ(c->stats().invalidations, 0u) << "already after LINK";
  ASSERT_TRUE(c->Unlink("two.bin"));
  ASSERT_TRUE(c->GetAttr("one.bin"));
  EXPECT_EQ(c->stats().invalidations, 0u) << "our own REMOVE taken for another client's change";
}

// Another client writes after our last WRITE and before our COMMIT (O_DIRECT
// writes are committed at fsync). Close-to-open: our next open must see it.
TEST_P(ClientTest, ForeignWriteBeforeOurCommitIsSeenAtOpen) {
  auto a = Connect(NoAttributeCache());
  auto b = Connect();
  {
    auto f = a->Open("c2o.bin", O_CREAT | O_RDWR, 0644);
    ASSERT_TRUE(f.has_value());
    ASSERT_TRUE((*f)->Pwrite(Bytes(std::string(64 << 10, 'a')), 0));
    ASSERT_TRUE((*f)->Close());
  }
  auto cached = a->Open("c2o.bin", O_RDONLY);
  ASSERT_TRUE(cached.has_value());
  std::string got(64 << 10, '\0');
  ASSERT_TRUE((*cached)->Pread(std::as_writable_bytes(std::span(got)), 0));  // cached now
  auto direct = a->Open("c2o.bin", O_WRONLY | O_DIRECT);
  ASSERT_TRUE(direct.has_value());
  ASSERT_TRUE((*direct)->Pwrite(Bytes(std::string(4096, 'o')), 32768));  // UNSTABLE, uncommitted
  {
    auto fb = b->Open("c2o.bin", O_WRONLY);
    ASSERT_TRUE(fb.has_value());
    ASSERT_TRUE((*fb)->Pwrite(Bytes("THEIRS"), 1000));
    ASSERT_TRUE((*fb)->Close());
  }
  ASSERT_TRUE((*direct)->Fsync());  // our COMMIT
  ASSERT_TRUE((*direct)->Close());
  ASSERT_TRUE((*cached)->Close());
  auto again = a->Open("c2o.bin", O_RDONLY);  // close-to-open: a GETATTR
  ASSERT_TRUE(again.has_value());
  std::string mid(6, '\0');
  ASSERT_TRUE((*again)->Pread(std::as_writable_bytes(std::span(mid)), 1000));
  EXPECT_EQ(mid, "THEIRS") << "stale cached data after reopen; invalidations "
                           << a->stats().invalidations;
}

}  // namespace
}  // namespace nfsx::client::testing
