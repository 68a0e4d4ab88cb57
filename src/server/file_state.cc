#include "server/file_state.h"

#include <functional>

namespace nfsx::server {

namespace {
thread_local int modifications_held = 0;
}  // namespace

bool FileState::ThisThreadModifies() { return modifications_held > 0; }

FileState::Modification::Modification(FileState& file) : file_(file), lock_(file.op_mu_) {
  ++modifications_held;
  file_.modifier_.store(std::this_thread::get_id(), std::memory_order_relaxed);
  file_.times_.BeginChange();
}

FileState::Modification::~Modification() {
  file_.times_.EndChange();
  file_.modifier_.store(std::thread::id(), std::memory_order_relaxed);
  --modifications_held;
}

FileTable::FileTable(size_t capacity)
    : per_shard_capacity_(std::max<size_t>(1, capacity / kShards)) {}

FileTable::Shard& FileTable::ShardFor(std::string_view fh) {
  return shards_[std::hash<std::string_view>{}(fh) % kShards];
}

FileStatePtr FileTable::Find(std::string_view fh) {
  Shard& s = ShardFor(fh);
  std::lock_guard lock(s.mu);
  auto it = s.map.find(fh);
  if (it == s.map.end()) return nullptr;
  s.lru.splice(s.lru.begin(), s.lru, it->second);
  return *it->second;
}

FileStatePtr FileTable::Insert(FileStatePtr state) {
  Shard& s = ShardFor(state->key());
  std::lock_guard lock(s.mu);
  auto it = s.map.find(state->key());
  if (it != s.map.end()) {
    s.lru.splice(s.lru.begin(), s.lru, it->second);
    return *it->second;
  }
  if (auto times = TakeCarriedLocked(s, state->key())) {
    state->times().Restore(*times);
    restored_.fetch_add(1, std::memory_order_relaxed);
  }
  s.lru.push_front(state);
  s.map.emplace(state->key(), s.lru.begin());
  EvictLocked(s);
  return state;
}

void FileTable::Erase(std::string_view fh) {
  Shard& s = ShardFor(fh);
  std::lock_guard lock(s.mu);
  auto it = s.map.find(fh);
  if (it == s.map.end()) return;
  auto node = it->second;
  s.map.erase(it);  // the key view points into the state: erase before dropping it
  s.lru.erase(node);
}

void FileTable::EvictLocked(Shard& s) {
  auto it = s.lru.end();
  size_t scanned = 0;
  while (s.map.size() > per_shard_capacity_ && it != s.lru.begin() && scanned < 64) {
    --it;
    ++scanned;
    // In use elsewhere (an operation in flight, or open descriptors that the
    // open-file cache will release): keep it.
    if (it->use_count() > 1 || (*it)->opens().listed.load()) continue;
    if (auto times = (*it)->times().Snapshot()) CarryLocked(s, **it, *times);
    s.map.erase((*it)->key());
    it = s.lru.erase(it);
  }
}

void FileTable::CarryLocked(Shard& s, const FileState& state, const TimeOverlay::State& times) {
  if (auto old = s.carried_map.find(state.key()); old != s.carried_map.end()) {
    auto node = old->second;
    s.carried_map.erase(old);
    s.carried.erase(node);
  }
  s.carried.push_front({std::string(state.key()), times});
  s.carried_map.emplace(s.carried.front().key, s.carried.begin());
  if (s.carried.size() > std::max<size_t>(per_shard_capacity_, kMinCarriedPerShard)) {
    s.carried_map.erase(s.carried.back().key);
    s.carried.pop_back();
  }
}

std::optional<TimeOverlay::State> FileTable::TakeCarriedLocked(Shard& s, std::string_view key) {
  auto it = s.carried_map.find(key);
  if (it == s.carried_map.end()) return std::nullopt;
  auto node = it->second;
  TimeOverlay::State times = node->times;
  s.carried_map.erase(it);  // the key view points into the node: erase it first
  s.carried.erase(node);
  return times;
}

template <class Count>
size_t FileTable::Sum(Count count) const {
  size_t n = 0;
  for (auto& s : shards_) {
    std::lock_guard lock(const_cast<std::mutex&>(s.mu));
    n += count(s);
  }
  return n;
}

size_t FileTable::carried() const {
  return Sum([](const Shard& s) { return s.carried.size(); });
}

size_t FileTable::size() const {
  return Sum([](const Shard& s) { return s.map.size(); });
}

}  // namespace nfsx::server
