// READ data read from the socket straight into the caller's memory (a
// ReplyLanding), against a scripted server that decides what bytes go out
// when: replies out of order and in pieces, shorter and longer than asked,
// lying about their length, and arriving after their call gave up.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "base/interruption.h"
#include "client/typed_call.h"
#include "proto/nfs3_types.h"
#include "proto/nfs3_xdr.h"
#include "rpc/record_marking.h"
#include "rpc/test_util.h"

namespace nfsx::client {
namespace {

using namespace nfs3;
using rpc::testing::WaitFor;

// Takes one connection; the test reads the xids of the calls that came and
// writes whatever bytes it wants back.
class ScriptedServer {
 public:
  ScriptedServer() {
    listen_ = rpc::testing::LoopbackListener(&port_, 1);
    thread_ = std::thread([this] { Serve(); });
  }
  ~ScriptedServer() {
    shutdown(listen_, SHUT_RDWR);
    close(listen_);
    int c = conn_.load();
    if (c >= 0) shutdown(c, SHUT_RDWR);
    thread_.join();
    if (c >= 0) close(c);
  }
  uint16_t port() const { return port_; }

  // The xids of the next `n` calls, in the order they came.
  std::vector<uint32_t> Calls(size_t n) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return xids_.size() >= n || closed_; });
    std::vector<uint32_t> out;
    while (out.size() < n && !xids_.empty()) {
      out.push_back(xids_.front());
      xids_.pop_front();
    }
    return out;
  }
  void Write(std::span<const std::byte> bytes) {
    size_t done = 0;
    while (done < bytes.size()) {
      ssize_t n = send(conn_.load(), bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
      ASSERT_GT(n, 0);
      done += static_cast<size_t>(n);
    }
  }

 private:
  void Serve() {
    int c = accept(listen_, nullptr, nullptr);
    if (c < 0) return;
    conn_ = c;
    rpc::RecordReader reader(1 << 20);
    for (;;) {
      auto space = reader.PrepareWrite();
      ssize_t n = read(c, space.data(), space.size());
      if (n <= 0) break;
      reader.CommitWrite(static_cast<size_t>(n));
      std::span<std::byte> rec;
      while (reader.Next(&rec) == rpc::RecordReader::Status::kRecord) {
        std::lock_guard lock(mu_);
        xids_.push_back(xdr::LoadBe32(rec.data()));
        cv_.notify_all();
      }
    }
    std::lock_guard lock(mu_);
    closed_ = true;
    cv_.notify_all();
  }
  int listen_ = -1;
  std::atomic<int> conn_{-1};
  uint16_t port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<uint32_t> xids_;
  bool closed_ = false;
};

// The byte at `offset` of the file the tests read.
std::byte Pattern(uint64_t offset) { return static_cast<std::byte>((offset * 131 + 7) % 251); }

std::vector<std::byte> FileBytes(uint64_t offset, size_t n) {
  std::vector<std::byte> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = Pattern(offset + i);
  return v;
}

// A READ reply record (mark included) carrying `data`, with attributes.
std::vector<std::byte> ReadReply(uint32_t xid, std::span<const std::byte> data, bool eof = false) {
  OutBuffer out;
  rpc::BeginRecord(&out);
  xdr::XdrEncoder e(&out);
  rpc::EncodeAcceptedReply(e, xid, rpc::accept_stat::SUCCESS);
  READ3res res;
  res.status = NFS3_OK;
  res.resok.file_attributes.emplace();
  res.resok.file_attributes->size = 1 << 20;
  res.resok.count = static_cast<uint32_t>(data.size());
  res.resok.eof = eof;
  res.resok.data.bytes = data;
  e(res);
  rpc::EndRecord(&out);
  return out.Flatten();
}

std::unique_ptr<rpc::RpcClient> Connect(uint16_t port, int timeout_ms = 600000) {
  rpc::RpcClientOptions o;
  o.reconnect = false;
  o.timeout = std::chrono::milliseconds(timeout_ms);
  o.max_retransmits = 0;
  auto c = rpc::RpcClient::Connect("127.0.0.1", port, o);
  EXPECT_TRUE(c.has_value());
  return std::move(*c);
}

// One READ sent with Call(), landing in `dest`; the result is collected.
struct AsyncRead {
  std::span<std::byte> dest;
  rpc::ReplyLanding landing;
  std::mutex mu;
  bool done = false;
  Result<READ3res> result = Fail(EIO);

