#include "vfs/unsynced_journal.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <string_view>

#include "vfs/vfs.h"

namespace nfsx::vfs {
namespace {

// Past this size the journal is rewritten with only the ranges still unsynced.
constexpr uint64_t kCompactBytes = 4u << 20;

std::string Hex(std::span<const std::byte> bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (std::byte b : bytes) {
    out += kDigits[std::to_integer<unsigned>(b) >> 4];
    out += kDigits[std::to_integer<unsigned>(b) & 15];
  }
  return out;
}

std::vector<std::byte> Unhex(std::string_view hex) {
  std::vector<std::byte> out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    unsigned v = 0;
    std::from_chars(hex.data() + i, hex.data() + i + 2, v, 16);
    out.push_back(static_cast<std::byte>(v));
  }
  return out;
}

// Splits `line` at spaces into at most `n` fields; false if there are not exactly `n`.
bool Fields(std::string_view line, std::string_view* out, size_t n) {
  size_t i = 0;
  while (!line.empty() && i < n) {
    size_t sp = line.find(' ');
    out[i++] = line.substr(0, sp);
    line = sp == std::string_view::npos ? std::string_view{} : line.substr(sp + 1);
  }
  return i == n && line.empty();
}

// "W" a write, "L" a write lost by a failed sync (in a compacted journal).
std::string WriteRecord(char kind, const std::string& hex, uint64_t seq, uint64_t offset,
                        uint64_t length) {
  return std::string(1, kind) + " " + hex + " " + std::to_string(seq) + " " +
         std::to_string(offset) + " " + std::to_string(length) + "\n";
}

bool Number(std::string_view s, uint64_t* v) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
  return ec == std::errc{} && end == s.data() + s.size();
}

Result<void> WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return FailErrno();
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return {};
}

}  // namespace

Result<std::unique_ptr<UnsyncedWriteJournal>> UnsyncedWriteJournal::Open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return FailErrno();
  return std::unique_ptr<UnsyncedWriteJournal>(new UnsyncedWriteJournal(path, fd));
}

UnsyncedWriteJournal::~UnsyncedWriteJournal() {
  if (fd_ >= 0) ::close(fd_);
}

void UnsyncedWriteJournal::ApplySynced(std::vector<Range>& ranges, uint64_t before) {
  // Synced writes become durable, and heal the bytes they overwrote of older lost ones.
  std::vector<Range> healed;
  std::vector<Range> kept;
  for (const Range& r : ranges) {
    if (!r.lost && r.seq < before) healed.push_back(r);
  }
  for (const Range& r : ranges) {
    if (!r.lost) {
      if (r.seq >= before) kept.push_back(r);
      continue;
    }
    std::vector<Range> pieces{r};
    for (const Range& h : healed) {
      if (h.seq < r.seq) continue;  // older than the loss: the loss overwrote it
      std::vector<Range> next;
      for (const Range& p : pieces) {
        uint64_t p_end = p.offset + p.length, h_end = h.offset + h.length;
        if (h_end <= p.offset || h.offset >= p_end) {
          next.push_back(p);
          continue;
        }
        if (p.offset < h.offset) next.push_back({p.seq, p.offset, h.offset - p.offset, true});
        if (h_end < p_end) next.push_back({p.seq, h_end, p_end - h_end, true});
      }
      pieces = std::move(next);
    }
    kept.insert(kept.end(), pieces.begin(), pieces.end());
  }
  ranges = std::move(kept);
}

void UnsyncedWriteJournal::ApplyFailed(std::vector<Range>& ranges, uint64_t before) {
  for (Range& r : ranges) {
    if (r.seq < before) r.lost = true;
  }
}

void UnsyncedWriteJournal::ApplyTruncated(std::vector<Range>& ranges, uint64_t size) {
  std::erase_if(ranges, [size](const Range& r) { return r.offset >= size; });
  for (Range& r : ranges) r.length = std::min(r.length, size - r.offset);
}

void UnsyncedWriteJournal::Apply(char kind, std::vector<Range>& ranges, uint64_t value) {
  switch (kind) {
    case 'S':
      ApplySynced(ranges, value);
      break;
    case 'F':
      ApplyFailed(ranges, value);
      break;
    case 'T':
      ApplyTruncated(ranges, value);  // the value is the new size
      break;
  }
}

UnsyncedWriteJournal::Unsynced UnsyncedWriteJournal::Parse(std::string_view text) {
  Unsynced unsynced;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    if (nl == std::string_view::npos) break;  // cut short by the kill: never completed
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl + 1);
    std::string_view f[5];
    uint64_t seq = 0, offset = 0, length = 0;
    if (Fields(line, f, 5) && (f[0] == "W" || f[0] == "L") && Number(f[2], &seq) &&
        Number(f[3], &offset) && Number(f[4], &length)) {
      unsynced[std::string(f[1])].push_back(Range{seq, offset, length, f[0] == "L"});
    } else if (Fields(line, f, 3) && (f[0] == "S" || f[0] == "F" || f[0] == "T") &&
               Number(f[2], &seq)) {
      if (auto it = unsynced.find(std::string(f[1])); it != unsynced.end()) {
        Apply(f[0][0], it->second, seq);
        if (it->second.empty()) unsynced.erase(it);
      }
    }
  }
  return unsynced;
}

