#include "base/out_buffer.h"

#include <algorithm>

namespace nfsx {

void OutBuffer::Grow(size_t need) {
  size_t cap = std::max<size_t>(capacity_ ? capacity_ * 2 : 512, need);
  auto fresh = std::make_unique_for_overwrite<std::byte[]>(cap);
  if (size_ != 0) std::memcpy(fresh.get(), data_.get(), size_);
  data_ = std::move(fresh);
  capacity_ = cap;
}

void OutBuffer::AppendExternal(std::span<const std::byte> bytes, std::shared_ptr<const void> owner) {
  if (bytes.empty()) return;
  externals_.push_back(External{size_, bytes, std::move(owner)});
  external_bytes_ += bytes.size();
}

void OutBuffer::Truncate(size_t inline_mark) {
  if (inline_mark > size_) return;
  // An external at inline_pos == mark was appended after the mark: drop it too.
  while (!externals_.empty() && externals_.back().inline_pos >= inline_mark) {
    external_bytes_ -= externals_.back().bytes.size();
    externals_.pop_back();
  }
  size_ = inline_mark;
}

void OutBuffer::PatchU32(size_t offset, uint32_t value) {
  std::byte* p = data_.get() + offset;
  p[0] = std::byte(value >> 24);
  p[1] = std::byte(value >> 16);
  p[2] = std::byte(value >> 8);
  p[3] = std::byte(value);
}

void OutBuffer::GatherIovecs(size_t skip, std::vector<iovec>* out) const {
  auto emit = [&](const std::byte* p, size_t n) {
    if (skip >= n) {
      skip -= n;
      return;
    }
    p += skip;
    n -= skip;
    skip = 0;
    out->push_back(iovec{const_cast<std::byte*>(p), n});
  };
  size_t pos = 0;
  for (const External& e : externals_) {
    emit(data_.get() + pos, e.inline_pos - pos);
    emit(e.bytes.data(), e.bytes.size());
    pos = e.inline_pos;
  }
  emit(data_.get() + pos, size_ - pos);
}

std::vector<std::byte> OutBuffer::Flatten() const {
  std::vector<std::byte> flat;
  flat.reserve(total_size());
  size_t pos = 0;
  for (const External& e : externals_) {
    flat.insert(flat.end(), data_.get() + pos, data_.get() + e.inline_pos);
    flat.insert(flat.end(), e.bytes.begin(), e.bytes.end());
    pos = e.inline_pos;
  }
  flat.insert(flat.end(), data_.get() + pos, data_.get() + size_);
  return flat;
}

}  // namespace nfsx
