// Microbenchmarks of the per-call work every RPC pays before and after a procedure runs
// (issue #11): XDR encoding and decoding of the hottest NFSv3 messages, record marking
// of a stream of calls, the duplicate request cache's lookup and store, and the per-call
// counters.
//
//   build/src/rpc/rpc_bench --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>
#include <netinet/in.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <vector>

#include "base/logging.h"
#include "base/out_buffer.h"
#include "base/sharded_counter.h"
#include "proto/nfs3_types.h"
#include "rpc/drc.h"
#include "rpc/memory_budget.h"
#include "rpc/program.h"
#include "rpc/record_marking.h"
#include "xdr/xdr.h"

namespace nfsx::rpc {
namespace {

nfs3::nfs_fh3 Handle() {
  nfs3::nfs_fh3 fh;
  std::vector<std::byte> b(28, std::byte{0x5A});
  fh.assign(b);
  return fh;
}

nfs3::fattr3 Attr(uint64_t n) {
  nfs3::fattr3 a;
  a.type = nfs3::NF3REG;
  a.mode = 0644;
  a.size = a.used = n * 4096;
  a.fileid = n;
  a.mtime = a.ctime = {1'700'000'000, static_cast<uint32_t>(n)};
  return a;
}

std::vector<std::byte> Encoded(const auto& v) {
  OutBuffer out;
  xdr::Encode(&out, v);
  return out.Flatten();
}

// WRITE arguments with `size` bytes of data: the data is a view, so the cost should not
// grow with it.
void BM_DecodeWriteArgs(benchmark::State& state) {
  nfs3::WRITE3args a;
  a.file = Handle();
  a.offset = 1 << 30;
  std::vector<std::byte> data(static_cast<size_t>(state.range(0)), std::byte{1});
  a.count = static_cast<uint32_t>(data.size());
  a.data = xdr::Opaque{std::span<const std::byte>(data), nullptr};
  const std::vector<std::byte> bytes = Encoded(a);
  for (auto _ : state) {
    nfs3::WRITE3args b;
    bool ok = xdr::Decode(bytes, b);
    benchmark::DoNotOptimize(ok);
    benchmark::DoNotOptimize(b.data.bytes.data());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_DecodeWriteArgs)->Arg(4096)->Arg(1 << 20);

// A READ reply's results with `size` bytes of data. The server's READ gives its buffer an
// owner, so the data is attached to the reply, not copied (attached: 1); without an
// owner it is copied (attached: 0), which is what that costs.
void BM_EncodeReadReply(benchmark::State& state) {
  auto data =
      std::make_shared<std::vector<std::byte>>(static_cast<size_t>(state.range(0)), std::byte{2});
  nfs3::READ3res r;
  r.status = nfs3::NFS3_OK;
  r.resok.file_attributes = Attr(7);
  r.resok.count = static_cast<uint32_t>(data->size());
  r.resok.data = xdr::Opaque{std::span<const std::byte>(*data),
                             state.range(1) ? std::shared_ptr<const void>(data) : nullptr};
  for (auto _ : state) {
    OutBuffer out;
    xdr::Encode(&out, r);
    benchmark::DoNotOptimize(out.total_size());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_EncodeReadReply)
    ->ArgNames({"bytes", "attached"})
    ->ArgsProduct({{4096, 1 << 20}, {0, 1}});

// A READDIRPLUS reply of `n` entries, each with attributes and a handle.
void BM_EncodeReaddirplusReply(benchmark::State& state) {
  nfs3::READDIRPLUS3res r;
  r.status = nfs3::NFS3_OK;
  r.resok.dir_attributes = Attr(1);
  for (int64_t i = 0; i < state.range(0); ++i) {
    nfs3::entryplus3 e;
    e.fileid = static_cast<uint64_t>(i) + 2;
    e.name.value = "file-" + std::to_string(i) + ".dat";
    e.cookie = static_cast<uint64_t>(i) + 1;
    e.name_attributes = Attr(e.fileid);
    e.name_handle = Handle();
    r.resok.entries.push_back(std::move(e));
  }
  for (auto _ : state) {
    OutBuffer out;
    xdr::Encode(&out, r);
    benchmark::DoNotOptimize(out.total_size());
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
  state.SetLabel("items: entries");
}
BENCHMARK(BM_EncodeReaddirplusReply)->Arg(64)->Arg(1024);

// A stream of `n` records of 128 bytes (GETATTR-sized calls) read 64 KiB at a time.
void BM_RecordMarkingSmallCalls(benchmark::State& state) {
  constexpr size_t kBody = 128;
  const auto n = static_cast<size_t>(state.range(0));
  std::vector<std::byte> stream;
  for (size_t i = 0; i < n; ++i) {
    std::byte mark[4];
    xdr::StoreBe32(mark, kLastFragment | static_cast<uint32_t>(kBody));
    stream.insert(stream.end(), mark, mark + 4);
    stream.insert(stream.end(), kBody, std::byte{3});
  }
  for (auto _ : state) {
    RecordReader reader(4u << 20);
    size_t records = 0;
    for (size_t at = 0; at < stream.size();) {
      auto space = reader.PrepareWrite();
      size_t chunk = std::min(space.size(), stream.size() - at);
      std::memcpy(space.data(), stream.data() + at, chunk);
      reader.CommitWrite(chunk);
      at += chunk;
      std::span<std::byte> record;
      while (reader.Next(&record) == RecordReader::Status::kRecord) ++records;
    }
    benchmark::DoNotOptimize(records);
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
  state.SetLabel("items: records");
}
BENCHMARK(BM_RecordMarkingSmallCalls)->Arg(10'000);

// The DRC on the path of every non-idempotent call and every WRITE: Begin (a miss), then
// Finish with a 200-byte reply, in a cache kept full (each store evicts the oldest entry,
// as under steady load). Threads contend as the server's do.
void BM_DrcBeginFinish(benchmark::State& state) {
  static DuplicateRequestCache* drc = nullptr;
  const auto cls = static_cast<DrcClass>(state.range(0));
  if (state.thread_index() == 0) {
    log::SetLevel(log::Level::kError);  // a full cache warns of early evictions
    drc = new DuplicateRequestCache();
  }
  const std::vector<std::byte> reply(200, std::byte{4});
  DuplicateRequestCache::Key key;
  key.client[0] = std::byte{127};
  key.client[15] = static_cast<std::byte>(state.thread_index());
  key.prog = 100003;
  key.vers = 3;
  key.proc = cls == DrcClass::kWrite ? 7 : 14;  // WRITE or RENAME
  uint32_t xid = static_cast<uint32_t>(state.thread_index()) << 24;
  for (auto _ : state) {
    key.xid = ++xid;
    key.checksum = xid * 0x9E3779B97F4A7C15ull;
    std::vector<std::byte> cached;
    auto r = drc->Begin(key, cls, &cached);
    if (r == DuplicateRequestCache::Lookup::kNew) drc->Finish(key, reply);
    benchmark::DoNotOptimize(r);
  }
  state.SetItemsProcessed(state.iterations());
  if (state.thread_index() == 0) {
    delete drc;
    drc = nullptr;
  }
}
BENCHMARK(BM_DrcBeginFinish)
    ->ArgName("write_class")
    ->Arg(0)
    ->Arg(1)
    ->Threads(1)
    ->Threads(2)
    ->Threads(4)
    ->UseRealTime();

// Per-call statistics, as every call records them (issue #11: counters per thread): into
// one atomic shared by all threads (the design before), against per-thread shards.
std::atomic<uint64_t> shared_calls{0};
std::atomic<uint64_t> shared_ns{0};
void BM_CountCallShared(benchmark::State& state) {
  for (auto _ : state) {
    shared_calls.fetch_add(1, std::memory_order_relaxed);
    shared_ns.fetch_add(1000, std::memory_order_relaxed);
  }
}
BENCHMARK(BM_CountCallShared)->Threads(1)->Threads(2)->Threads(4)->UseRealTime();

ShardedCounter sharded_calls;
ShardedCounter sharded_ns;
void BM_CountCallSharded(benchmark::State& state) {
  for (auto _ : state) {
    sharded_calls.Add();
    sharded_ns.Add(1000);
  }
}
BENCHMARK(BM_CountCallSharded)->Threads(1)->Threads(2)->Threads(4)->UseRealTime();

ProcStats proc_stats;
void BM_ProcStatsRecord(benchmark::State& state) {
  for (auto _ : state) proc_stats.Record(3000);
}
BENCHMARK(BM_ProcStatsRecord)->Threads(1)->Threads(2)->Threads(4)->UseRealTime();

// The reply-memory budget, as every inline reply charges it (Add when the reply is made,
// Release once it is sent): one atomic shared by every event loop and worker, the one
// write to shared memory every call makes whatever its file (docs/scaling.md).
MemoryBudget reply_budget(size_t{1} << 40);
void BM_ReplyBudgetAddRelease(benchmark::State& state) {
  for (auto _ : state) {
    reply_budget.Add(4200);
    reply_budget.Release(4200);
  }
}
BENCHMARK(BM_ReplyBudgetAddRelease)->Threads(1)->Threads(2)->Threads(4)->UseRealTime();

}  // namespace
}  // namespace nfsx::rpc

BENCHMARK_MAIN();
