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
#include <optional>
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

  // Space to receive at least `min` bytes; inside a fragment, at least its rest (more
  // or less than `min`), and inside a record's last fragment the buffer grows to the
  // size of the record and no further.
  // Invalidates spans returned by Next(). While a diversion has bytes left, the
  // span is the diversion's destination (see IntoDestination()), or scratch for
  // bytes to drop, and never reaches past the diverted bytes.
  std::span<std::byte> PrepareWrite(size_t min = 64 * 1024);
  // The capacity PrepareWrite(min) would leave the buffer with, without changing it:
  // a server checks it against its memory budget before growing.
  size_t CapacityFor(size_t min = 64 * 1024) const;
  // Declares that `n` bytes were written at the front of PrepareWrite()'s span.
  void CommitWrite(size_t n);

  // The record being received, while it is one fragment, not complete yet and
  // not diverted: the bytes buffered so far (writable, valid until
  // PrepareWrite()) and its full length.
  struct Incomplete {
    std::span<std::byte> head;
    size_t length = 0;
  };
  bool CurrentIncomplete(Incomplete* out);
  // Takes bytes [at, at + len) out of the incomplete record: the first
  // dest.size() of them go to `dest` (those buffered already are copied now,
  // the others are read there), the rest are dropped, and the record comes out
  // of Next() without them. REQUIRES: CurrentIncomplete() and
  // at <= head.size(), at + len <= length.
  void Divert(size_t at, size_t len, std::span<std::byte> dest);
  // PrepareWrite()'s span is the diversion's destination.
  bool IntoDestination() const { return divert_left_ > 0 && dest_filled_ < dest_.size(); }
  // What is left of the diversion is dropped instead of written to its destination.
  void StopFillingDestination() { dest_ = dest_.first(dest_filled_); }
  // For the record Next() returned last, when bytes of it were diverted: how
  // many reached the destination.
  std::optional<size_t> last_landed() const { return last_landed_; }

  // Extracts the next complete record. The span stays valid until PrepareWrite().
  Status Next(std::span<std::byte>* record);

  // True when bytes of an unfinished record are buffered.
  bool HasPartial() const { return end_ > scan_ || record_len_ > 0 || in_fragment_; }
  size_t capacity() const { return capacity_; }
  size_t max_record() const { return max_record_; }

  // Releases a large buffer when nothing is pending (idle connections stay small).
  void ShrinkIfIdle(size_t keep_capacity);
  // Keeps only the bytes received and not yet taken (at least `keep_capacity`), whatever
  // is pending: memory another connection is waiting for. Invalidates spans from Next().
  void ShrinkToFit(size_t keep_capacity);

 private:
  size_t CompactBase() const;  // where Compact() would move the buffer's front from
  void Compact();
  void Reserve(size_t capacity);
  // A buffer of `capacity` bytes (at least end_) holding the received bytes.
  void Reallocate(size_t capacity);

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
  size_t fragment_len_ = 0;   // without the bytes diverted from it
  // The current record's diversion: bytes still to come off the stream, and
  // where they land.
  bool diverted_ = false;
  size_t divert_left_ = 0;
  std::span<std::byte> dest_;
  size_t dest_filled_ = 0;
  std::optional<size_t> last_landed_;
};

// Reserves room for a record mark at the start of `out`; call before encoding.
inline void BeginRecord(OutBuffer* out) { out->Extend(4); }
// Writes the record mark for everything encoded since BeginRecord() (one fragment).
inline void EndRecord(OutBuffer* out) {
  out->PatchU32(0, kLastFragment | static_cast<uint32_t>(out->total_size() - 4));
}

}  // namespace nfsx::rpc
