// RecordReader against a byte stream cut into arbitrary reads, compared with a plain
// one-pass reference parser: the records that come out must not depend on how the bytes
// arrived.
//
// Input: byte 0 = flags and n (bit 7: divert, low 7 bits: n), then n "read size" bytes
// used in turn (0 means: call ShrinkIfIdle before a 1-byte read, as an idle connection
// would), then, with divert, 4 diversion bytes, then the stream itself. n = 0 feeds the
// whole stream in one read.
//
// Diversion plays the client's reply landing (RpcClient::MaybeLand): once the head of a
// single-fragment record still arriving is long enough, a region of it is diverted into a
// guarded destination, and maybe the filling is stopped part way (the call gave up). The
// record must come out as the reference record minus the region, the destination must
// hold the region's front, and nothing outside the destination may be written.
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

// The diversion bytes: where the region starts (and how much head it waits for), its
// length and its destination's size as fractions, and after how many reads into the
// destination the filling stops (0: never).
struct DivertPlan {
  size_t at = 0;
  uint8_t len_frac = 0, dest_frac = 0, stop_after = 0;
};

constexpr size_t kGuard = 16;
constexpr std::byte kGuardByte{0xA5};

struct Diversion {
  size_t record = 0;  // index of the record among the stream's records
  size_t at = 0, len = 0, dest_size = 0;
  std::vector<std::byte> dest;  // dest_size bytes, then kGuard guard bytes
  size_t left = 0;              // region bytes still to come off the stream
  size_t filled = 0;            // of the destination
  size_t reads_into_dest = 0;
};

void CheckGuard(const Diversion& d) {
  for (size_t i = d.dest_size; i < d.dest.size(); ++i) {
    if (d.dest[i] != kGuardByte) Violation("bytes written past the destination");
  }
}