  AsyncRead(rpc::RpcClient& c, uint64_t offset, std::span<std::byte> d)
      : dest(d), landing(ReadLanding(d)) {
    c.Call(
        NFS_PROGRAM, NFS_V3, static_cast<uint32_t>(nfsproc3::READ), {},
        [&](xdr::XdrEncoder& e) {
          e(READ3args{nfs_fh3{}, offset, static_cast<uint32_t>(d.size())});
        },
        [this](Result<rpc::RpcReply> reply) {
          auto res = DecodeReply<READ3res>(reply);
          if (res) PlaceReadData(*res, *reply, dest);
          std::lock_guard lock(mu);
          result = std::move(res);
          done = true;
        },
        &landing);
  }
  bool Done() {
    std::lock_guard lock(mu);
    return done;
  }
};

constexpr size_t kChunk = 64 * 1024;
// Bytes of a reply's first piece: the header and a little data.
constexpr size_t kFirstPiece = 1200;

// Replies in the reverse order of their calls, each cut in two around the
// moment the client sees its header: every one lands in its own slice of one
// buffer, with the tail of one reply and the head of the next in one write.
TEST(ReadLandingTest, RepliesOutOfOrderAndInPiecesLandInTheirOwnSlices) {
  ScriptedServer server;
  auto client = Connect(server.port());
  constexpr int kCalls = 6;
  std::vector<std::byte> buffer(kCalls * kChunk, std::byte{0});
  std::vector<std::unique_ptr<AsyncRead>> reads;
  for (int i = 0; i < kCalls; ++i) {
    reads.push_back(std::make_unique<AsyncRead>(*client, i * kChunk,
                                                std::span(buffer).subspan(i * kChunk, kChunk)));
  }
  auto xids = server.Calls(kCalls);
  ASSERT_EQ(xids.size(), size_t{kCalls});
  std::vector<std::byte> carry;  // the rest of the previous reply, sent with the next head
  for (int k = 0; k < kCalls; ++k) {
    int i = kCalls - 1 - k;
    auto data = FileBytes(i * kChunk, kChunk);
    auto reply = ReadReply(xids[i], data);
    std::vector<std::byte> out = carry;
    out.insert(out.end(), reply.begin(), reply.begin() + kFirstPiece);
    server.Write(out);
    carry.assign(reply.begin() + kFirstPiece, reply.end());
    // The client has seen this reply's header and diverted its data.
    ASSERT_TRUE(WaitFor([&] { return client->counters().landed_replies.load() == size_t(k + 1); }))
        << k;
  }
  server.Write(carry);
  ASSERT_TRUE(WaitFor([&] {
    for (auto& r : reads) {
      if (!r->Done()) return false;
    }
    return true;
  }));
  for (int i = 0; i < kCalls; ++i) {
    auto& r = *reads[i];
    ASSERT_TRUE(r.result.has_value()) << i;
    ASSERT_EQ(r.result->status, NFS3_OK);
    EXPECT_EQ(r.result->resok.data.bytes.data(), buffer.data() + i * kChunk);
    EXPECT_EQ(r.result->resok.data.bytes.size(), kChunk);
    ASSERT_TRUE(r.result->resok.file_attributes.has_value());
    EXPECT_EQ(r.result->resok.file_attributes->size, 1u << 20) << "the results decode";
  }
  EXPECT_EQ(buffer, FileBytes(0, buffer.size()));
  EXPECT_EQ(client->counters().landed_bytes.load(), kCalls * kChunk);
  EXPECT_EQ(client->counters().bad_replies.load(), 0u);
}

