// PageIndex: one file's page index -> Page* map, a radix tree of atomic
// pointers (64 slots a node) whose lookups take no lock.
//
// Readers of cached pages walk it with acquire loads only, so many threads
// reading one file share nothing but read-only cache lines of the tree. Changes
// (Set) are made under the caller's locks; nodes are created with a
// CAS and freed only with the index, so a reader never follows a pointer into
// freed memory. Pages themselves are the caller's (see PageSet for how they are
// reclaimed).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>

namespace nfsx::client {

struct Page;

class PageIndex {
 public:
  PageIndex() = default;
  ~PageIndex();
  PageIndex(const PageIndex&) = delete;
  PageIndex& operator=(const PageIndex&) = delete;

  // The page at `index`, or null. Lock-free; the page may be unlinked (and
  // reused) right after, so the caller must check it (see PageSet::Lookup).
  Page* Find(uint64_t index) const;
  // Makes `page` (or null) the page at `index`, creating nodes on the way. Calls
  // for one index must be serialised by the caller. A release store: a reader
  // that finds the page sees it as it was before the call.
  void Set(uint64_t index, Page* page);
  // Calls visit(index, page) for every non-null slot, in index order. The caller
  // keeps slots from changing meanwhile.
  void ForEach(const std::function<void(uint64_t, Page*)>& visit) const;

 private:
  static constexpr int kBits = 6;
  static constexpr uint64_t kFanout = uint64_t{1} << kBits;
  struct Node {
    explicit Node(int s) : shift(s) {}
    const int shift;  // 0: slots hold Page*; else Node*, each kBits more of the index
    std::array<std::atomic<void*>, kFanout> slots{};
  };
  static void Free(Node* n);
  static void Visit(const Node* n, uint64_t base,
                    const std::function<void(uint64_t, Page*)>& visit);
  // A root tall enough for `index`, growing the tree upwards as needed.
  Node* RootFor(uint64_t index);

  std::atomic<Node*> root_{nullptr};
};

}  // namespace nfsx::client
