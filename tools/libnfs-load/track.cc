#include "tools/libnfs-load/track.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace nfsx::load {

FileTrack::FileTrack(uint64_t file_id, std::string name, uint64_t blocks, uint64_t initial,
                     uint64_t known_end, uint32_t nonce)
    : file_id_(file_id),
      name_(std::move(name)),
      blocks_(blocks),
      state_(std::make_unique<std::atomic<uint64_t>[]>(blocks)),
      known_end_(known_end),
      next_generation_((uint64_t{nonce} << 32) | 1) {
  for (uint64_t i = 0; i < blocks; ++i) state_[i].store(initial, std::memory_order_relaxed);
}

bool FileTrack::TryClaim(uint64_t block, uint64_t* expected) {
  uint64_t cur = state_[block].load(std::memory_order_acquire);
  do {
    if (cur & kBusy) return false;
  } while (!state_[block].compare_exchange_weak(cur, cur | kBusy, std::memory_order_acq_rel,
                                                std::memory_order_acquire));
  *expected = cur;
  return true;
}

void FileTrack::Release(uint64_t block, uint64_t content) {
  state_[block].store(content & ~kBusy, std::memory_order_release);
}

uint64_t FileTrack::Expected(uint64_t block) const {
  return state_[block].load(std::memory_order_acquire) & ~kBusy;
}

void FileTrack::NoteWriteEnd(uint64_t end) {
  uint64_t cur = known_end_.load(std::memory_order_relaxed);
  while (cur < end && !known_end_.compare_exchange_weak(cur, end, std::memory_order_acq_rel)) {
  }
}

bool FileTrack::FullyKnown() const {
  for (uint64_t i = 0; i < blocks_; ++i) {
    if (Expected(i) == kUnknown) return false;
  }
  return true;
}

bool FileTrack::Save(const std::string& path, uint64_t block_size,
                     const std::vector<FileTrack*>& files, std::string* error) {
  std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "w");
  if (!f) {
    *error = fmt::format("{}: cannot write state: {}", tmp, std::strerror(errno));
    return false;
  }
  fmt::print(f, "nfsx-libnfs-load-state 1 block_size {} files {}\n", block_size, files.size());
  for (const FileTrack* t : files) {
    fmt::print(f, "file {} {} {} {}\n", t->file_id(), t->name(), t->known_end(), t->blocks());
    for (uint64_t i = 0; i < t->blocks(); ++i) {
      fmt::print(f, "{:x}{}", t->Expected(i), (i % 8 == 7 || i + 1 == t->blocks()) ? "\n" : " ");
    }
  }
  bool ok = std::fflush(f) == 0 && !std::ferror(f);
  ok = std::fclose(f) == 0 && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    *error = fmt::format("{}: cannot write state: {}", path, std::strerror(errno));
    return false;
  }
  return true;
}

bool FileTrack::Load(const std::string& path, uint64_t block_size,
                     const std::vector<FileTrack*>& files, std::string* error) {
  std::ifstream in(path);
  if (!in) {
    *error = fmt::format("{}: cannot read state: {}", path, std::strerror(errno));
    return false;
  }
  std::string magic, word;
  int version = 0;
  uint64_t bs = 0;
  size_t count = 0;
  in >> magic >> version >> word >> bs >> word >> count;
  if (!in || magic != "nfsx-libnfs-load-state" || version != 1) {
    *error = fmt::format("{}: not a state file of this tool", path);
    return false;
  }
  if (bs != block_size || count != files.size()) {
    *error = fmt::format("{}: state is for block size {} and {} file(s), this run uses {} and {}",
                         path, bs, count, block_size, files.size());
    return false;
  }
  for (FileTrack* t : files) {
    uint64_t id = 0, end = 0, blocks = 0;
    std::string name;
    in >> word >> id >> name >> end >> blocks;
    if (!in || word != "file" || id != t->file_id() || name != t->name() || blocks != t->blocks()) {
      *error = fmt::format("{}: state does not describe {} with {} blocks of {} bytes", path,
                           t->name(), t->blocks(), block_size);
      return false;
    }
    for (uint64_t i = 0; i < blocks; ++i) {
      uint64_t g = 0;
      in >> std::hex >> g >> std::dec;
      if (!in) {
        *error = fmt::format("{}: truncated at {} block {}", path, name, i);
        return false;
      }
      t->Release(i, g);
    }
    t->known_end_.store(end, std::memory_order_release);
  }
  return true;
}

}  // namespace nfsx::load