// Bytes left of the stream's fragment whose data holds offset `at`, when that fragment is
// the last of its record; otherwise (a header, an earlier fragment) no limit. Inside a
// record's last fragment PrepareWrite() owes room for exactly the rest of it, not more.
size_t RestOfLastFragment(std::span<const std::byte> s, size_t at) {
  size_t pos = 0;
  while (pos + 4 <= s.size()) {
    uint32_t mark = nfsx::xdr::LoadBe32(s.data() + pos);
    size_t start = pos + 4;
    size_t end = start + (mark & ~nfsx::rpc::kLastFragment);
    if (at < start) break;
    if (at < end) return (mark & nfsx::rpc::kLastFragment) ? end - at : SIZE_MAX;
    pos = end;
  }
  return SIZE_MAX;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const bool divert = (data[0] & 0x80) != 0;
  size_t nsizes = std::min<size_t>(data[0] & 0x7f, size - 1);
  std::span<const uint8_t> sizes(data + 1, nsizes);
  size_t header = 1 + nsizes;
  DivertPlan plan;
  if (divert) {
    if (size - header < 4) return 0;
    plan = {data[header] % 64u, data[header + 1], data[header + 2], data[header + 3]};
    header += 4;
  }
  std::span<const std::byte> stream(reinterpret_cast<const std::byte*>(data) + header,
                                    size - header);
  const Reference ref = Parse(stream);
  std::vector<Diversion> diversions;  // one per diverted record, in stream order
  size_t diverted_bytes = 0;          // of the records that came out

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
    Diversion* current = diversions.empty() ? nullptr : &diversions.back();
    const bool diverting = current && current->left > 0;
    if (diverting && current->filled < current->dest_size && plan.stop_after != 0 &&
        current->reads_into_dest >= plan.stop_after) {
      reader.StopFillingDestination();
      current->dest_size = current->filled;  // what is left is dropped from here on
    }
    const bool into_dest = diverting && current->filled < current->dest_size;
    if (reader.IntoDestination() != into_dest) Violation("IntoDestination() is wrong");
    std::span<std::byte> space = reader.PrepareWrite(want);
    if (diverting) {
      // Bytes of a diversion: the destination's unfilled part, or scratch, never more.
      if (space.empty() || space.size() > current->left) {
        Violation("PrepareWrite's span while diverting is empty or reaches past the region");
      }
      if (into_dest && (space.data() != current->dest.data() + current->filled ||
                        space.size() > current->dest_size - current->filled)) {
        Violation("PrepareWrite's span is not the destination's unfilled part");
      }
      want = std::min(want, space.size());
      current->left -= want;
      if (into_dest) {
        current->filled += want;
        ++current->reads_into_dest;
      }
    } else {
      if (space.size() < std::min(want, RestOfLastFragment(stream, fed))) {
        Violation("PrepareWrite gave less room than asked for (or than a last fragment's rest)");
      }
      want = std::min(want, space.size());
    }
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
      std::vector<std::byte> expect = ref.records[records];
      const Diversion* d = nullptr;
      if (!diversions.empty() && diversions.back().record == records) d = &diversions.back();
      if (!d && reader.last_landed()) Violation("last_landed() for a record never diverted");
      if (d) {
        CheckGuard(*d);
        if (!reader.last_landed()) Violation("no last_landed() for a diverted record");
        size_t landed = *reader.last_landed();
        if (landed != d->filled) Violation("last_landed() is not what reached the destination");
        if (landed > 0 && std::memcmp(d->dest.data(), expect.data() + d->at, landed) != 0) {
          Violation("the destination does not hold the diverted region");
        }
        expect.erase(expect.begin() + static_cast<std::ptrdiff_t>(d->at),
                     expect.begin() + static_cast<std::ptrdiff_t>(d->at + d->len));
        diverted_bytes += d->len;
      }
      if (record.size() != expect.size() ||
          (!expect.empty() && std::memcmp(record.data(), expect.data(), expect.size()) != 0)) {
        Violation("record differs from the reference parse");
      }
      ++records;
      record_bytes += record.size();
      // Every record costs at least one 4-byte mark.
      if (record_bytes + diverted_bytes + 4 * records > fed) {
        Violation("records hold more bytes than were fed");
      }
    }
    if (!divert || too_large) continue;
    nfsx::rpc::RecordReader::Incomplete inc;
    if (!reader.CurrentIncomplete(&inc)) continue;
    if (!diversions.empty() && diversions.back().record == records) {
      Violation("CurrentIncomplete() offers a record already diverted");
    }
    if (inc.head.size() >= inc.length) Violation("an incomplete record with all its bytes");
    if (records < ref.records.size()) {
      const auto& whole = ref.records[records];
      if (inc.length != whole.size() ||
          (!inc.head.empty() && std::memcmp(inc.head.data(), whole.data(), inc.head.size()))) {
        Violation("CurrentIncomplete() is not the stream's next record");
      }
    }
    if (inc.head.size() < plan.at) continue;  // as the receiver waits for a reply's header
    Diversion& d = diversions.emplace_back();
    d.record = records;
    d.at = plan.at;
    d.len = (inc.length - d.at) * plan.len_frac / 255;
    d.dest_size = plan.dest_frac == 255 ? d.len + 7 : d.len * plan.dest_frac / 255;
    d.dest.assign(d.dest_size + kGuard, kGuardByte);
    reader.Divert(d.at, d.len, std::span(d.dest).first(d.dest_size));
    size_t buffered = std::min(inc.head.size() - d.at, d.len);
    d.left = d.len - buffered;
    d.filled = std::min(buffered, d.dest_size);
    CheckGuard(d);
  }
  if (too_large != ref.too_large) Violation("kTooLarge disagrees with the reference");
  if (records != ref.records.size()) Violation("records missing");
  if (!too_large && ref.unparsed > 0 && !reader.HasPartial()) {
    Violation("bytes of an unfinished record are buffered but HasPartial() is false");
  }
  return 0;
}
