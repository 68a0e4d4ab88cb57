#include "fuse/node_table.h"

#include "base/interruption.h"

namespace nfsx::fuse {

namespace {

constexpr uint64_t kRootId = 1;  // FUSE_ROOT_ID

}  // namespace

NodeTable::NodeTable(client::InodePtr root, size_t max_names)
    : max_names_(max_names), root_fileid_(root->fileid()) {
  auto node = std::make_shared<Node>(kRootId, root->fileid(), 0, root);
  by_inode_[root.get()] = kRootId;
  nodes_[kRootId] = Entry{std::move(node), 1};
}

NodePtr NodeTable::Get(uint64_t nodeid) const {
  std::lock_guard lock(mu_);
  auto it = nodes_.find(nodeid);
  return it == nodes_.end() ? nullptr : it->second.node;
}

uint64_t NodeTable::PickId(uint64_t fileid) {
  bool reserved =
      fileid == 0 || fileid == kRootId || fileid == root_fileid_ || fileid >= (uint64_t{1} << 62);
  if (!reserved && !nodes_.contains(fileid)) return fileid;
  return next_synthetic_++;
}

NodePtr NodeTable::Ref(const client::InodePtr& ino) {
  std::lock_guard lock(mu_);
  if (auto it = by_inode_.find(ino.get()); it != by_inode_.end()) {
    Entry& e = nodes_.at(it->second);
    ++e.nlookup;
    return e.node;
  }
  uint64_t id = PickId(ino->fileid());
  auto node = std::make_shared<Node>(id, id, next_generation_++, ino);
  by_inode_[ino.get()] = id;
  nodes_[id] = Entry{node, 1};
  return node;
}

NodePtr NodeTable::Find(const client::Inode* ino) const {
  std::lock_guard lock(mu_);
  auto it = by_inode_.find(ino);
  return it == by_inode_.end() ? nullptr : nodes_.at(it->second).node;
}

uint64_t NodeTable::PeekIno(const client::InodePtr& ino) const {
  std::lock_guard lock(mu_);
  if (auto it = by_inode_.find(ino.get()); it != by_inode_.end()) {
    return nodes_.at(it->second).node->ino_number;
  }
  return ino->fileid();
}

void NodeTable::Forget(uint64_t nodeid, uint64_t n) {
  std::lock_guard lock(mu_);
  auto it = nodes_.find(nodeid);
  if (it == nodes_.end() || nodeid == kRootId) return;
  Entry& e = it->second;
  e.nlookup -= std::min(n, e.nlookup);
  if (e.nlookup > 0) return;
  by_inode_.erase(e.node->ino.get());
  if (auto d = names_.find(nodeid); d != names_.end()) {
    name_count_ -= d->second.size();
    names_.erase(d);
  }
  nodes_.erase(it);
}

void NodeTable::NoteName(uint64_t parent, const std::string& name, uint64_t child) {
  std::lock_guard lock(mu_);
  if (name_count_ >= max_names_) {
    names_.clear();
    name_count_ = 0;
  }
  auto [it, added] = names_[parent].insert_or_assign(name, child);
  if (added) ++name_count_;
}

uint64_t NodeTable::FindName(uint64_t parent, const std::string& name) const {
  std::lock_guard lock(mu_);
  auto d = names_.find(parent);
  if (d == names_.end()) return 0;
  auto it = d->second.find(name);
  return it == d->second.end() ? 0 : it->second;
}

void NodeTable::DropName(uint64_t parent, const std::string& name) {
  std::lock_guard lock(mu_);
  auto d = names_.find(parent);
  if (d == names_.end()) return;
  name_count_ -= d->second.erase(name);
  if (d->second.empty()) names_.erase(d);
}

std::vector<std::string> NodeTable::NamesUnder(uint64_t parent) const {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  if (auto d = names_.find(parent); d != names_.end()) {
    out.reserve(d->second.size());
    for (const auto& [name, child] : d->second) out.push_back(name);
  }
  return out;
}

void NodeTable::Opened(Node& node) {
  node.opens.fetch_add(1);
  open_files_.fetch_add(1);
}

bool NodeTable::Closed(Node& node) {
  open_files_.fetch_sub(1);
  return node.opens.fetch_sub(1) == 1;
}

uint64_t NodeTable::BeginRemoval() {
  std::lock_guard lock(removal_mu_);
  uint64_t ticket = removals_begun_.fetch_add(1) + 1;
  removals_running_.insert(ticket);
  return ticket;
}

void NodeTable::EndRemoval(uint64_t ticket) {
  {
    std::lock_guard lock(removal_mu_);
    removals_running_.erase(ticket);
    removals_ended_.fetch_add(1);
  }
  removal_cv_.notify_all();
}

NodeTable::RemovalWatch NodeTable::WatchRemovals() const {
  // Ended first: if then as many had ended as had begun, none was running at that
  // moment (every end follows its beginning) and none began in between.
  RemovalWatch w;
  w.ended = removals_ended_.load();
  w.begun = removals_begun_.load();
  return w;
}

Result<bool> NodeTable::AwaitRemovals(const RemovalWatch& since) {
  // Read after the caller's Opened: a removal with a later ticket saw the count.
  uint64_t upto = removals_begun_.load();
  if (since.ended == since.begun && upto == since.begun) return false;  // none ran since
  std::unique_lock lock(removal_mu_);
  bool done = WaitUnlessInterrupted(lock, removal_cv_, [&] {
    return removals_running_.empty() || *removals_running_.begin() > upto;
  });
  if (!done) return Fail(EINTR);
  return true;
}

size_t NodeTable::size() const {
  std::lock_guard lock(mu_);
  return nodes_.size();
}

}  // namespace nfsx::fuse
