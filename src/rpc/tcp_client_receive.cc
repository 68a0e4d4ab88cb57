// RpcClient's receive side: who reads the socket (the reader thread or a
// synchronous caller), reassembling replies and handing them to their calls.
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <utility>

#include "base/interruption.h"
#include "base/logging.h"
#include "rpc/tcp_client.h"

namespace nfsx::rpc {

using Clock = std::chrono::steady_clock;

void RpcClient::Drain(int fd) {
  uint64_t v;
  while (::read(fd, &v, sizeof(v)) > 0) {
  }
}

void RpcClient::Wake(int fd) {
  uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(fd, &one, sizeof(one));
}

bool RpcClient::HandleRecord(std::span<std::byte> record, std::optional<size_t> landed,
                             bool reader_thread) {
  xdr::XdrDecoder d(record);
  RpcReply reply;
  reply.landed = landed;
  if (landed) {
    counters_.landed_bytes.fetch_add(*landed, std::memory_order_relaxed);
  }
  if (!DecodeReplyHeader(d, &reply.header)) {
    counters_.bad_replies.fetch_add(1);
    log::Warn("rpc client: malformed reply from {}:{}", host_, port_);
    return true;
  }
  // Copied before the socket may change hands: `record` lives in records_.
  size_t offset = static_cast<size_t>(d.position() - record.data());
  reply.record = std::make_shared<const PooledBytes>(record);
  reply.results = std::span<const std::byte>(reply.record->data() + offset, record.size() - offset);
  Callback cb;
  bool inline_cb;
  bool it_was_sync;
  bool still_receiver = true;
  {
    std::lock_guard lock(mu_);
    auto it = pending_.find(reply.header.xid);
    if (it == pending_.end()) {
      // A late reply to a call answered already (after a retransmission): ignore.
      counters_.bad_replies.fetch_add(1);
      return true;
    }
    cb = std::move(it->second.cb);
    it_was_sync = it->second.any_thread;
    inline_cb = reader_thread || it_was_sync;
    pending_.erase(it);
    if (not_responding_) SetSilent(false);
    // The last awaited reply, a CallSync's: the socket is free before its caller
    // wakes, so that caller's next call receives its own reply. After a Call()'s
    // the reader thread keeps the socket: streams of Call()s never hand it back
    // and forth.
    if (reader_thread && it_was_sync && pending_.empty() && send_queue_.empty()) {
      receiver_ = Receiver::kNobody;
      records_left_ = true;  // for the next receiver, before it waits on the socket
      still_receiver = false;
    }
  }
  if (inline_cb) {
    if (!reader_thread) counters_.replies_to_callers.fetch_add(1, std::memory_order_relaxed);
    cb(std::move(reply));
    return still_receiver;
  }
  // Callbacks of Call() may do real work and take the caller's locks: they run
  // on the reader thread, as promised, never on a caller that happens to receive.
  // The caller then gives the socket back: Call()s are in flight, the reader
  // thread's to receive.
  std::lock_guard lock(mu_);
  if (deferred_.empty()) Wake(wake_fd_);  // else a wake is on its way already
  deferred_.emplace_back(std::move(cb), std::move(reply));
  return false;
}

RpcClient::Received RpcClient::ReceiveAvailable(int fd, bool reader_thread) {
  bool read_more = true;
  for (;;) {
    // Records buffered already come first: a receiver before us may have
    // stopped between two of them.
    std::span<std::byte> record;
    RecordReader::Status st;
    while ((st = records_.Next(&record)) == RecordReader::Status::kRecord) {
      landing_checked_ = false;
      landing_ = nullptr;
      if (!HandleRecord(record, records_.last_landed(), reader_thread)) return Received::kStopped;
    }
    if (st == RecordReader::Status::kTooLarge) {
      counters_.bad_replies.fetch_add(1);
      log::Warn("rpc client: reply from {}:{} exceeds {} bytes", host_, port_,
                records_.max_record());
      return Received::kBroken;
    }
    // A reply still arriving whose header is here: its data may go straight
    // to its call's landing, from the next read on.
    MaybeLand();
    if (!read_more) return Received::kAll;
    std::span<std::byte> space = records_.PrepareWrite();
    bool into_landing = records_.IntoDestination();
    if (into_landing && !HoldLanding()) {
      // Its call is gone: the rest of its data is read and dropped.
      records_.StopFillingDestination();
      space = records_.PrepareWrite();
      into_landing = false;
    }
    ssize_t n = ::read(fd, space.data(), space.size());
    if (into_landing) ReleaseLanding();
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return Received::kBroken;
    if (n < 0) return Received::kAll;
    records_.CommitWrite(static_cast<size_t>(n));
    read_more = static_cast<size_t>(n) == space.size();
  }
}

void RpcClient::MaybeLand() {
  RecordReader::Incomplete rec;
  if (landing_checked_ || !records_.CurrentIncomplete(&rec)) return;
  if (rec.head.size() < 4) return;
  uint32_t xid = xdr::LoadBe32(rec.head.data());
  const ReplyLanding* landing = nullptr;
  {
    std::lock_guard lock(mu_);
    auto it = pending_.find(xid);
    if (it != pending_.end()) landing = it->second.landing;
  }
  if (!landing) {
    landing_checked_ = true;
    return;
  }
  // The reply header and the results up to the bulk length: a few hundred bytes
  // at most (a verifier holds up to 400). Until they are here, wait for more.
  constexpr size_t kMaxHead = 1024;
  bool more_may_come = rec.head.size() < std::min(kMaxHead, rec.length);
  xdr::XdrDecoder d(rec.head);
  ReplyHeader header;
  if (!DecodeReplyHeader(d, &header)) {
    landing_checked_ = !more_may_come;
    return;
  }
  if (!header.ok()) {
    landing_checked_ = true;
    return;
  }
  size_t results = static_cast<size_t>(d.position() - rec.head.data());
  std::ptrdiff_t at = landing->locate(rec.head.subspan(results));
  if (at == ReplyLanding::kNeedMore) {
    landing_checked_ = !more_may_come;
    return;
  }
  landing_checked_ = true;
  if (at < 0) return;
  size_t len_word = results + static_cast<size_t>(at);
  if (len_word + 4 > rec.head.size()) return;  // a locator that read past what it was given
  uint64_t len = xdr::LoadBe32(rec.head.data() + len_word);
  uint64_t padded = (len + 3) & ~uint64_t{3};
  // Bulk bytes that overrun the record: the decoder reports the reply malformed.
  if (len_word + 4 + padded > rec.length) return;
  // The reply comes out with an empty opaque; how much landed goes with it.
  xdr::StoreBe32(rec.head.data() + len_word, 0);
  std::span<std::byte> dest = landing->dest.first(std::min<size_t>(landing->dest.size(), len));
  landing_xid_ = xid;
  landing_ = landing;
  bool held = HoldLanding();
  records_.Divert(len_word + 4, static_cast<size_t>(padded), held ? dest : dest.first(0));
  if (held) {
    ReleaseLanding();
    counters_.landed_replies.fetch_add(1, std::memory_order_relaxed);
  }
}

bool RpcClient::HoldLanding() {
  std::lock_guard lock(mu_);
  auto it = pending_.find(landing_xid_);
  if (it == pending_.end() || it->second.landing != landing_) return false;
  landing_in_use_ = landing_;
  return true;
}

void RpcClient::ReleaseLanding() {
  std::lock_guard lock(mu_);
  landing_in_use_ = nullptr;
  landing_cv_.notify_all();
}

void RpcClient::ResetRecords() {
  records_ = RecordReader(options_.max_record);
  landing_checked_ = false;
  landing_ = nullptr;
}

void RpcClient::CloseBrokenLocked() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void RpcClient::RunDeferred() {
  std::vector<std::pair<Callback, RpcReply>> answered;
  {
    std::lock_guard lock(mu_);
    if (deferred_.empty()) return;
    answered.swap(deferred_);
  }
  for (auto& [cb, reply] : answered) cb(std::move(reply));
}

void RpcClient::ReceiveAsCaller(const std::function<bool()>& done) {
  int fd;
  {
    std::lock_guard lock(mu_);
    fd = fd_;  // only the receiver closes it: it stays ours until we give the socket back
  }
  Received got = Received::kAll;
  if (std::exchange(records_left_, false)) got = ReceiveAvailable(fd, false);
  while (got == Received::kAll && !done() && !InterruptScope::Interrupted()) {
    pollfd fds[2] = {{fd, POLLIN, 0}, {caller_wake_fd_, POLLIN, 0}};
    {
      std::lock_guard lock(mu_);
      if (shutdown_) break;
      if (!send_queue_.empty()) fds[0].events |= POLLOUT;
    }
    // The wake eventfd ends the wait for what the socket cannot tell: the call
    // ended elsewhere, or the send queue needs POLLOUT. Interruptions are polled.
    int rc = poll(fds, 2, InterruptScope::Active() ? 50 : -1);
    if (rc < 0 && errno != EINTR) break;
    if (rc <= 0) continue;
    if (fds[1].revents & POLLIN) Drain(caller_wake_fd_);
    if (fds[0].revents & POLLOUT) {
      std::lock_guard lock(mu_);
      FlushLocked();
    }
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) got = ReceiveAvailable(fd, false);
  }
  std::lock_guard lock(mu_);
  // The reader thread fails the calls of a broken connection, or reconnects;
  // Shutdown() closes the socket itself.
  if (got == Received::kBroken && !shutdown_) CloseBrokenLocked();
  if (got == Received::kStopped) records_left_ = true;
  receiver_ = Receiver::kNobody;
  // Calls still waiting (or a socket to reopen): the reader thread takes over.
  if (!pending_.empty() || !send_queue_.empty() || fd_ < 0 || shutdown_) Wake(wake_fd_);
  receiver_cv_.notify_all();
}

