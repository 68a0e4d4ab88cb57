// What the driver knows about the content of each file it uses: which write generation
// every block should hold, so that a read can be checked exactly, not just for being
// some valid block.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace nfsx::load {

// One file's blocks. Shared by every job that uses the file (--shared), so all state is
// atomic. A job claims a block before it reads or writes it and releases it when the reply
// is in; a block is never in two operations at once, which makes the expected content of
// every read exact even with many requests in flight from several connections.
class FileTrack {
 public:
  // Expected-content values besides a generation.
  static constexpr uint64_t kNever = 0;  // never written: reads as zeros or past end of file
  static constexpr uint64_t kUnknown = uint64_t{1} << 62;  // existed before: any valid block

  // `initial` is kNever for a new or truncated file, kUnknown for one that existed.
  // `known_end`: the file size known to be there (bytes that must not read short).
  FileTrack(uint64_t file_id, std::string name, uint64_t blocks, uint64_t initial,
            uint64_t known_end, uint32_t nonce);

  uint64_t file_id() const { return file_id_; }
  const std::string& name() const { return name_; }
  uint64_t blocks() const { return blocks_; }

  // Claims `block` if no operation holds it; on success sets *expected to its content.
  bool TryClaim(uint64_t block, uint64_t* expected);
  // Ends the claim. `content` is the block's content from now on: the generation just
  // written, or unchanged after a read. After a failed write nobody knows: use kUnknown.
  void Release(uint64_t block, uint64_t content);
  // Content without claiming; only meaningful when no operation is in flight.
  uint64_t Expected(uint64_t block) const;

  // A fresh generation for a write; unique within the file across runs (nonce << 32 | n).
  uint64_t NextGeneration() { return next_generation_.fetch_add(1, std::memory_order_relaxed); }

  // Every byte below known_end() is known to exist in the file (a completed write ended
  // there, or the file was that long when opened).
  void NoteWriteEnd(uint64_t end);
  uint64_t known_end() const { return known_end_.load(std::memory_order_acquire); }

  // True when every block's content is known (no kUnknown left), so the file size is exact.
  bool FullyKnown() const;

  // State file: the expected content of every block of every file, so that a later run
  // (`--state`) checks exactly what an earlier run wrote. Text header, then one line per
  // file: "file ID NAME KNOWN_END" and its generations in hex, one per block.
  static bool Save(const std::string& path, uint64_t block_size,
                   const std::vector<FileTrack*>& files, std::string* error);
  // Restores into `files`, which must match by count, name, id and block count; `error`
  // says what differs.
  static bool Load(const std::string& path, uint64_t block_size,
                   const std::vector<FileTrack*>& files, std::string* error);

 private:
  static constexpr uint64_t kBusy = uint64_t{1} << 63;

  const uint64_t file_id_;
  const std::string name_;
  const uint64_t blocks_;
  std::unique_ptr<std::atomic<uint64_t>[]> state_;
  std::atomic<uint64_t> known_end_;
  std::atomic<uint64_t> next_generation_;
};

}  // namespace nfsx::load
