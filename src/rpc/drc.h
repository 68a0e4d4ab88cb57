// Duplicate request cache for non-idempotent procedures.
//
// A client that loses a connection retransmits its call with the same xid,
// often from a new source port. Re-executing a RENAME or REMOVE would then
// fail with NOENT although the first execution succeeded. The DRC remembers
// the reply of each non-idempotent call, keyed by client address (not port),
// xid, program/version/procedure and a checksum of the arguments, and hands
// the original reply back. See docs/drc.md.
//
// Thread-safe. Bounded by entry count; least recently inserted entries go first.
#pragma once

#include <cstdint>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "rpc/program.h"

namespace nfsx::rpc {

class DuplicateRequestCache {
 public:
  struct Key {
    std::string client;  // peer address without port
    uint32_t xid = 0;
    uint32_t prog = 0, vers = 0, proc = 0;
    uint64_t checksum = 0;
    friend bool operator==(const Key&, const Key&) = default;
  };

  enum class Lookup {
    kNew,         // first time seen: now marked in progress, run it
    kInProgress,  // the original is still running: drop the retransmission
    kDone,        // *reply holds the original reply
  };

  explicit DuplicateRequestCache(size_t max_entries) : max_entries_(max_entries) {}

  static Key MakeKey(const CallHeader& h, const Peer& peer, std::span<const std::byte> args);

  Lookup Begin(const Key& key, std::vector<std::byte>* reply);
  // Stores the reply of a call for which Begin() returned kNew.
  void Finish(const Key& key, std::vector<std::byte> reply);
  // Forgets an in-progress call whose reply will never come (dropped).
  void Abandon(const Key& key);

  size_t size() const;
  uint64_t hits() const;

 private:
  struct KeyHash {
    size_t operator()(const Key& k) const;
  };
  struct Entry {
    bool done = false;
    std::vector<std::byte> reply;
    std::list<Key>::iterator order;
  };

  const size_t max_entries_;
  mutable std::mutex mu_;
  std::unordered_map<Key, Entry, KeyHash> entries_;
  std::list<Key> order_;  // insertion order, oldest first
  uint64_t hits_ = 0;
};

}  // namespace nfsx::rpc
