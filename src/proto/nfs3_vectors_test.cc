// Wire-exactness against real peers: every NFSv3 and MOUNTv3 message captured between
// the Linux 6.1 kernel client / libnfs 4.0 and NFS-Ganesha 4.3 (tests/data/nfs3-vectors,
// made by scripts/extract_vectors.py) must decode with our types, consume every byte, and
// re-encode to exactly the bytes on the wire. Hand-written round-trip tests only prove
// that encoder and decoder agree with each other; these prove they agree with the RFC as
// other implementations read it.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "base/out_buffer.h"
#include "proto/mount3_types.h"
#include "proto/nfs3_types.h"
#include "rpc/message.h"
#include "xdr/xdr.h"

#ifndef NFSX_TESTDATA_DIR
#error "NFSX_TESTDATA_DIR must name the tests/data directory"
#endif

namespace nfsx::nfs3 {
namespace {

using Bytes = std::span<const std::byte>;

constexpr uint32_t kNfsAclProgram = 100227;  // Linux's side protocol: captured, not decoded.

enum class Kind : uint32_t { kCall = 0, kReply = 1 };

struct Vector {
  size_t index;  // position in its file, for failure messages
  Kind kind;
  uint32_t prog;
  uint32_t vers;
  uint32_t proc;
  Bytes message;
};

struct VectorFile {
  const char* name;
  size_t expected_messages;  // a truncated or regenerated file should not pass quietly
};
constexpr VectorFile kFiles[] = {
    {"kernel-client-metadata.vec", 2172},
    {"kernel-client-errors.vec", 176},
    {"libnfs-client.vec", 132},
};
void PrintTo(const VectorFile& file, std::ostream* os) { *os << file.name; }

// Layout (see tests/data/nfs3-vectors/README.md): "NFSXVEC1", u32 count, then per message
// u32 kind, prog, vers, proc, length and the message bytes; all big-endian.
class VectorSet {
 public:
  bool Load(const std::string& path, std::string* error) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return Fail(error, fmt::format("cannot open {}", path));
    std::vector<char> raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    blob_.resize(raw.size());
    std::memcpy(blob_.data(), raw.data(), raw.size());

    static constexpr char kMagic[] = "NFSXVEC1";
    if (blob_.size() < 12 || std::memcmp(blob_.data(), kMagic, 8) != 0) {
      return Fail(error, fmt::format("{} is not a vector file (a Git LFS pointer?)", path));
    }
    uint32_t count = xdr::LoadBe32(blob_.data() + 8);
    size_t at = 12;
    for (uint32_t i = 0; i < count; ++i) {
      if (blob_.size() - at < 20) return Fail(error, fmt::format("{}: truncated", path));
      const std::byte* h = blob_.data() + at;
      Vector v{i,
               static_cast<Kind>(xdr::LoadBe32(h)),
               xdr::LoadBe32(h + 4),
               xdr::LoadBe32(h + 8),
               xdr::LoadBe32(h + 12),
               {}};
      size_t length = xdr::LoadBe32(h + 16);
      at += 20;
      if (blob_.size() - at < length) return Fail(error, fmt::format("{}: truncated", path));
      v.message = Bytes(blob_.data() + at, length);
      at += length;
      vectors_.push_back(v);
    }
    if (at != blob_.size()) return Fail(error, fmt::format("{}: trailing bytes", path));
    return true;
  }
  const std::vector<Vector>& vectors() const { return vectors_; }

