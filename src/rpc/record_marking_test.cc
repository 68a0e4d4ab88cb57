#include "rpc/record_marking.h"

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "xdr/xdr.h"

namespace nfsx::rpc {
namespace {

// Builds a stream: each record split into the given fragment sizes.
std::vector<std::byte> Frame(const std::vector<std::pair<std::string, std::vector<size_t>>>& recs) {
  std::vector<std::byte> out;
  for (const auto& [body, frags] : recs) {
    size_t pos = 0;
    for (size_t i = 0; i < frags.size(); ++i) {
      uint32_t mark = static_cast<uint32_t>(frags[i]) | (i + 1 == frags.size() ? kLastFragment : 0);
      std::byte hdr[4];
      xdr::StoreBe32(hdr, mark);
      out.insert(out.end(), hdr, hdr + 4);
      for (size_t j = 0; j < frags[i]; ++j) out.push_back(std::byte(body[pos + j]));
      pos += frags[i];
    }
  }
  return out;
}

// Feeds `stream` in chunks of `chunk` bytes and collects the records, calling `after`
// once each chunk's records are out. Every PrepareWrite() must make the capacity
// CapacityFor() said it would (a server reserves that much before).
std::vector<std::string> Feed(RecordReader& r, const std::vector<std::byte>& stream, size_t chunk,
                              bool* too_large = nullptr,
                              const std::function<void(RecordReader&)>& after = nullptr) {
  std::vector<std::string> got;
  size_t pos = 0;
  while (pos < stream.size()) {
    size_t expect = r.CapacityFor(chunk);
    auto space = r.PrepareWrite(chunk);
    EXPECT_EQ(r.capacity(), expect) << "chunk " << chunk << " at " << pos;
    size_t n = std::min({chunk, space.size(), stream.size() - pos});
    std::memcpy(space.data(), stream.data() + pos, n);
    r.CommitWrite(n);
    pos += n;
    std::span<std::byte> rec;
    RecordReader::Status st;
    while ((st = r.Next(&rec)) == RecordReader::Status::kRecord) {
      got.emplace_back(reinterpret_cast<const char*>(rec.data()), rec.size());
    }
    if (st == RecordReader::Status::kTooLarge) {
      if (too_large) *too_large = true;
      return got;
    }
    if (after) after(r);
  }
  return got;
}

TEST(RecordReaderTest, SingleAndMultiFragmentRecordsAtEveryChunkSize) {
  std::string a = "hello", b(1000, 'x'), c = "tail-record";
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<char>('a' + i % 26);
  auto stream = Frame({{a, {5}}, {b, {1, 499, 0, 500}}, {c, {3, 8}}, {"", {0}}});
  for (size_t chunk : {1u, 2u, 3u, 7u, 64u, 4096u}) {
    RecordReader r(1 << 20);
    auto got = Feed(r, stream, chunk);
    ASSERT_EQ(got.size(), 4u) << chunk;
    EXPECT_EQ(got[0], a);
    EXPECT_EQ(got[1], b);
    EXPECT_EQ(got[2], c);
    EXPECT_EQ(got[3], "");
    EXPECT_FALSE(r.HasPartial());
  }
}

TEST(RecordReaderTest, RandomFragmentationRoundTrips) {
  std::mt19937 rng(42);
  std::vector<std::pair<std::string, std::vector<size_t>>> recs;
  std::vector<std::string> bodies;
  for (int i = 0; i < 200; ++i) {
    std::string body(rng() % 3000, '\0');
    for (auto& ch : body) ch = static_cast<char>(rng());
    std::vector<size_t> frags;
    size_t left = body.size();
    while (left > 0) {
      size_t f = std::min<size_t>(left, 1 + rng() % 700);
      frags.push_back(f);
      left -= f;
    }
    if (frags.empty()) frags.push_back(0);
    recs.emplace_back(body, frags);
    bodies.push_back(body);
  }
  auto stream = Frame(recs);
  RecordReader r(1 << 20);
  EXPECT_EQ(Feed(r, stream, 1 + rng() % 5000), bodies);
}

TEST(RecordReaderTest, RecordOverMaximumIsRefused) {
  RecordReader r(100);
  bool too_large = false;
  auto got = Feed(r, Frame({{"ok", {2}}, {std::string(101, 'z'), {101}}}), 4096, &too_large);
  EXPECT_TRUE(too_large);
  ASSERT_EQ(got.size(), 1u);  // the record before the bad one still came out
}

TEST(RecordReaderTest, FragmentsAddingUpOverMaximumAreRefused) {
  RecordReader r(100);
  bool too_large = false;
  Feed(r, Frame({{std::string(150, 'z'), {60, 60, 30}}}), 4096, &too_large);
  EXPECT_TRUE(too_large);
}

TEST(RecordReaderTest, PartialRecordIsReportedAndShrinkKeepsIt) {
  RecordReader r(1 << 20);
  auto stream = Frame({{std::string(2000, 'p'), {2000}}});
  auto space = r.PrepareWrite(100);
  std::memcpy(space.data(), stream.data(), 100);
  r.CommitWrite(100);
  std::span<std::byte> rec;
  EXPECT_EQ(r.Next(&rec), RecordReader::Status::kNeedMore);
  EXPECT_TRUE(r.HasPartial());
  r.ShrinkIfIdle(0);  // must not drop the partial record
  space = r.PrepareWrite(1);
  EXPECT_GE(space.size(), 1904u);  // room for the rest of the fragment at once
  std::memcpy(space.data(), stream.data() + 100, stream.size() - 100);
  r.CommitWrite(stream.size() - 100);
  ASSERT_EQ(r.Next(&rec), RecordReader::Status::kRecord);
  EXPECT_EQ(rec.size(), 2000u);
}

// A 1 MiB WRITE as the socket hands it over (64 KiB, then most of it, then the last few
// hundred bytes), twice: the buffer grows once to the record's size and is the right size
// for the next one. It used to double to 2 MiB for the last bytes (PrepareWrite asked for
// 64 KiB of room where 976 bytes were missing), which the server then freed as too large
// to keep: three allocations and a 1 MiB copy for every 1 MiB WRITE.
TEST(RecordReaderTest, ARecordArrivingInPiecesGetsABufferOfItsOwnSize) {
  RecordReader r(4 << 20);
  const size_t body = (1 << 20) + 124;
  auto stream = Frame({{std::string(body, 'w'), {body}}});
  for (int call = 0; call < 2; ++call) {
    size_t pos = 0;
    std::span<std::byte> rec;
    RecordReader::Status st = RecordReader::Status::kNeedMore;
    for (size_t upto : {size_t{64} << 10, stream.size() - 976, stream.size()}) {
      while (pos < upto) {
        ASSERT_EQ(st, RecordReader::Status::kNeedMore);
        auto space = r.PrepareWrite();
        size_t n = std::min(space.size(), upto - pos);
        std::memcpy(space.data(), stream.data() + pos, n);
        r.CommitWrite(n);
        pos += n;
        st = r.Next(&rec);  // as the server does after every read
      }
    }
    ASSERT_EQ(st, RecordReader::Status::kRecord);
    EXPECT_EQ(rec.size(), body);
    EXPECT_LE(r.capacity(), stream.size()) << "call " << call << ": grown past the record";
  }
}

// A reader shrunk to what it holds, at every point of a stream of records in several
// fragments (after whole records, mid-fragment, between fragments), still gives every
// record back whole (Feed checks CapacityFor() against each PrepareWrite()).
TEST(RecordReaderTest, ShrinkingToFitAnywhereKeepsEveryRecordWhole) {
  std::vector<std::pair<std::string, std::vector<size_t>>> recs;
  for (int i = 0; i < 6; ++i) {
    std::string body(9000 + static_cast<size_t>(i) * 777, static_cast<char>('a' + i));
    recs.push_back({body, {1000, 3000, body.size() - 4000}});
  }
  auto stream = Frame(recs);
  for (size_t chunk : {7u, 100u, 1500u, 4096u, 20000u}) {
    RecordReader r(1 << 20);
    auto got =
        Feed(r, stream, chunk, nullptr, [](RecordReader& reader) { reader.ShrinkToFit(16); });
    ASSERT_EQ(got.size(), recs.size()) << "chunk " << chunk;
    for (size_t i = 0; i < recs.size(); ++i) EXPECT_EQ(got[i], recs[i].first) << i;
  }
}

// Feeds `stream` in reads of at most `chunk` bytes, diverting the first record's
// bytes [at, at + len) to `dest` as soon as `head` of its bytes are buffered.
std::vector<std::string> FeedDiverting(RecordReader& r, const std::vector<std::byte>& stream,
                                       size_t chunk, size_t head, size_t at, size_t len,
                                       std::span<std::byte> dest, size_t* landed) {
  std::vector<std::string> got;
  bool diverted = false;
  size_t pos = 0;
  while (pos < stream.size()) {
    RecordReader::Incomplete inc;
    if (!diverted && r.CurrentIncomplete(&inc) && inc.head.size() >= head) {
      r.Divert(at, len, dest);
      diverted = true;
    }
    auto space = r.PrepareWrite(chunk);
    size_t n = std::min({chunk, space.size(), stream.size() - pos});
    std::memcpy(space.data(), stream.data() + pos, n);
    r.CommitWrite(n);
    pos += n;
    std::span<std::byte> rec;
    while (r.Next(&rec) == RecordReader::Status::kRecord) {
      if (r.last_landed()) *landed = *r.last_landed();
      got.emplace_back(reinterpret_cast<const char*>(rec.data()), rec.size());
    }
  }
  EXPECT_TRUE(diverted);
  return got;
}

std::string Str(std::span<const std::byte> b) {
  return {reinterpret_cast<const char*>(b.data()), b.size()};
}

// Whatever the reads' sizes, the diverted bytes reach the destination, the
// record comes out without them, and the next record is untouched.
TEST(RecordReaderTest, DivertedBytesLandInTheDestinationAndLeaveTheRecord) {
  std::string body = "HEAD" + std::string(300, 'x') + "0123456789" + std::string(200, 'y') + "TAIL";
  for (size_t i = 0; i < 300; ++i) body[4 + i] = static_cast<char>('a' + i % 26);
  auto stream = Frame({{body, {body.size()}}, {"next", {4}}});
  for (size_t chunk : {1, 7, 64, 200}) {  // the record arrives in pieces
    for (size_t head : {4, 10, 100}) {
      RecordReader r(1 << 20);
      std::vector<std::byte> dest(300);
      size_t landed = 0;
      auto got = FeedDiverting(r, stream, chunk, head, 4, 300, dest, &landed);
      ASSERT_EQ(got.size(), 2u) << chunk << " " << head;
      EXPECT_EQ(got[0], "HEAD0123456789" + std::string(200, 'y') + "TAIL") << chunk << " " << head;
      EXPECT_EQ(got[1], "next");
      EXPECT_EQ(landed, 300u);
      EXPECT_EQ(Str(dest), body.substr(4, 300)) << chunk << " " << head;
    }
  }
}

// A destination smaller than the diverted bytes keeps their front; the rest are
// dropped, not written past its end and not left in the record.
TEST(RecordReaderTest, DivertedBytesBeyondTheDestinationAreDropped) {
  std::string body = "HD" + std::string(1000, 'z') + "T";
  for (size_t i = 0; i < 1000; ++i) body[2 + i] = static_cast<char>('A' + i % 26);
  auto stream = Frame({{body, {body.size()}}, {"after", {5}}});
  for (size_t chunk : {3, 100, 500}) {
    RecordReader r(1 << 20);
    std::vector<std::byte> storage(110, std::byte{0x55});
    std::span<std::byte> dest(storage.data(), 100);  // 10 guard bytes behind it
    size_t landed = 0;
    auto got = FeedDiverting(r, stream, chunk, 2, 2, 1000, dest, &landed);
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0], "HDT");
    EXPECT_EQ(got[1], "after");
    EXPECT_EQ(landed, 100u);
    EXPECT_EQ(Str(dest), body.substr(2, 100));
    for (size_t i = 100; i < 110; ++i) EXPECT_EQ(storage[i], std::byte{0x55}) << chunk;
  }
}

