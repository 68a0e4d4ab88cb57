// The consistency tracker's cost per reply against the length of a write stream that
// never pauses (issue #9, item 6): flat in the stream's length, growing only with the
// calls in flight. Each figure is one stream of N WRITEs with W in flight and a GETATTR
// poller beside them, replies in random order, as RunStream in consistency_test.cc.
//
//   build/src/client/consistency_bench --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <cstdint>
#include <optional>
#include <random>
#include <vector>

#include "client/consistency.h"

namespace nfsx::client {
namespace {

using Kind = ConsistencyTracker::Kind;

nfs3::fattr3 State(uint32_t t) {
  nfs3::fattr3 f;
  f.size = t;
  f.mtime = f.ctime = {1000, t};
  return f;
}

// What the stream does, decided before the clock starts: send a modification, send an
// observation, or deliver the reply of the call at this index of those in flight.
struct Step {
  enum Op : uint8_t { kModify, kObserve, kDeliver } op;
  uint32_t index = 0;
};

std::vector<Step> Schedule(uint32_t mods, uint32_t window, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<Step> steps;
  uint32_t sent = 0, flying = 0;
  while (sent < mods || flying > 0) {
    if (sent < mods && flying < window) {
      if (rng() % 3 == 0) {
        steps.push_back({Step::kObserve});
        ++flying;
      }
      steps.push_back({Step::kModify});
      ++flying;
      ++sent;
      continue;
    }
    steps.push_back({Step::kDeliver, static_cast<uint32_t>(rng() % flying)});
    --flying;
  }
  return steps;
}

void BM_ReplyInAStream(benchmark::State& state) {
  const auto mods = static_cast<uint32_t>(state.range(0));
  const auto window = static_cast<uint32_t>(state.range(1));
  const std::vector<Step> steps = Schedule(mods, window, 1);
  struct Flying {
    ConsistencyTracker::Token token;
    std::optional<uint32_t> pre;
    uint32_t post;
  };
  uint64_t replies = 0, foreign = 0;
  size_t most_runs = 0, most_waiting = 0;
  for (auto _ : state) {
    ConsistencyTracker t;
    t.Reset(State(0));
    uint32_t server = 0;
    std::vector<Flying> flying;
    flying.reserve(2 * window + 2);
    for (const Step& s : steps) {
      switch (s.op) {
        case Step::kObserve:
          flying.push_back({t.Begin(Kind::kObserve), std::nullopt, server});
          break;
        case Step::kModify: {
          uint32_t pre = server++;
          flying.push_back({t.Begin(Kind::kModify), pre, server});
          break;
        }
        case Step::kDeliver: {
          Flying f = flying[s.index];
          flying[s.index] = flying.back();
          flying.pop_back();
          nfs3::pre_op_attr pre;
          if (f.pre) {
            nfs3::fattr3 p = State(*f.pre);
            pre = nfs3::wcc_attr{p.size, p.mtime, p.ctime};
          }
          auto v = t.End(f.token, pre, State(f.post));
          foreign += v != ConsistencyTracker::Verdict::kConsistent;
          ++replies;
          most_runs = std::max(most_runs, t.runs());
          most_waiting = std::max(most_waiting, t.waiting());
          break;
        }
      }
    }
    benchmark::DoNotOptimize(t.attr());
  }
  state.SetItemsProcessed(static_cast<int64_t>(replies));
  state.counters["per_reply"] = benchmark::Counter(
      static_cast<double>(replies), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["most_runs"] = static_cast<double>(most_runs);
  state.counters["most_waiting"] = static_cast<double>(most_waiting);
  if (foreign != 0) state.SkipWithError("our own stream was judged a foreign change");
}

BENCHMARK(BM_ReplyInAStream)
    ->ArgNames({"writes", "in_flight"})
    ->ArgsProduct({{1'000, 10'000, 100'000, 1'000'000}, {16, 128, 1024}})
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace nfsx::client

BENCHMARK_MAIN();
