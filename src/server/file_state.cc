#include "server/file_state.h"

#include <functional>

namespace nfsx::server {

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
    s.map.erase((*it)->key());
    it = s.lru.erase(it);
  }
}

size_t FileTable::size() const {
  size_t n = 0;
  for (auto& s : shards_) {
    std::lock_guard lock(const_cast<std::mutex&>(s.mu));
    n += s.map.size();
  }
  return n;
}

}  // namespace nfsx::server
