#pragma once

#include <atomic>

namespace nfsx {

// Raises `a` to `value` if it is below it: a high-water mark many threads update.
// (std::atomic::fetch_max is C++26.)
template <class T>
void RaiseTo(std::atomic<T>& a, T value, std::memory_order order = std::memory_order_relaxed) {
  T seen = a.load(std::memory_order_relaxed);
  while (value > seen && !a.compare_exchange_weak(seen, value, order, std::memory_order_relaxed)) {
  }
}

}  // namespace nfsx
