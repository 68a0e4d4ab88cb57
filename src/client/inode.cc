#include "client/inode.h"

#include <algorithm>
#include <cstring>

#include "base/atomic_max.h"
#include "client/acting_as.h"

namespace nfsx::client {

int64_t SteadyNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

Inode::Inode(const nfs3::nfs_fh3& fh, const nfs3::fattr3& attr, CacheBudget* budget)
    : pages(budget), fh_(fh), fileid_(attr.fileid), type_(attr.type) {
  tracker.Reset(attr);  // no other thread can see us yet: mu is not needed
  PublishAttr();
}

void Inode::PublishAttr() {
  // Release: a reader that sees the new size also sees what was stored before it.
  server_size_.store(tracker.attr().size, std::memory_order_release);
}

void Inode::RefreshTimer(bool changed, double min_s, double max_s, int64_t sent_ns) {
  // A reply to a call sent before the attributes were expired may predate what
  // expired them; an unchanged reply to a call older than the one that set the
  // lease says nothing newer. Neither touches the timer (nor its backoff).
  if (sent_ns <= expired_at_ns_.load(std::memory_order_relaxed)) return;
  if (!changed && sent_ns < lease_sent_ns_) return;
  lease_sent_ns_ = std::max(lease_sent_ns_, sent_ns);
  // As the Linux client: the timeout starts at the minimum and doubles while the
  // attributes keep coming back unchanged, up to the maximum.
  if (changed || attr_timeout_s_ < min_s) {
    attr_timeout_s_ = min_s;
  } else {
    attr_timeout_s_ = std::min(max_s, std::max(min_s, attr_timeout_s_ * 2));
  }
  // A change resets the lease even if an older one ran longer: the file is moving.
  attr_expiry_ns_.store(sent_ns + static_cast<int64_t>(attr_timeout_s_ * 1e9),
                        std::memory_order_release);
}

void Inode::ExpireAttr() {
  // Under mu, so that no RefreshTimer is between its check of expired_at_ns_ and
  // its store of the expiry.
  std::lock_guard lock(mu);
  expired_at_ns_.store(SteadyNowNs(), std::memory_order_relaxed);
  attr_expiry_ns_.store(0, std::memory_order_release);
}

uint64_t Inode::Size() const { return std::max(ServerSize(), write_end_.load()); }

void Inode::NoteWriterLocked() {
  const rpc::Credential* who = ActingAs::Current();
  if (!who) return;
  if (!writer || writer->uid != who->uid || writer->gid != who->gid ||
      !std::ranges::equal(writer->groups(), who->groups())) {
    writer = *who;
  }
}

void Inode::NoteWriteEnd(uint64_t end) { RaiseTo(write_end_, end, std::memory_order_seq_cst); }

void Inode::TrimUnstable(uint64_t from, uint64_t to) {
  if (to <= from) return;
  auto it = unstable.lower_bound(from);
  if (it != unstable.begin()) --it;  // the extent before may reach into the range
  while (it != unstable.end() && it->first < to) {
    uint64_t b = it->first, e = b + it->second.len;
    if (e <= from) {
      ++it;
      continue;
    }
    UnstableExtent ext = it->second;
    it = unstable.erase(it);
    unstable_bytes -= ext.len;
    if (b < from) {  // keep the head
      UnstableExtent head = ext;
      head.len = from - b;
      unstable_bytes += head.len;
      unstable.emplace(b, head);
    }
    if (e > to) {  // keep the tail
      UnstableExtent tail = ext;
      tail.begin += to - b;
      tail.len = e - to;
      unstable_bytes += tail.len;
      it = unstable.emplace(to, tail).first;
      ++it;
    }
  }
}

std::optional<std::vector<std::byte>> Inode::WithUnstable(uint64_t offset,
                                                          std::span<const std::byte> data) {
  std::lock_guard lock(wb_mu);
  uint64_t end = offset + data.size();
  auto it = unstable.lower_bound(offset);
  if (it != unstable.begin()) --it;  // the extent before may reach into the range
  std::optional<std::vector<std::byte>> out;
  for (; it != unstable.end() && it->first < end; ++it) {
    uint64_t b = std::max(it->first, offset);
    uint64_t e = std::min(it->first + it->second.len, end);
    if (b >= e) continue;
    if (!out) out.emplace(data.begin(), data.end());
    const UnstableExtent& x = it->second;
    std::memcpy(out->data() + (b - offset), x.data->data() + x.begin + (b - it->first), e - b);
  }
  return out;
}

void Inode::AddUnstable(uint64_t offset, UnstableExtent e) {
  TrimUnstable(offset, offset + e.len);
  unstable_bytes += e.len;
  unstable_added += e.len;
  unstable.emplace(offset, std::move(e));
}

}  // namespace nfsx::client