void RpcClient::ReaderLoop() {
  auto last_check = Clock::now();
  for (;;) {
    RunDeferred();
    pollfd fds[2];
    int nfds = 1;
    fds[0] = {wake_fd_, POLLIN, 0};
    bool records_first = false;
    {
      std::unique_lock lock(mu_);
      if (shutdown_) return;
      if (fd_ < 0 && !options_.reconnect && !pending_.empty()) {
        // Broken, and not to be reopened: every call fails, here and not on
        // whichever caller was receiving.
        std::vector<Callback> failed;
        FailAllLocked(ECONNRESET, &failed);
        lock.unlock();
        for (auto& cb : failed) cb(Fail(ECONNRESET));
        continue;
      }
      if (receiver_ != Receiver::kCaller && fd_ < 0) {
        receiver_ = Receiver::kReaderThread;
        // Disconnected: keep trying while calls wait; they time out meanwhile.
        if (!ReconnectLocked()) {
          // A server that is down is tried less and less often, up to every 5 s;
          // Shutdown() wakes the wait.
          auto backoff = reconnect_backoff_;
          reconnect_backoff_ = std::min(reconnect_backoff_ * 2, std::chrono::milliseconds(5000));
          lock.unlock();
          pollfd wake{wake_fd_, POLLIN, 0};
          if (poll(&wake, 1, static_cast<int>(backoff.count())) > 0) Drain(wake_fd_);
          CheckTimeouts();
          continue;
        }
        reconnect_backoff_ = std::chrono::milliseconds(100);
        ResetRecords();
      }
      if (receiver_ == Receiver::kNobody && (!pending_.empty() || !send_queue_.empty())) {
        receiver_ = Receiver::kReaderThread;
      }
      if (receiver_ == Receiver::kReaderThread) {
        fds[1] = {fd_, static_cast<short>(POLLIN | (send_queue_.empty() ? 0 : POLLOUT)), 0};
        nfds = 2;
        // Replies a caller left in records_ come first: the socket may have nothing more.
        records_first = std::exchange(records_left_, false);
      } else if (receiver_ == Receiver::kNobody && fd_ >= 0) {
        // Nobody reads, but a server closing the idle connection is noticed (and
        // the connection reopened) now rather than by the next call.
        fds[1] = {fd_, POLLRDHUP, 0};
        nfds = 2;
      }
    }
    int rc = records_first ? 0 : poll(fds, nfds, 200);
    if (rc < 0 && errno != EINTR) break;
    if (fds[0].revents & POLLIN) Drain(wake_fd_);
    if (nfds == 2 && fds[1].events == POLLRDHUP) {
      std::lock_guard lock(mu_);
      // Still nobody's and still ours: read it, to see the end of the stream.
      bool closed = fds[1].revents & (POLLRDHUP | POLLHUP | POLLERR);
      if (closed && receiver_ == Receiver::kNobody && fd_ == fds[1].fd) {
        receiver_ = Receiver::kReaderThread;
      }
      continue;
    }
    if (nfds == 2 && (fds[1].revents & POLLOUT)) {
      std::lock_guard lock(mu_);
      FlushLocked();
    }
    bool readable = records_first || (nfds == 2 && (fds[1].revents & (POLLIN | POLLHUP | POLLERR)));
    if (readable && ReceiveAvailable(fds[1].fd, true) == Received::kBroken) {
      std::lock_guard lock(mu_);
      CloseBrokenLocked();
    }
    auto now = Clock::now();
    if (now - last_check > std::chrono::milliseconds(100)) {
      last_check = now;
      CheckTimeouts();
    }
  }
}

}  // namespace nfsx::rpc
