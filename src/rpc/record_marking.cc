#include "rpc/record_marking.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "xdr/xdr.h"

namespace nfsx::rpc {

RecordReader::RecordReader(size_t max_record) : max_record_(max_record) {}

void RecordReader::Reserve(size_t capacity) {
  if (capacity > capacity_) Reallocate(capacity);
}

void RecordReader::Reallocate(size_t capacity) {
  auto fresh = std::make_unique_for_overwrite<std::byte[]>(capacity);
  if (end_ != 0) std::memcpy(fresh.get(), buf_.get(), end_);
  buf_ = std::move(fresh);
  capacity_ = capacity;
}

size_t RecordReader::CompactBase() const {
  bool in_record = record_len_ > 0 || in_fragment_;
  return in_record ? std::min(record_start_, scan_) : scan_;
}

// Moves the unfinished record (or unparsed bytes) to the front of the buffer.
void RecordReader::Compact() {
  size_t base = CompactBase();
  if (base == 0) return;
  std::memmove(buf_.get(), buf_.get() + base, end_ - base);
  end_ -= base;
  scan_ -= base;
  record_start_ -= std::min(record_start_, base);
  fragment_data_ -= std::min(fragment_data_, base);
}

size_t RecordReader::CapacityFor(size_t min) const {
  if (IntoDestination()) return capacity_;
  if (divert_left_ > 0) {
    return capacity_ == end_ ? std::max<size_t>(end_ + 64 * 1024, capacity_ * 2) : capacity_;
  }
  size_t end = end_ - CompactBase();
  size_t want = min;
  if (in_fragment_) {
    size_t have = end_ - fragment_data_;
    if (fragment_len_ > have) {
      // The last fragment of a record: room for exactly its rest lets one read land it in
      // place, and sized to it (not doubled, nor grown for `min` when a few bytes are
      // missing) the buffer stays the size the client's next call of that size needs.
      // Before a further fragment, growth doubles as for any stream of unknown length.
      size_t rest = fragment_len_ - have;
      if (last_fragment_) return capacity_ - end < rest ? end + rest : capacity_;
      want = std::max(want, rest);
    }
  }
  return capacity_ - end < want ? std::max(end + want, capacity_ * 2) : capacity_;
}

std::span<std::byte> RecordReader::PrepareWrite(size_t min) {
  if (IntoDestination()) {
    return dest_.subspan(dest_filled_, std::min(dest_.size() - dest_filled_, divert_left_));
  }
  size_t capacity = CapacityFor(min);
  if (divert_left_ > 0) {
    // Diverted bytes past the destination: read into scratch and dropped.
    Reserve(capacity);
    return {buf_.get() + end_, std::min(capacity_ - end_, divert_left_)};
  }
  Compact();
  Reserve(capacity);
  return {buf_.get() + end_, capacity_ - end_};
}

void RecordReader::CommitWrite(size_t n) {
  if (divert_left_ == 0) {
    end_ += n;
    return;
  }
  if (IntoDestination()) dest_filled_ += n;
  divert_left_ -= n;
}

bool RecordReader::CurrentIncomplete(Incomplete* out) {
  if (!in_fragment_ || !last_fragment_ || record_len_ != 0 || diverted_) return false;
  size_t have = end_ - fragment_data_;
  if (have >= fragment_len_) return false;
  *out = {{buf_.get() + fragment_data_, have}, fragment_len_};
  return true;
}

void RecordReader::Divert(size_t at, size_t len, std::span<std::byte> dest) {
  size_t from = fragment_data_ + at;
  size_t buffered = std::min(end_ - from, len);
  size_t copy = std::min(buffered, dest.size());
  if (copy > 0) std::memcpy(dest.data(), buf_.get() + from, copy);
  std::memmove(buf_.get() + from, buf_.get() + from + buffered, end_ - from - buffered);
  end_ -= buffered;
  fragment_len_ -= len;
  diverted_ = true;
  divert_left_ = len - buffered;
  dest_ = dest;
  dest_filled_ = copy;
}

RecordReader::Status RecordReader::Next(std::span<std::byte>* record) {
  for (;;) {
    if (!in_fragment_) {
      if (end_ - scan_ < 4) return Status::kNeedMore;
      uint32_t mark = xdr::LoadBe32(buf_.get() + scan_);
      last_fragment_ = (mark & kLastFragment) != 0;
      fragment_len_ = mark & ~kLastFragment;
      if (record_len_ + fragment_len_ > max_record_) return Status::kTooLarge;
      fragment_data_ = scan_ + 4;
      if (record_len_ == 0) record_start_ = fragment_data_;
      in_fragment_ = true;
    }
    if (divert_left_ > 0 || end_ - fragment_data_ < fragment_len_) return Status::kNeedMore;
    // A later fragment moves down over the marks between it and the record so far.
    size_t dest = record_start_ + record_len_;
    if (dest != fragment_data_) {
      std::memmove(buf_.get() + dest, buf_.get() + fragment_data_, fragment_len_);
    }
    record_len_ += fragment_len_;
    scan_ = fragment_data_ + fragment_len_;
    in_fragment_ = false;
    if (last_fragment_) {
      *record = {buf_.get() + record_start_, record_len_};
      record_len_ = 0;
      last_landed_.reset();
      if (std::exchange(diverted_, false)) last_landed_ = dest_filled_;
      dest_ = {};
      dest_filled_ = 0;
      return Status::kRecord;
    }
  }
}

void RecordReader::ShrinkToFit(size_t keep_capacity) {
  if (divert_left_ > 0) return;
  Compact();
  size_t want = std::max(end_, keep_capacity);
  if (want < capacity_) Reallocate(want);
}

void RecordReader::ShrinkIfIdle(size_t keep_capacity) {
  if (capacity_ <= keep_capacity || HasPartial()) return;
  buf_.reset();
  capacity_ = end_ = scan_ = record_start_ = fragment_data_ = 0;
}

}  // namespace nfsx::rpc
