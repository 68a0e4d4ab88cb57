#include "rpc/record_marking.h"

#include <algorithm>
#include <cstring>

#include "xdr/xdr.h"

namespace nfsx::rpc {

RecordReader::RecordReader(size_t max_record) : max_record_(max_record) {}

void RecordReader::Reserve(size_t capacity) {
  if (capacity <= capacity_) return;
  auto fresh = std::make_unique_for_overwrite<std::byte[]>(capacity);
  if (end_ != 0) std::memcpy(fresh.get(), buf_.get(), end_);
  buf_ = std::move(fresh);
  capacity_ = capacity;
}

// Moves the unfinished record (or unparsed bytes) to the front of the buffer.
void RecordReader::Compact() {
  bool in_record = record_len_ > 0 || in_fragment_;
  size_t base = in_record ? std::min(record_start_, scan_) : scan_;
  if (base == 0) return;
  std::memmove(buf_.get(), buf_.get() + base, end_ - base);
  end_ -= base;
  scan_ -= base;
  record_start_ -= std::min(record_start_, base);
  fragment_data_ -= std::min(fragment_data_, base);
}

std::span<std::byte> RecordReader::PrepareWrite(size_t min) {
  Compact();
  size_t want = min;
  if (in_fragment_) {
    // Let one read land the rest of a large fragment in place.
    size_t have = end_ - fragment_data_;
    if (fragment_len_ > have) want = std::max(want, fragment_len_ - have);
  }
  if (capacity_ - end_ < want) Reserve(std::max(end_ + want, capacity_ * 2));
  return {buf_.get() + end_, capacity_ - end_};
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
    if (end_ - fragment_data_ < fragment_len_) return Status::kNeedMore;
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
      return Status::kRecord;
    }
  }
}

void RecordReader::ShrinkIfIdle(size_t keep_capacity) {
  if (capacity_ <= keep_capacity || HasPartial()) return;
  buf_.reset();
  capacity_ = end_ = scan_ = record_start_ = fragment_data_ = 0;
}

}  // namespace nfsx::rpc
