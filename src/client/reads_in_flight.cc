#include "client/reads_in_flight.h"

#include <algorithm>

#include "base/interruption.h"

namespace nfsx::client {

bool ReadsInFlight::OverlapsLocked(uint64_t begin, uint64_t end) const {
  auto it = pieces_.lower_bound(begin);
  if (it != pieces_.begin() && std::prev(it)->second > begin) return true;
  return it != pieces_.end() && it->first < end;
}

std::vector<ReadsInFlight::Range> ReadsInFlight::Claim(uint64_t begin, uint64_t end,
                                                       uint64_t max_piece, bool* others) {
  std::vector<Range> mine;
  std::lock_guard lock(mu_);
  auto claim_gap = [&](uint64_t from, uint64_t to) {
    for (uint64_t p = from; p < to; p += max_piece)
      mine.push_back({p, std::min(to, p + max_piece)});
  };
  uint64_t at = begin;
  auto it = pieces_.lower_bound(begin);
  if (it != pieces_.begin() && std::prev(it)->second > begin) it = std::prev(it);
  for (; it != pieces_.end() && it->first < end; ++it) {
    *others = true;
    if (it->first > at) claim_gap(at, it->first);
    at = std::max(at, it->second);
  }
  if (at < end) claim_gap(at, end);
  for (const Range& r : mine) pieces_.emplace(r.begin, r.end);
  return mine;
}

void ReadsInFlight::Finish(Range piece) {
  {
    std::lock_guard lock(mu_);
    pieces_.erase(piece.begin);
  }
  done_.notify_all();
}

void ReadsInFlight::Narrow(Range piece, const std::vector<Range>& keep) {
  {
    std::lock_guard lock(mu_);
    pieces_.erase(piece.begin);
    for (const Range& r : keep) pieces_.emplace(r.begin, r.end);
  }
  done_.notify_all();  // waiters for the bytes given up
}

bool ReadsInFlight::Wait(uint64_t begin, uint64_t end) {
  std::unique_lock lock(mu_);
  return WaitUnlessInterrupted(lock, done_, [&] { return !OverlapsLocked(begin, end); });
}

}  // namespace nfsx::client