// A reply shorter than asked fills only its front; one longer than asked
// (which a server must not send) fills the slice and not a byte beyond, and
// the reply after it on the connection is read intact.
TEST(ReadLandingTest, ShorterAndLongerRepliesStayInsideTheirSlice) {
  ScriptedServer server;
  auto client = Connect(server.port());
  constexpr size_t kGuard = 4096;
  constexpr std::byte kUntouched{0xEE};
  std::vector<std::byte> buffer(3 * (kChunk + kGuard), kUntouched);
  auto slice = [&](int i) { return std::span(buffer).subspan(i * (kChunk + kGuard), kChunk); };
  AsyncRead shorter(*client, 0, slice(0));
  AsyncRead longer(*client, 0, slice(1));
  AsyncRead after(*client, 0, slice(2));
  auto xids = server.Calls(3);
  ASSERT_EQ(xids.size(), 3u);
  const std::vector<std::pair<size_t, bool>> sizes = {
      {10000, true}, {kChunk + 5000, false}, {kChunk, false}};
  for (int i = 0; i < 3; ++i) {
    auto data = FileBytes(0, sizes[i].first);
    auto reply = ReadReply(xids[i], data, sizes[i].second);
    server.Write(std::span(reply).first(kFirstPiece));
    ASSERT_TRUE(WaitFor([&] { return client->counters().landed_replies.load() == size_t(i + 1); }));
    server.Write(std::span(reply).subspan(kFirstPiece));
  }
  ASSERT_TRUE(WaitFor([&] { return shorter.Done() && longer.Done() && after.Done(); }));
  ASSERT_TRUE(shorter.result.has_value());
  EXPECT_EQ(shorter.result->resok.data.bytes.size(), 10000u);
  EXPECT_TRUE(shorter.result->resok.eof);
  ASSERT_TRUE(longer.result.has_value());
  EXPECT_EQ(longer.result->resok.data.bytes.size(), kChunk);
  ASSERT_TRUE(after.result.has_value());
  EXPECT_EQ(after.result->resok.data.bytes.size(), kChunk);
  auto expect = FileBytes(0, kChunk);
  EXPECT_TRUE(std::equal(expect.begin(), expect.begin() + 10000, slice(0).begin()));
  for (size_t j = 10000; j < kChunk + kGuard; ++j) {
    ASSERT_EQ(buffer[j], kUntouched) << "byte " << j << " past a short reply's data";
  }
  EXPECT_TRUE(std::equal(expect.begin(), expect.end(), slice(1).begin()));
  for (size_t j = 0; j < kGuard; ++j) {
    ASSERT_EQ(buffer[2 * kChunk + kGuard + j], kUntouched) << "byte " << j << " past the slice";
  }
  EXPECT_TRUE(std::equal(expect.begin(), expect.end(), slice(2).begin()));
}

// A length word claiming more data than the record holds is not landed; the
// decoder calls the reply malformed.
TEST(ReadLandingTest, AReplyClaimingMoreDataThanItsRecordHoldsIsMalformed) {
  ScriptedServer server;
  auto client = Connect(server.port());
  std::vector<std::byte> buffer(kChunk, std::byte{0});
  AsyncRead read(*client, 0, buffer);
  auto xids = server.Calls(1);
  ASSERT_EQ(xids.size(), 1u);
  auto data = FileBytes(0, kChunk);
  auto reply = ReadReply(xids[0], data);
  // The record mark says 100 bytes fewer than the reply has; cut them off.
  uint32_t mark = xdr::LoadBe32(reply.data()) - 100;
  xdr::StoreBe32(reply.data(), mark);
  reply.resize(reply.size() - 100);
  server.Write(std::span(reply).first(kFirstPiece));
  server.Write(std::span(reply).subspan(kFirstPiece));
  ASSERT_TRUE(WaitFor([&] { return read.Done(); }));
  ASSERT_FALSE(read.result.has_value());
  EXPECT_EQ(read.result.error().code, EBADMSG);
  EXPECT_EQ(client->counters().landed_replies.load(), 0u);
}

bool LandingStarted(void* client) {
  return static_cast<rpc::RpcClient*>(client)->counters().landed_replies.load() > 0;
}

// A call that gave up (interrupted) while its reply's data was landing: the
// caller frees its buffer, the rest of the data is read and dropped (ASan
// sees any write into the freed buffer), and the connection carries on.
TEST(ReadLandingTest, DataOfACallThatGaveUpMidReplyIsDropped) {
  ScriptedServer server;
  auto client = Connect(server.port());
  auto buffer = std::make_unique<std::byte[]>(kChunk);
  rpc::ReplyLanding landing = ReadLanding({buffer.get(), kChunk});
  std::thread server_side([&] {
    auto xids = server.Calls(1);
    ASSERT_EQ(xids.size(), 1u);
    auto reply = ReadReply(xids[0], FileBytes(0, kChunk));
    server.Write(std::span(reply).first(kFirstPiece));
    // The rest comes only after the call has given up and its buffer is gone.
    auto next = server.Calls(1);
    ASSERT_EQ(next.size(), 1u);
    server.Write(std::span(reply).subspan(kFirstPiece));
    auto again = ReadReply(next[0], FileBytes(kChunk, 100), true);
    server.Write(again);
  });
  // The caller receives its own reply (nothing else is in flight), sees the
  // header, lands the first bytes, and is then interrupted.
  Result<rpc::RpcReply> r = Fail(EIO);
  {
    InterruptScope scope(&LandingStarted, client.get());
    r = client->CallSync(
        NFS_PROGRAM, NFS_V3, static_cast<uint32_t>(nfsproc3::READ), {},
        [](xdr::XdrEncoder& e) {
          e(READ3args{nfs_fh3{}, 0, static_cast<uint32_t>(kChunk)});
        },
        &landing);
  }
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, EINTR);
  EXPECT_EQ(client->counters().landed_replies.load(), 1u);
  buffer.reset();
  std::vector<std::byte> second(kChunk);
  rpc::ReplyLanding second_landing = ReadLanding(second);
  auto r2 = client->CallSync(
      NFS_PROGRAM, NFS_V3, static_cast<uint32_t>(nfsproc3::READ), {},
      [](xdr::XdrEncoder& e) {
        e(READ3args{nfs_fh3{}, kChunk, static_cast<uint32_t>(kChunk)});
      },
      &second_landing);
  server_side.join();
  ASSERT_TRUE(r2.has_value()) << r2.error().code;
  auto res = DecodeReply<READ3res>(r2);
  ASSERT_TRUE(res.has_value());
  PlaceReadData(*res, *r2, second);
  ASSERT_EQ(res->resok.data.bytes.size(), 100u);
  EXPECT_TRUE(std::equal(res->resok.data.bytes.begin(), res->resok.data.bytes.end(),
                         FileBytes(kChunk, 100).begin()));
  EXPECT_EQ(client->counters().bad_replies.load(), 1u) << "the late reply was ignored";
}