 private:
  static bool Fail(std::string* error, std::string message) {
    *error = std::move(message);
    return false;
  }
  std::vector<std::byte> blob_;
  std::vector<Vector> vectors_;
};

// Decodes a T from `body`, which must be consumed exactly, and re-encodes it.
// Returns "" when the re-encoding equals `body`, else what went wrong.
template <class T>
std::string RoundTrip(Bytes body) {
  T value{};
  xdr::XdrDecoder d(body);
  d(value);
  if (!d.ok()) return "does not decode";
  if (d.remaining() != 0) {
    return fmt::format("decode leaves {} of {} bytes unread (at offset {})", d.remaining(),
                       body.size(), body.size() - d.remaining());
  }
  OutBuffer out;
  xdr::Encode(&out, value);
  std::vector<std::byte> again = out.Flatten();
  if (again.size() == body.size() && std::memcmp(again.data(), body.data(), body.size()) == 0) {
    return "";
  }
  size_t at = 0;
  while (at < again.size() && at < body.size() && again[at] == body[at]) ++at;
  const size_t word_at = at & ~size_t{3};
  auto word = [word_at](Bytes b) {
    return word_at + 4 <= b.size() ? fmt::format("{:08x}", xdr::LoadBe32(b.data() + word_at))
                                   : std::string("end");
  };
  return fmt::format(
      "re-encoding differs: wire {} bytes, ours {} bytes, first difference at offset {} "
      "(wire word {}, ours {})",
      body.size(), again.size(), at, word(body), word(again));
}

// Procedures with no arguments or no results carry nothing after the RPC header.
std::string Void(Bytes body) {
  return body.empty() ? "" : fmt::format("{} bytes where void was expected", body.size());
}

using Check = std::string (*)(Bytes);
struct ProcChecks {
  const char* name;
  Check args;
  Check res;
};

constexpr std::array<ProcChecks, kNumProcs> kNfs3 = {{
    {"NULL", Void, Void},
    {"GETATTR", RoundTrip<GETATTR3args>, RoundTrip<GETATTR3res>},
    {"SETATTR", RoundTrip<SETATTR3args>, RoundTrip<SETATTR3res>},
    {"LOOKUP", RoundTrip<LOOKUP3args>, RoundTrip<LOOKUP3res>},
    {"ACCESS", RoundTrip<ACCESS3args>, RoundTrip<ACCESS3res>},
    {"READLINK", RoundTrip<READLINK3args>, RoundTrip<READLINK3res>},
    {"READ", RoundTrip<READ3args>, RoundTrip<READ3res>},
    {"WRITE", RoundTrip<WRITE3args>, RoundTrip<WRITE3res>},
    {"CREATE", RoundTrip<CREATE3args>, RoundTrip<CREATE3res>},
    {"MKDIR", RoundTrip<MKDIR3args>, RoundTrip<MKDIR3res>},
    {"SYMLINK", RoundTrip<SYMLINK3args>, RoundTrip<SYMLINK3res>},
    {"MKNOD", RoundTrip<MKNOD3args>, RoundTrip<MKNOD3res>},
    {"REMOVE", RoundTrip<REMOVE3args>, RoundTrip<REMOVE3res>},
    {"RMDIR", RoundTrip<RMDIR3args>, RoundTrip<RMDIR3res>},
    {"RENAME", RoundTrip<RENAME3args>, RoundTrip<RENAME3res>},
    {"LINK", RoundTrip<LINK3args>, RoundTrip<LINK3res>},
    {"READDIR", RoundTrip<READDIR3args>, RoundTrip<READDIR3res>},
    {"READDIRPLUS", RoundTrip<READDIRPLUS3args>, RoundTrip<READDIRPLUS3res>},
    {"FSSTAT", RoundTrip<FSSTAT3args>, RoundTrip<FSSTAT3res>},
    {"FSINFO", RoundTrip<FSINFO3args>, RoundTrip<FSINFO3res>},
    {"PATHCONF", RoundTrip<PATHCONF3args>, RoundTrip<PATHCONF3res>},
    {"COMMIT", RoundTrip<COMMIT3args>, RoundTrip<COMMIT3res>},
}};

// MOUNT v3, indexed by mountproc3.
constexpr std::array<ProcChecks, 6> kMount3 = {{
    {"NULL", Void, Void},
    {"MNT", RoundTrip<mount3::dirpath>, RoundTrip<mount3::mountres3>},
    {"DUMP", Void, RoundTrip<mount3::mountlist>},
    {"UMNT", RoundTrip<mount3::dirpath>, Void},
    {"UMNTALL", Void, Void},
    {"EXPORT", Void, RoundTrip<mount3::exports>},
}};

const ProcChecks* Lookup(uint32_t prog, uint32_t vers, uint32_t proc) {
  if (prog == NFS_PROGRAM && vers == NFS_V3 && proc < kNfs3.size()) return &kNfs3[proc];
  if (prog == mount3::MOUNT_PROGRAM && vers == mount3::MOUNT_V3 && proc < kMount3.size()) {
    return &kMount3[proc];
  }
  return nullptr;
}

// The RPC header must round-trip too: our client encodes calls and our server replies.
std::string CheckCallHeader(Bytes message, const Vector& v, Bytes* body) {
  xdr::XdrDecoder d(message);
  rpc::CallHeader h;
  if (rpc::DecodeCallHeader(d, &h) != rpc::CallDecode::kOk) return "DecodeCallHeader fails";
  if (h.prog != v.prog || h.vers != v.vers || h.proc != v.proc) {
    return "call header disagrees with the vector's prog/vers/proc";
  }
  Bytes header = message.first(message.size() - d.remaining());
  *body = message.subspan(header.size());
  OutBuffer out;
  xdr::XdrEncoder e(&out);
  rpc::EncodeCallHeader(e, h.xid, h.prog, h.vers, h.proc, h.cred);
  std::vector<std::byte> again = out.Flatten();
  if (!std::ranges::equal(again, header)) return "EncodeCallHeader differs from the wire header";
  return "";
}

std::string CheckReplyHeader(Bytes message, Bytes* body) {
  xdr::XdrDecoder d(message);
  rpc::ReplyHeader h;
  if (!rpc::DecodeReplyHeader(d, &h)) return "DecodeReplyHeader fails";
  // Every captured call succeeded at the RPC level; only then do results follow.
  if (!h.ok()) return "reply is not MSG_ACCEPTED/SUCCESS";
  Bytes header = message.first(message.size() - d.remaining());
  *body = message.subspan(header.size());
  OutBuffer out;
  xdr::XdrEncoder e(&out);
  rpc::EncodeAcceptedReply(e, h.xid, rpc::accept_stat::SUCCESS);
  if (!std::ranges::equal(out.Flatten(), header)) {
    return "EncodeAcceptedReply differs from the wire header";
  }
  return "";
}

// (prog, proc, kind) -> messages that round-tripped.
using Coverage = std::map<std::tuple<uint32_t, uint32_t, Kind>, int>;

struct Failures {
  int count = 0;
  std::string first;
};

// Checks every message of one file; returns one failure summary per procedure and kind
// so a wrong type reports once, not 300 times.
std::map<std::string, Failures> CheckFile(const VectorSet& set, Coverage* coverage, int* skipped) {
  std::map<std::string, Failures> failures;
  for (const Vector& v : set.vectors()) {
    const bool call = v.kind == Kind::kCall;
    std::string what;
    Bytes body;
    const ProcChecks* checks = Lookup(v.prog, v.vers, v.proc);
    std::string label =
        checks != nullptr
            ? fmt::format("{} {}", v.prog == NFS_PROGRAM ? "NFSv3" : "MOUNTv3", checks->name)
            : fmt::format("prog {} v{} proc {}", v.prog, v.vers, v.proc);
    label += call ? " call" : " reply";
    if (v.kind != Kind::kCall && v.kind != Kind::kReply) {
      what = "bad kind";
    } else {
      what = call ? CheckCallHeader(v.message, v, &body) : CheckReplyHeader(v.message, &body);
    }
    if (what.empty() && checks == nullptr) {
      // NFS_ACL (and anything else we do not speak): the RPC header was still checked.
      if (v.prog != kNfsAclProgram) what = "unexpected program";
      ++*skipped;
    } else if (what.empty()) {
      what = (call ? checks->args : checks->res)(body);
      if (what.empty()) ++(*coverage)[{v.prog, v.proc, v.kind}];
    }
    if (!what.empty()) {
      Failures& f = failures[label];
      if (f.count++ == 0) f.first = fmt::format("message #{}: {}", v.index, what);
    }
  }
  return failures;
}

class Nfs3VectorsTest : public testing::TestWithParam<VectorFile> {};

TEST_P(Nfs3VectorsTest, EveryMessageRoundTripsByteForByte) {
  const VectorFile& file = GetParam();
  VectorSet set;
  std::string error;
  ASSERT_TRUE(set.Load(fmt::format("{}/nfs3-vectors/{}", NFSX_TESTDATA_DIR, file.name), &error))
      << error;
  EXPECT_EQ(set.vectors().size(), file.expected_messages);

  Coverage coverage;
  int skipped = 0;
  for (const auto& [label, f] : CheckFile(set, &coverage, &skipped)) {
    ADD_FAILURE() << file.name << ": " << label << ": " << f.count << " failed; first " << f.first;
  }
  int checked = 0;
  for (const auto& [key, n] : coverage) checked += n;
  EXPECT_EQ(static_cast<size_t>(checked + skipped), set.vectors().size());
}

INSTANTIATE_TEST_SUITE_P(Captures, Nfs3VectorsTest, testing::ValuesIn(kFiles),
                         [](const testing::TestParamInfo<VectorFile>& param) {
                           std::string name = param.param.name;
                           name = name.substr(0, name.find('.'));
                           std::erase(name, '-');
                           return name;
                         });

// The captures were made to exercise the whole protocol; losing a procedure (a regenerated
// capture, a decoder that starts failing) should not go unnoticed.
TEST(Nfs3VectorsCoverageTest, EveryProcedureVerifiedAsCallAndReply) {
  Coverage coverage;
  int skipped = 0;
  for (const VectorFile& file : kFiles) {
    VectorSet set;
    std::string error;
    ASSERT_TRUE(set.Load(fmt::format("{}/nfs3-vectors/{}", NFSX_TESTDATA_DIR, file.name), &error))
        << error;
    CheckFile(set, &coverage, &skipped);
  }
  std::string table;
  auto expect_covered = [&](uint32_t prog, uint32_t proc, const char* name) {
    int calls = coverage[{prog, proc, Kind::kCall}];
    int replies = coverage[{prog, proc, Kind::kReply}];
    table += fmt::format("  {:<8} {:<12} calls {:4} replies {:4}\n",
                         prog == NFS_PROGRAM ? "NFSv3" : "MOUNTv3", name, calls, replies);
    EXPECT_GT(calls, 0) << name << " call never verified";
    EXPECT_GT(replies, 0) << name << " reply never verified";
  };
  for (uint32_t proc = 0; proc < kNfs3.size(); ++proc) {
    expect_covered(NFS_PROGRAM, proc, kNfs3[proc].name);
  }
  // No client sends DUMP or UMNTALL without a portmapper, so the captures have none.
  for (auto proc : {mount3::mountproc3::NULLPROC, mount3::mountproc3::MNT, mount3::mountproc3::UMNT,
                    mount3::mountproc3::EXPORT}) {
    auto p = static_cast<uint32_t>(proc);
    expect_covered(mount3::MOUNT_PROGRAM, p, kMount3[p].name);
  }
  std::cout << "Verified messages (NFS_ACL skipped: " << skipped << "):\n" << table;
}

}  // namespace
}  // namespace nfsx::nfs3