// When the destination's owner is gone mid-way, the rest is read and dropped.
TEST(RecordReaderTest, StoppingFillingTheDestinationDropsTheRest) {
  std::string body = "H" + std::string(500, 'q') + "E";
  auto stream = Frame({{body, {body.size()}}});
  RecordReader r(1 << 20);
  std::vector<std::byte> dest(500, std::byte{0});
  auto space = r.PrepareWrite(10);
  std::memcpy(space.data(), stream.data(), 10);  // mark + "H" + 5 bytes
  r.CommitWrite(10);
  std::span<std::byte> rec;
  ASSERT_EQ(r.Next(&rec), RecordReader::Status::kNeedMore);
  RecordReader::Incomplete inc;
  ASSERT_TRUE(r.CurrentIncomplete(&inc));
  EXPECT_EQ(inc.length, body.size());
  r.Divert(1, 500, dest);
  EXPECT_FALSE(r.CurrentIncomplete(&inc));  // once per record
  ASSERT_TRUE(r.IntoDestination());
  space = r.PrepareWrite();
  ASSERT_EQ(space.data(), dest.data() + 5);
  EXPECT_EQ(space.size(), 495u);
  std::memcpy(space.data(), stream.data() + 10, 95);
  r.CommitWrite(95);
  r.StopFillingDestination();
  size_t pos = 105;
  while (pos < stream.size()) {
    EXPECT_FALSE(r.IntoDestination());
    space = r.PrepareWrite();
    size_t n = std::min(space.size(), stream.size() - pos);
    std::memcpy(space.data(), stream.data() + pos, n);
    r.CommitWrite(n);
    pos += n;
  }
  ASSERT_EQ(r.Next(&rec), RecordReader::Status::kRecord);
  EXPECT_EQ(Str(rec), "HE");
  ASSERT_TRUE(r.last_landed().has_value());
  EXPECT_EQ(*r.last_landed(), 100u);
  for (size_t i = 100; i < 500; ++i) ASSERT_EQ(dest[i], std::byte{0}) << i;
}

// Records in several fragments are never offered for diversion.
TEST(RecordReaderTest, AFragmentedRecordIsNotOfferedForDiversion) {
  std::string body(100, 'f');
  auto stream = Frame({{body, {50, 50}}});
  RecordReader r(1 << 20);
  auto space = r.PrepareWrite(80);
  std::memcpy(space.data(), stream.data(), 80);
  r.CommitWrite(80);
  std::span<std::byte> rec;
  ASSERT_EQ(r.Next(&rec), RecordReader::Status::kNeedMore);
  RecordReader::Incomplete inc;
  EXPECT_FALSE(r.CurrentIncomplete(&inc));
}

}  // namespace
}  // namespace nfsx::rpc