struct Landings {
  rpc::RpcClient* client;
  uint64_t before;
};
bool LandingStartedSince(void* arg) {
  auto* l = static_cast<Landings*>(arg);
  return l->client->counters().landed_replies.load() > l->before;
}

// The reader thread lands a reply's data (another call keeps it the receiver)
// in many small reads while the call's caller gives up on another thread and
// frees the buffer: no byte is written there after the call returns (ASan,
// TSan). (A cancel landing inside one of those reads, which it must wait out,
// is too narrow a window for this test to hit reliably.)
TEST(ReadLandingTest, ACallerGivingUpWhileTheReaderThreadLandsItsDataIsSafe) {
  ScriptedServer server;
  rpc::RpcClientOptions o;
  o.reconnect = false;
  o.timeout = std::chrono::minutes(10);
  o.max_record = 64 << 20;
  auto connected = rpc::RpcClient::Connect("127.0.0.1", server.port(), o);
  ASSERT_TRUE(connected.has_value());
  auto client = std::move(*connected);
  // Never answered until the end: the reader thread receives throughout.
  std::atomic<bool> blocker_done{false};
  client->Call(NFS_PROGRAM, NFS_V3, 0, {}, nullptr,
               [&](Result<rpc::RpcReply>) { blocker_done = true; });
  auto blocker = server.Calls(1);
  ASSERT_EQ(blocker.size(), 1u);
  constexpr size_t kBig = 1 << 20;
  constexpr int kRounds = 4;
  for (int round = 0; round < kRounds; ++round) {
    std::atomic<bool> caller_returned{false};
    std::thread server_side([&] {
      auto xids = server.Calls(1);
      ASSERT_EQ(xids.size(), 1u);
      auto reply = ReadReply(xids[0], FileBytes(0, kBig));
      size_t at = kFirstPiece;
      server.Write(std::span(reply).first(at));
      // Small pieces, many reads into the landing, until the caller has gone;
      // then the rest in one go.
      constexpr size_t kPiece = 256;
      while (!caller_returned.load() && at + kPiece < reply.size() - 1000) {
        server.Write(std::span(reply).subspan(at, kPiece));
        at += kPiece;
      }
      while (!caller_returned.load()) std::this_thread::yield();
      server.Write(std::span(reply).subspan(at));
    });
    auto buffer = std::make_unique<std::byte[]>(kBig);
    rpc::ReplyLanding landing = ReadLanding({buffer.get(), kBig});
    Landings started{client.get(), client->counters().landed_replies.load()};
    Result<rpc::RpcReply> r = Fail(EIO);
    {
      InterruptScope scope(&LandingStartedSince, &started);
      r = client->CallSync(
          NFS_PROGRAM, NFS_V3, static_cast<uint32_t>(nfsproc3::READ), {},
          [](xdr::XdrEncoder& e) {
            e(READ3args{nfs_fh3{}, 0, static_cast<uint32_t>(kBig)});
          },
          &landing);
    }
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().code, EINTR);
    buffer.reset();
    caller_returned = true;
    server_side.join();
  }
  EXPECT_EQ(client->counters().replies_to_callers.load(), 0u) << "the reader thread received";
  EXPECT_EQ(client->counters().landed_replies.load(), size_t{kRounds});
  auto blocker_reply = ReadReply(blocker[0], {});
  server.Write(blocker_reply);
  ASSERT_TRUE(WaitFor([&] { return blocker_done.load(); }));
}

}  // namespace
}  // namespace nfsx::client
