// RecordReader against a byte stream cut into arbitrary reads, compared with a plain
// one-pass reference parser: the records that come out must not depend on how the bytes
// arrived.
//
// Input: byte 0 = n, then n "read size" bytes used in turn (0 means: call ShrinkIfIdle
// before a 1-byte read, as an idle connection would), then the stream itself. n = 0 feeds
// the whole stream in one read.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <vector>

#include "rpc/record_marking.h"
#include "xdr/xdr.h"

namespace {

// Small, so that fuzzed lengths reach the limit and real traffic mixes fits and misfits.
constexpr size_t kMaxRecord = 4096;

[[noreturn]] void Violation(const char* what) {
  std::fprintf(stderr, "RecordReader invariant violated: %s\n", what);
  std::abort();
}

struct Reference {
  std::vector<std::vector<std::byte>> records;
  bool too_large = false;
  size_t unparsed = 0;  // trailing bytes of an unfinished fragment or mark
};

// RFC 5531 section 11, read the obvious way.
Reference Parse(std::span<const std::byte> s) {
  Reference ref;
  std::vector<std::byte> record;
  size_t at = 0;
  while (s.size() - at >= 4) {
    uint32_t mark = nfsx::xdr::LoadBe32(s.data() + at);
    size_t len = mark & ~nfsx::rpc::kLastFragment;
    if (record.size() + len > kMaxRecord) {
      ref.too_large = true;
      return ref;
    }
    if (s.size() - at - 4 < len) break;
    record.insert(record.end(), s.begin() + at + 4, s.begin() + at + 4 + len);
    at += 4 + len;
    if (mark & nfsx::rpc::kLastFragment) {
      ref.records.push_back(std::move(record));
      record.clear();
    }
  }
  ref.unparsed = s.size() - at;
  return ref;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  size_t nsizes = std::min<size_t>(data[0], size - 1);
  std::span<const uint8_t> sizes(data + 1, nsizes);
  std::span<const std::byte> stream(reinterpret_cast<const std::byte*>(data) + 1 + nsizes,
                                    size - 1 - nsizes);
  const Reference ref = Parse(stream);

  nfsx::rpc::RecordReader reader(kMaxRecord);
  size_t fed = 0, records = 0, record_bytes = 0, turn = 0;
  bool too_large = false;
  while (fed < stream.size() && !too_large) {
    size_t want = stream.size();
    if (!sizes.empty()) {
      // 1-127 bytes as is, larger bytes in steps of 64 up to 8 KiB: both tiny and big reads.
      uint8_t b = sizes[turn++ % sizes.size()];
      want = b < 128 ? b : size_t{b - 127u} * 64;
    }
    if (want == 0) {
      reader.ShrinkIfIdle(0);
      want = 1;  // and still make progress
    }
    want = std::min(want, stream.size() - fed);
    std::span<std::byte> space = reader.PrepareWrite(want);
    if (space.size() < want) Violation("PrepareWrite gave less room than asked for");
    std::memcpy(space.data(), stream.data() + fed, want);
    reader.CommitWrite(want);
    fed += want;

    for (;;) {
      std::span<std::byte> record;
      auto status = reader.Next(&record);
      if (status == nfsx::rpc::RecordReader::Status::kNeedMore) break;
      if (status == nfsx::rpc::RecordReader::Status::kTooLarge) {
        too_large = true;
        break;
      }
      if (record.size() > kMaxRecord) Violation("record exceeds max_record");
      if (records >= ref.records.size()) Violation("more records than the stream holds");
      const auto& expect = ref.records[records];
      if (record.size() != expect.size() ||
          (!expect.empty() && std::memcmp(record.data(), expect.data(), expect.size()) != 0)) {
        Violation("record differs from the reference parse");
      }
      ++records;
      record_bytes += record.size();
      // Every record costs at least one 4-byte mark.
      if (record_bytes + 4 * records > fed) Violation("records hold more bytes than were fed");
    }
  }
  if (too_large != ref.too_large) Violation("kTooLarge disagrees with the reference");
  if (records != ref.records.size()) Violation("records missing");
  if (!too_large && ref.unparsed > 0 && !reader.HasPartial()) {
    Violation("bytes of an unfinished record are buffered but HasPartial() is false");
  }
  return 0;
}
