// ReadsInFlight: the byte ranges of one file that READs are fetching right now.
//
// A reader that misses the cache waits for a READ already under way for its bytes
// instead of sending another one for the same bytes. Without this, a sequential
// reader that catches up with its own read-ahead, or the threads of a FUSE mount
// that the kernel sends neighbouring blocks at once, fetched most bytes twice.
//
// Thread-safe. Finish() runs on a connection's reader thread and never blocks for
// long; Wait() must never be called there.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

namespace nfsx::client {

class ReadsInFlight {
 public:
  struct Range {
    uint64_t begin = 0, end = 0;
  };

  // The parts of [begin, end) that no READ is fetching, cut into pieces of at most
  // `max_piece` bytes. Each piece is now counted as being fetched by the caller,
  // who must Finish() it. *others is set if some byte of [begin, end) is already
  // being fetched by someone else.
  std::vector<Range> Claim(uint64_t begin, uint64_t end, uint64_t max_piece, bool* others);
  // The READ of a claimed piece is done (its data is in the cache, or it failed).
  void Finish(Range piece);
  // Gives up the parts of a claimed piece outside `keep` (disjoint, in order,
  // inside the piece): each part kept is then a claimed piece of its own. For
  // bytes that turned out to be cached already when the claim was made.
  void Narrow(Range piece, const std::vector<Range>& keep);
  // Returns once no READ is fetching any byte of [begin, end): true, or false
  // when this thread's work is interrupted first (InterruptScope).
  bool Wait(uint64_t begin, uint64_t end);

 private:
  bool OverlapsLocked(uint64_t begin, uint64_t end) const;

  std::mutex mu_;
  std::condition_variable done_;
  std::map<uint64_t, uint64_t> pieces_;  // GUARDED_BY(mu_): begin -> end, disjoint
};

}  // namespace nfsx::client
