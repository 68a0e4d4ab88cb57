// Record marking for ONC RPC over TCP (RFC 5531 §11): pure bytes <-> records.
//
// Each record is a sequence of fragments; each fragment starts with a 4-byte
// big-endian header whose top bit marks the last fragment and whose low 31 bits
// give its length. RecordReader reassembles fragments in place, so a record
// always comes out as one contiguous span.
//
// Not thread-safe: one connection, one reader.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "base/out_buffer.h"

namespace nfsx::rpc {

inline constexpr uint32_t kLastFragment = 0x80000000u;

class RecordReader {
 public:
  enum class Status {
    kRecord,    // *record holds a complete record
    kNeedMore,  // feed more bytes
    kTooLarge,  // the record exceeds max_record: the stream is unusable
  };

  explicit RecordReader(size_t max_record);

  // Space to receive at least `min` bytes (more when a known fragment needs it).
  // Invalidates spans returned by Next().
  std::span<std::byte> PrepareWrite(size_t min = 64 * 1024);
  // Declares that `n` bytes were written at the front of PrepareWrite()'s span.
  void CommitWrite(size_t n) { end_ += n; }

  // Extracts the next complete record. The span stays valid until PrepareWrite().
  Status Next(std::span<std::byte>* record);

  // True when bytes of an unfinished record are buffered.
  bool HasPartial() const { return end_ > scan_ || record_len_ > 0 || in_fragment_; }
  size_t capacity() const { return capacity_; }
  size_t max_record() const { return max_record_; }

  // Releases a large buffer when nothing is pending (idle connections stay small).
  void ShrinkIfIdle(size_t keep_capacity);

 private:
  void Compact();
  void Reserve(size_t capacity);

  size_t max_record_;
  std::unique_ptr<std::byte[]> buf_;
  size_t capacity_ = 0;
  size_t end_ = 0;           // end of received bytes
  size_t scan_ = 0;          // next unparsed byte of the raw stream
  size_t record_start_ = 0;  // where the current record's data begins
  size_t record_len_ = 0;    // bytes of the current record assembled so far
  bool in_fragment_ = false;
  bool last_fragment_ = false;
  size_t fragment_data_ = 0;  // start of the current fragment's data
  size_t fragment_len_ = 0;
};

// Reserves room for a record mark at the start of `out`; call before encoding.
inline void BeginRecord(OutBuffer* out) { out->Extend(4); }
// Writes the record mark for everything encoded since BeginRecord() (one fragment).
inline void EndRecord(OutBuffer* out) {
  out->PatchU32(0, kLastFragment | static_cast<uint32_t>(out->total_size() - 4));
}

}  // namespace nfsx::rpc
