#include "client/page_index.h"

namespace nfsx::client {

PageIndex::~PageIndex() { Free(root_.load(std::memory_order_acquire)); }

void PageIndex::Free(Node* n) {
  if (!n) return;
  if (n->shift > 0) {
    for (auto& s : n->slots) Free(static_cast<Node*>(s.load(std::memory_order_relaxed)));
  }
  delete n;
}

Page* PageIndex::Find(uint64_t index) const {
  const Node* n = root_.load(std::memory_order_acquire);
  if (!n || (n->shift + kBits < 64 && (index >> (n->shift + kBits)) != 0)) return nullptr;
  while (n->shift > 0) {
    n = static_cast<const Node*>(
        n->slots[(index >> n->shift) & (kFanout - 1)].load(std::memory_order_acquire));
    if (!n) return nullptr;
  }
  return static_cast<Page*>(n->slots[index & (kFanout - 1)].load(std::memory_order_acquire));
}

PageIndex::Node* PageIndex::RootFor(uint64_t index) {
  Node* root = root_.load(std::memory_order_acquire);
  if (!root) {
    auto* fresh = new Node(0);
    if (root_.compare_exchange_strong(root, fresh, std::memory_order_acq_rel)) {
      root = fresh;
    } else {
      delete fresh;  // another thread made one; `root` holds it
    }
  }
  // Grow upwards: the old root becomes slot 0 of a taller one. Readers see
  // either root, and both lead to the same pages.
  while (root->shift + kBits < 64 && (index >> (root->shift + kBits)) != 0) {
    auto* taller = new Node(root->shift + kBits);
    taller->slots[0].store(root, std::memory_order_relaxed);
    if (root_.compare_exchange_strong(root, taller, std::memory_order_acq_rel)) {
      root = taller;
    } else {
      delete taller;  // lost the race: retry from the new root
    }
  }
  return root;
}

void PageIndex::Set(uint64_t index, Page* page) {
  Node* n = RootFor(index);
  while (n->shift > 0) {
    auto& slot = n->slots[(index >> n->shift) & (kFanout - 1)];
    void* child = slot.load(std::memory_order_acquire);
    if (!child) {
      // Other indexes under this node may be set at the same time (they hold
      // other locks): whoever loses the CAS uses the winner's node.
      auto* fresh = new Node(n->shift - kBits);
      if (slot.compare_exchange_strong(child, fresh, std::memory_order_acq_rel)) {
        child = fresh;
      } else {
        delete fresh;
      }
    }
    n = static_cast<Node*>(child);
  }
  n->slots[index & (kFanout - 1)].store(page, std::memory_order_release);
}

void PageIndex::ForEach(const std::function<void(uint64_t, Page*)>& visit) const {
  Visit(root_.load(std::memory_order_acquire), 0, visit);
}

void PageIndex::Visit(const Node* n, uint64_t base,
                      const std::function<void(uint64_t, Page*)>& visit) {
  if (!n) return;
  for (uint64_t i = 0; i < kFanout; ++i) {
    void* p = n->slots[i].load(std::memory_order_acquire);
    if (!p) continue;
    uint64_t at = base | (i << n->shift);
    if (n->shift == 0) {
      visit(at, static_cast<Page*>(p));
    } else {
      Visit(static_cast<const Node*>(p), at, visit);
    }
  }
}

}  // namespace nfsx::client
