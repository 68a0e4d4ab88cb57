// OutBuffer: a message under construction, sent with one writev.
//
// Most bytes are written inline (headers, attributes). Large payloads such as
// READ data are attached as external segments that borrow a buffer kept alive
// by `owner`, so file data is never copied into the reply.
//
// Not thread-safe; one writer at a time.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <vector>

namespace nfsx {

class OutBuffer {
 public:
  OutBuffer() = default;
  OutBuffer(OutBuffer&&) noexcept = default;
  OutBuffer& operator=(OutBuffer&&) noexcept = default;

  // Appends n uninitialised inline bytes and returns where to write them.
  std::byte* Extend(size_t n) {
    if (size_ + n > capacity_) Grow(size_ + n);
    std::byte* p = data_.get() + size_;
    size_ += n;
    return p;
  }
  void Append(std::span<const std::byte> bytes) {
    if (!bytes.empty()) std::memcpy(Extend(bytes.size()), bytes.data(), bytes.size());
  }

  // Attaches `bytes` by reference at the current position. `owner` keeps them alive
  // until the buffer is destroyed or reset.
  void AppendExternal(std::span<const std::byte> bytes, std::shared_ptr<const void> owner);

  // Inline bytes written so far; a mark for Truncate().
  size_t inline_size() const { return size_; }
  // Every byte of the message, inline and external.
  size_t total_size() const { return size_ + external_bytes_; }

  // Drops everything appended after `inline_mark` (from inline_size()).
  void Truncate(size_t inline_mark);
  void Reset() { Truncate(0); }

  // Overwrites 4 inline bytes at `offset` with a big-endian value.
  void PatchU32(size_t offset, uint32_t value);

  std::span<const std::byte> inline_bytes() const { return {data_.get(), size_}; }

  // Appends iovecs covering the whole message, starting `skip` bytes in.
  void GatherIovecs(size_t skip, std::vector<iovec>* out) const;

  // Copies the whole message into one contiguous vector (DRC, tests).
  std::vector<std::byte> Flatten() const;

 private:
  struct External {
    size_t inline_pos;  // inline bytes that precede this segment
    std::span<const std::byte> bytes;
    std::shared_ptr<const void> owner;
  };
  void Grow(size_t need);

  std::unique_ptr<std::byte[]> data_;
  size_t size_ = 0;
  size_t capacity_ = 0;
  std::vector<External> externals_;
  size_t external_bytes_ = 0;
};

}  // namespace nfsx
