// ConsistencyTracker: tells the client's own modifications of a file from
// anybody else's, using the attributes in replies. See docs/client_consistency.md.
//
// The problem (seed 000): with many WRITEs in flight, replies come back in any
// order, and the attributes in them (and in a GETATTR that overlapped a WRITE)
// look like changes nobody explained. A client that treats them as someone
// else's change throws its data cache away and re-reads the file. A client
// that ignores attributes instead misses real changes by other clients.
//
// The method: modifying calls of our own (WRITE, COMMIT, SETATTR) open a
// *window*. Every attribute-bearing reply that belongs to the window adds
// states to one of two sets:
//   explained: post-op ctimes of our own calls (states our calls produced), and
//              the state the window started from;
//   observed:  pre-op ctimes of our own calls, and ctimes seen by GETATTR/READ
//              replies that overlapped our calls.
// When the last call of the window has replied, every observed state must be an
// explained one. A state that is not was produced by somebody else: a third-party
// change, and the data cache is invalid. The order in which replies arrive does
// not matter, and neither does a server's late or early sampling of attributes,
// as long as each ctime it reports is one our calls (or the start) produced.
//
// Outside a window, an attribute reply must match the known state exactly.
//
// Servers that send no pre-op attributes (NFS-Ganesha on WRITE) simply
// contribute nothing to `observed`: our own writes can never look foreign, and
// third-party changes are still caught outside windows (at open, close-to-open).
//
// Not thread-safe: the owner (the inode) serialises calls with its lock.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "proto/nfs3_types.h"

namespace nfsx::client {

class ConsistencyTracker {
 public:
  enum class Kind : uint8_t { kModify, kObserve };
  enum class Verdict : uint8_t {
    kConsistent,   // nothing but our own changes
    kForeignChange,  // somebody else changed the file: drop cached data
  };

  // A call in progress, returned by Begin() and handed back to End().
  struct Token {
    Kind kind = Kind::kObserve;
    uint64_t window = 0;  // window generation at Begin()
    bool member = false;  // counted in the window
  };

  // Sets the known state (from an authoritative reply, e.g. the first GETATTR).
  void Reset(const nfs3::fattr3& attr);
  bool has_attr() const { return attr_.has_value(); }
  const nfs3::fattr3& attr() const { return *attr_; }

  // Before sending a call that returns this file's attributes.
  Token Begin(Kind kind);
  // A reply to a kModify call (wcc_data; either side may be absent), or to a
  // kObserve call (`pre` absent, `post` = its attributes, if any). Also call it
  // with both absent when the call failed without attributes.
  Verdict End(const Token& token, const nfs3::pre_op_attr& pre, const nfs3::post_op_attr& post);

  bool window_open() const { return members_ > 0; }
  uint64_t foreign_changes() const { return foreign_changes_; }

 private:
  Verdict Settle();
  // Keeps attr_ monotonic: ctime never goes backwards.
  void ApplyMonotonic(const nfs3::fattr3& attr);

  std::optional<nfs3::fattr3> attr_;
  uint64_t window_ = 1;  // generation; bumped whenever a window settles
  int members_ = 0;      // calls of the open window still in flight
  std::vector<nfs3::nfstime3> explained_;
  std::vector<nfs3::nfstime3> observed_;
  // A call of the window brought no post-op attributes: some state we produced is
  // unknown, so the window cannot be judged and the next quiescent reply becomes
  // the new baseline (as Linux does when wcc data is missing).
  bool unverifiable_ = false;
  bool rebaseline_ = false;
  uint64_t foreign_changes_ = 0;
};

}  // namespace nfsx::client
