#include "base/sharded_counter.h"

namespace nfsx {

size_t CounterShard() {
  static std::atomic<size_t> next{0};
  thread_local const size_t shard = next.fetch_add(1, std::memory_order_relaxed) % kCounterShards;
  return shard;
}

}  // namespace nfsx