Result<UnsyncedWriteJournal::Replayed> UnsyncedWriteJournal::Replay(Filesystem& fs) {
  std::lock_guard lock(mu_);
  std::string text;
  char buf[1 << 16];
  for (off_t at = 0;;) {
    ssize_t n = ::pread(fd_, buf, sizeof(buf), at);
    if (n < 0) {
      if (errno == EINTR) continue;
      return FailErrno();
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    at += n;
  }
  Replayed done;
  const std::vector<std::byte> lost(64 << 10, kLostByte);
  for (const auto& [hex, ranges] : Parse(text)) {
    std::vector<std::byte> handle = Unhex(hex);
    Result<NodePtr> node = fs.DecodeHandle(handle);
    Result<std::unique_ptr<OpenFile>> file =
        node ? fs.Open(**node, true) : Result<std::unique_ptr<OpenFile>>(Fail(ESTALE));
    if (!file) {
      done.stale += ranges.size();
      continue;
    }
    Result<Attr> attr = (*file)->GetAttr();
    if (!attr) return std::unexpected(attr.error());
    for (const Range& r : ranges) {
      // Only what the file still holds: a truncation since then removed the rest.
      uint64_t end = std::min(r.offset + r.length, attr->size);
      for (uint64_t at = r.offset; at < end;) {
        size_t n = static_cast<size_t>(std::min<uint64_t>(end - at, lost.size()));
        Result<size_t> wrote = (*file)->Write(at, std::span(lost).first(n));
        if (!wrote) return std::unexpected(wrote.error());
        at += *wrote;
        done.bytes += *wrote;
      }
      ++done.ranges;
    }
    if (auto synced = (*file)->Sync(true); !synced) return std::unexpected(synced.error());
    (void)(*file)->Close();
  }
  if (::ftruncate(fd_, 0) != 0) return FailErrno();
  file_bytes_ = 0;
  unsynced_.clear();
  return done;
}

uint64_t UnsyncedWriteJournal::Wrote(std::span<const std::byte> handle, uint64_t offset,
                                     uint64_t length) {
  std::string hex = Hex(handle);
  std::lock_guard lock(mu_);
  uint64_t seq = next_seq_++;
  AppendLocked(WriteRecord('W', hex, seq, offset, length));
  unsynced_[hex].push_back(Range{seq, offset, length});
  return seq;
}

uint64_t UnsyncedWriteJournal::Next() const {
  std::lock_guard lock(mu_);
  return next_seq_;
}

void UnsyncedWriteJournal::Record(std::span<const std::byte> handle, char kind, uint64_t value) {
  std::string hex = Hex(handle);
  std::lock_guard lock(mu_);
  auto it = unsynced_.find(hex);
  if (it == unsynced_.end()) return;
  Apply(kind, it->second, value);
  if (it->second.empty()) unsynced_.erase(it);
  AppendLocked(std::string(1, kind) + " " + hex + " " + std::to_string(value) + "\n");
}

void UnsyncedWriteJournal::Synced(std::span<const std::byte> handle, uint64_t before) {
  Record(handle, 'S', before);
}

void UnsyncedWriteJournal::WriteBackFailed(std::span<const std::byte> handle, uint64_t before) {
  Record(handle, 'F', before);
}

void UnsyncedWriteJournal::Truncated(std::span<const std::byte> handle, uint64_t size) {
  Record(handle, 'T', size);
}

size_t UnsyncedWriteJournal::unsynced_ranges() const {
  std::lock_guard lock(mu_);
  size_t n = 0;
  for (const auto& [hex, ranges] : unsynced_) n += ranges.size();
  return n;
}

void UnsyncedWriteJournal::AppendLocked(const std::string& record) {
  if (file_bytes_ + record.size() > kCompactBytes) CompactLocked();
  // A record that cannot be written would make the simulation lose less than a real
  // crash: the test would pass where it should not. That is a broken test set-up.
  if (!WriteAll(fd_, record)) std::abort();
  file_bytes_ += record.size();
}

void UnsyncedWriteJournal::CompactLocked() {
  std::string text;
  for (const auto& [hex, ranges] : unsynced_) {
    for (const Range& r : ranges) {
      text += WriteRecord(r.lost ? 'L' : 'W', hex, r.seq, r.offset, r.length);
    }
  }
  std::string tmp = path_ + ".tmp";
  int fd = ::open(tmp.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0 || !WriteAll(fd, text) || ::rename(tmp.c_str(), path_.c_str()) != 0) std::abort();
  ::close(fd_);
  fd_ = fd;
  file_bytes_ = text.size();
}

}  // namespace nfsx::vfs
