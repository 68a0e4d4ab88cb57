#include "rpc/record_marking.h"

#include <gtest/gtest.h>

#include <random>
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

// Feeds `stream` in chunks of `chunk` bytes and collects the records.
std::vector<std::string> Feed(RecordReader& r, const std::vector<std::byte>& stream, size_t chunk,
                              bool* too_large = nullptr) {
  std::vector<std::string> got;
  size_t pos = 0;
  while (pos < stream.size()) {
    auto space = r.PrepareWrite(chunk);
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

}  // namespace
}  // namespace nfsx::rpc
