#include "rpc/tcp_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <deque>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "base/atomic_max.h"
#include "base/buffer_pool.h"
#include "base/logging.h"
#include "rpc/record_marking.h"
#include "rpc/send_no_signal.h"

namespace nfsx::rpc {
namespace {

using Clock = std::chrono::steady_clock;

// What a connection quiet for a second keeps of its receive buffer (a call of up to
// this size needs no allocation).
constexpr size_t kQuietReceiveBuffer = 64u << 10;

// What a connection keeps between calls while nobody waits for receive memory: room for
// a 1 MiB WRITE (the wsize Linux clients use) with its RPC and NFS headers, so that a
// client writing 1 MiB at a time does not get a fresh buffer, and its page faults, for
// every call.
constexpr size_t kKeptReceiveBuffer = (1u << 20) + (64u << 10);

// What a receive buffer of `capacity` bytes takes of the server's receive budget: every
// connection has its base free, so calls of up to that size are never held for it.
size_t ReceiveCharge(size_t capacity) {
  return capacity > kQuietReceiveBuffer ? capacity - kQuietReceiveBuffer : 0;
}

// A record of max_record bytes may need up to twice that and a read more (a buffer
// doubles as it grows), so a smaller budget could never let it in.
size_t ReceiveLimit(const TcpServerOptions& o) {
  return o.max_receive_memory == 0
             ? 0
             : std::max(o.max_receive_memory, 2 * o.max_record + (256u << 10));
}

constexpr const char* kStalled = "stalled in the middle of a record";
constexpr const char* kNotReading = "not reading its replies";
constexpr const char* kSlowRecord =
    "sending a call too slowly while others wait for receive memory";
constexpr const char* kWaitedReceive = "waited too long for receive memory with part of a call";

// Every fd in an epoll set points at one of these.
struct EpollItem {
  virtual ~EpollItem() = default;
  virtual void OnEvent(uint32_t events) = 0;
};

Peer PeerOf(int fd, const sockaddr_storage& ss, socklen_t len) {
  Peer p;
  p.addr = ss;
  p.addr_len = len;
  char host[NI_MAXHOST] = "?";
  char serv[NI_MAXSERV] = "0";
  getnameinfo(reinterpret_cast<const sockaddr*>(&ss), len, host, sizeof(host), serv, sizeof(serv),
              NI_NUMERICHOST | NI_NUMERICSERV);
  p.host = host;
  p.port = static_cast<uint16_t>(std::atoi(serv));
  (void)fd;
  return p;
}

}  // namespace

class TcpServer::Connection : public EpollItem,
                              public std::enable_shared_from_this<TcpServer::Connection> {
 public:
  Connection(IoThread* thread, int fd, Peer peer, size_t max_record)
      : thread_(thread), fd_(fd), peer_(std::move(peer)), reader_(max_record) {
    last_activity_ = last_progress_ = Clock::now();
  }
  ~Connection() override {
    if (fd_ >= 0) ::close(fd_);
  }

  void OnEvent(uint32_t events) override;
  // Runs the records held back while the replies were over the caps (I/O thread).
  void RunHeld();
  // Adds the socket to its I/O thread's epoll set (I/O thread).
  void Register();
  // Queues a finished reply (any thread) and writes what the socket takes.
  void Send(OutBuffer reply);
  void Close(const char* why);
  bool Idle(Clock::time_point now, const TcpServerOptions& o, const char** why) const;
  // Frees a large receive buffer once the connection has been quiet for a while: it is
  // kept between calls for a client that sends large ones, but thousands of idle
  // connections must not each keep a megabyte (I/O thread).
  void ShrinkIfQuiet(Clock::time_point now);

  int fd() const { return fd_; }
  const Peer& peer() const { return peer_; }

 private:
  void ReadAndDispatch();
  // Runs the complete records already read while the connection's replies stay
  // under its caps (counting `*pending` bytes of replies not yet queued). Stops
  // when they do not, leaving the rest buffered (held_). False: a record too large.
  bool DispatchBuffered(std::vector<OutBuffer>* inline_replies, size_t* pending);
  void HandleRecord(std::span<std::byte> record, std::vector<OutBuffer>* inline_replies);
  // REQUIRES: out_mu_. Accounts `n` more queued reply bytes.
  void QueuedLocked(size_t n);
  // REQUIRES: out_mu_. Queues replies run inline, already counted in the server's
  // budget (or gives their bytes back if the connection closed meanwhile).
  void QueueInlineLocked(std::vector<OutBuffer>* replies);
  // REQUIRES: out_mu_ held.
  void FlushLocked();
  void UpdateInterestLocked();
  bool ShouldPauseLocked() const;
  // Brings the server's count of receive-buffer bytes and its receive budget in line
  // with reader_ (I/O thread).
  void CountReceiveBuffer();
  // Takes from the receive budget what the next read's buffer needs, or pauses reading
  // until it has room. False: paused (I/O thread).
  bool ReserveReceiveBuffer();

  IoThread* thread_;
  int fd_;
  Peer peer_;
  RecordReader reader_;         // I/O thread only
  size_t receive_counted_ = 0;  // reader_'s capacity as counted in the server's counters
  size_t receive_charged_ = 0;  // taken from the server's receive budget (I/O thread)
  // The call partly received began arriving then: a slow one is closed while others wait
  // for receive memory (I/O thread).
  Clock::time_point record_since_;
  uint64_t records_read_ = 0;             // I/O thread
  Clock::time_point receive_wait_since_;  // I/O thread
  // Reads paused until the receive budget has room: written on the I/O thread under
  // out_mu_, read by UpdateInterestLocked under it.
  bool waiting_receive_memory_ = false;
  std::atomic<size_t> receive_wait_need_{0};  // registered with the budget for this; 0: none
  bool receive_closed_ = false;               // closed: reader_ counts for nothing (I/O thread)
  Clock::time_point last_activity_;
  Clock::time_point last_progress_;

  mutable std::mutex out_mu_;
  std::deque<OutBuffer> out_queue_;  // GUARDED_BY(out_mu_)
  size_t out_offset_ = 0;            // bytes of the front buffer already written
  // When the client last took reply bytes, or the queue last went from empty to not.
  Clock::time_point last_sent_;  // GUARDED_BY(out_mu_)
  size_t out_bytes_ = 0;         // queued bytes not yet written
  size_t in_flight_ = 0;         // offloaded calls not yet answered
  size_t reserved_bytes_ = 0;    // the most the replies of those calls may take
  // Complete records are buffered, not run: the replies were over the caps. The I/O
  // thread runs them (IoThread::Resume) once the replies drain.
  bool held_ = false;             // GUARDED_BY(out_mu_)
  bool held_for_memory_ = false;  // GUARDED_BY(out_mu_): held_ for the shared budget alone
  std::atomic<bool> waiting_for_memory_{false};  // registered with the budget
  bool resume_posted_ = false;                   // GUARDED_BY(out_mu_)
  bool want_out_ = false;                        // EPOLLOUT armed
  bool read_paused_ = false;
  bool closed_ = false;
  uint32_t interest_ = 0;
};

class TcpServer::IoThread : public EpollItem {
 public:
  explicit IoThread(TcpServer* server) : server_(server) {
    epfd_ = epoll_create1(EPOLL_CLOEXEC);
    wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    timer_fd_ = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    itimerspec its{{1, 0}, {1, 0}};
    timerfd_settime(timer_fd_, 0, &its, nullptr);
    Add(wake_fd_, this, EPOLLIN);
    Add(timer_fd_, &timer_item_, EPOLLIN);
  }
  ~IoThread() override {
    ::close(epfd_);
    ::close(wake_fd_);
    ::close(timer_fd_);
  }

  // False when the kernel refused (EPOLL_CTL_ADD allocates: ENOMEM, ENOSPC).
  bool Add(int fd, EpollItem* item, uint32_t events) {
    epoll_event ev{};
    ev.events = events;
    ev.data.ptr = item;
    return epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev) == 0;
  }
  void Modify(int fd, EpollItem* item, uint32_t events) {
    epoll_event ev{};
    ev.events = events;
    ev.data.ptr = item;
    epoll_ctl(epfd_, EPOLL_CTL_MOD, fd, &ev);
  }
  void Remove(int fd) { epoll_ctl(epfd_, EPOLL_CTL_DEL, fd, nullptr); }

  // Hands over a freshly accepted socket (any thread).
  void Adopt(int fd, Peer peer) {
    connections.fetch_add(1, std::memory_order_relaxed);
    {
      std::lock_guard lock(pending_mu_);
      pending_.emplace_back(fd, std::move(peer));
    }
    Wake();
  }
  // Has the I/O thread run a connection's held records (any thread).
  void Resume(std::weak_ptr<Connection> conn) {
    {
      std::lock_guard lock(pending_mu_);
      resume_.push_back(std::move(conn));
    }
    Wake();
  }
  void Wake() {
    uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(wake_fd_, &one, sizeof(one));
  }
  void RequestStop() {
    stop_.store(true);
    Wake();
  }

  void Run();
  // eventfd: adopt pending connections.
  void OnEvent(uint32_t) override;
  void Forget(const std::shared_ptr<Connection>& conn) {
    conns_.erase(conn->fd());
    graveyard_.push_back(conn);
  }
  void CloseAll() {
    while (!conns_.empty()) conns_.begin()->second->Close("server shutting down");
    graveyard_.clear();
  }
  void Tick();

  TcpServer* server() { return server_; }

  // Every loop has a Listener of its own on each listening socket, registered with
  // EPOLLEXCLUSIVE: a new connection wakes one loop that is waiting (not all of them), so
  // accepting is spread over the loops and goes on while any one of them is busy.
  struct Listener : EpollItem {
    TcpServer* server;
    IoThread* thread;
    int listen_fd;
    // Out of descriptors (or memory): the socket stays readable, so it is taken out
    // of the epoll set until the next tick instead of waking the loop in a spin;
    // connections wait in the backlog meanwhile.
    bool paused = false;
    bool warned = false;    // one log line per episode
    bool refusing = false;  // at max_connections: one log line per episode
    void OnEvent(uint32_t) override;
    void Pause(int err);
  };
  std::vector<std::unique_ptr<Listener>> listeners;
  // Connections dealt to this loop and not yet closed (read by the loops that deal).
  std::atomic<size_t> connections{0};

 private:
  struct TimerItem : EpollItem {
    IoThread* owner;
    explicit TimerItem(IoThread* o) : owner(o) {}
    void OnEvent(uint32_t) override { owner->Tick(); }
  };

  TcpServer* server_;
  int epfd_ = -1;
  int wake_fd_ = -1;
  int timer_fd_ = -1;
  TimerItem timer_item_{this};
  std::atomic<bool> stop_{false};
  std::mutex pending_mu_;
  std::vector<std::pair<int, Peer>> pending_;
  std::vector<std::weak_ptr<Connection>> resume_;  // GUARDED_BY(pending_mu_)
  std::unordered_map<int, std::shared_ptr<Connection>> conns_;
  // Connections closed during this epoll batch: later events of the batch may still
  // point at them, so they are destroyed only after the batch.
  std::vector<std::shared_ptr<Connection>> graveyard_;
  std::thread thread_;
  friend class TcpServer;
};

// ---- IoThread ----

void TcpServer::IoThread::Run() {
  constexpr int kMaxEvents = 128;
  epoll_event events[kMaxEvents];
  while (!stop_.load()) {
    int n = epoll_wait(epfd_, events, kMaxEvents, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      log::Error("epoll_wait: {}", std::strerror(errno));
      break;
    }
    for (int i = 0; i < n; ++i)
      static_cast<EpollItem*>(events[i].data.ptr)->OnEvent(events[i].events);
    graveyard_.clear();
  }
}

void TcpServer::IoThread::OnEvent(uint32_t) {
  uint64_t v;
  while (::read(wake_fd_, &v, sizeof(v)) > 0) {
  }
  std::vector<std::pair<int, Peer>> adopted;
  std::vector<std::weak_ptr<Connection>> resumed;
  {
    std::lock_guard lock(pending_mu_);
    adopted.swap(pending_);
    resumed.swap(resume_);
  }
  for (auto& weak : resumed) {
    if (auto conn = weak.lock()) conn->RunHeld();
  }
  for (auto& [fd, peer] : adopted) {
    auto conn =
        std::make_shared<Connection>(this, fd, std::move(peer), server_->options_.max_record);
    conns_[fd] = conn;
    conn->Register();
  }
}

void TcpServer::IoThread::Tick() {
  uint64_t expirations;
  [[maybe_unused]] ssize_t r = ::read(timer_fd_, &expirations, sizeof(expirations));
  for (auto& l : listeners) {
    if (!l->paused || server_->stopped_.load()) continue;
    // Still paused if the kernel cannot take it back now: the next tick tries again.
    l->paused = !Add(l->listen_fd, l.get(), EPOLLIN | EPOLLEXCLUSIVE);
  }
  auto now = Clock::now();
  std::vector<std::pair<std::shared_ptr<Connection>, const char*>> doomed;
  for (auto& [fd, conn] : conns_) {
    const char* why = nullptr;
    if (conn->Idle(now, server_->options_, &why)) {
      doomed.emplace_back(conn, why);
    } else {
      conn->ShrinkIfQuiet(now);
    }
  }
  for (auto& [conn, why] : doomed) conn->Close(why);
}

void TcpServer::IoThread::Listener::OnEvent(uint32_t) {
  for (;;) {
    if (server->stopped_.load()) {
      // Stop() took it out of every loop, but a tick may have re-armed it meanwhile.
      thread->Remove(listen_fd);
      return;
    }
    sockaddr_storage ss{};
    socklen_t len = sizeof(ss);
    int fd =
        accept4(listen_fd, reinterpret_cast<sockaddr*>(&ss), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        return Pause(errno);
      }
      if (errno != EAGAIN && errno != EINTR) log::Warn("accept: {}", std::strerror(errno));
      return;
    }
    warned = false;
    TcpServer* s = server;
    if (s->counters_.open.load() >= s->options_.max_connections) {
      s->counters_.refused.fetch_add(1);
      if (!refusing) {
        log::Warn("refusing connections: {} open, the limit (--max-connections)",
                  s->counters_.open.load());
        refusing = true;
      }
      ::close(fd);
      continue;
    }
    if (refusing) {
      log::Info("accepting connections again ({} refused since the limit was reached)",
                s->counters_.refused.load());
      refusing = false;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    s->counters_.accepted.fetch_add(1);
    s->counters_.open.fetch_add(1);
    Peer peer = PeerOf(fd, ss, len);
    log::Debug("accepted connection from {}:{}", peer.host, peer.port);
    // The loop that accepted is not held by a call (a wakeup goes to a waiting loop), so
    // it keeps the connection unless another loop has fewer: balanced, and a client
    // arriving while one loop is busy is not dealt to that loop on a tie.
    IoThread* pick = thread;
    for (auto& t : s->io_threads_) {
      if (t->connections.load(std::memory_order_relaxed) <
          pick->connections.load(std::memory_order_relaxed)) {
        pick = t.get();
      }
    }
    pick->Adopt(fd, std::move(peer));
  }
}

void TcpServer::IoThread::Listener::Pause(int err) {
  server->counters_.accept_pauses.fetch_add(1);
  if (!warned) {
    log::Warn(
        "accept: {}: not accepting for up to a second at a time until it clears "
        "(new connections wait in the backlog)",
        std::strerror(err));
    warned = true;
  }
  paused = true;
  thread->Remove(listen_fd);  // EPOLLEXCLUSIVE registrations cannot be modified
}

// ---- Connection ----

void TcpServer::Connection::Register() {
  std::lock_guard lock(out_mu_);
  interest_ = EPOLLIN;
  thread_->Add(fd_, this, interest_);
}

void TcpServer::Connection::OnEvent(uint32_t events) {
  if (events & EPOLLIN) ReadAndDispatch();
  if (events & EPOLLOUT) {
    std::lock_guard lock(out_mu_);
    if (!closed_) FlushLocked();
  }
  if ((events & (EPOLLERR | EPOLLHUP)) && !(events & EPOLLIN)) Close("socket error");
}

void TcpServer::Connection::ReadAndDispatch() {
  TcpServer* server = thread_->server();
  std::vector<OutBuffer> inline_replies;
  size_t pending = 0;
  // The replies run so far go out (or give their budget back) before the connection ends.
  auto end = [&](const char* why) {
    {
      std::lock_guard lock(out_mu_);
      QueueInlineLocked(&inline_replies);
      if (!closed_) FlushLocked();
    }
    Close(why);
  };
  auto too_large = [&] {
    server->counters_.closed_bad_record.fetch_add(1);
    log::Warn("{}:{}: record larger than {} bytes: closing the connection", peer_.host, peer_.port,
              reader_.max_record());
    end("record too large");
  };
  // Records held back earlier come first; new bytes are read only once those ran.
  uint64_t records_held = records_read_;
  if (!DispatchBuffered(&inline_replies, &pending)) return too_large();
  if (records_read_ != records_held) record_since_ = Clock::now();  // held by the server
  // Bounded reads per wakeup keep one busy client from starving the others.
  for (int round = 0; round < 8; ++round) {
    {
      std::lock_guard lock(out_mu_);
      if (held_) break;
    }
    if (!ReserveReceiveBuffer()) break;
    std::span<std::byte> space = reader_.PrepareWrite();
    CountReceiveBuffer();
    ssize_t n = ::read(fd_, space.data(), space.size());
    if (n == 0) return end("peer closed");
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) break;
      return end(std::strerror(errno));
    }
    bool had_partial = reader_.HasPartial();
    uint64_t records_before = records_read_;
    reader_.CommitWrite(static_cast<size_t>(n));
    server->counters_.bytes_in.Add(static_cast<uint64_t>(n));
    last_activity_ = last_progress_ = Clock::now();
    if (!DispatchBuffered(&inline_replies, &pending)) return too_large();
    // What is left began in this read if it followed a whole call (or nothing).
    if (!had_partial || records_read_ != records_before) record_since_ = last_progress_;
    if (static_cast<size_t>(n) < space.size()) break;  // drained the socket
  }
  std::lock_guard lock(out_mu_);
  QueueInlineLocked(&inline_replies);
  if (closed_) return;
  FlushLocked();
  // A buffer is kept for a client's next large call, unless others wait for the memory.
  if (!reader_.HasPartial()) {
    reader_.ShrinkIfIdle(server->receive_waiters_.load() > 0 ? kQuietReceiveBuffer
                                                             : kKeptReceiveBuffer);
  }
  CountReceiveBuffer();
}

bool TcpServer::Connection::ReserveReceiveBuffer() {
  TcpServer* server = thread_->server();
  MemoryBudget& budget = server->receive_budget_;
  size_t need = ReceiveCharge(reader_.CapacityFor());
  auto granted = [&] {
    if (need > receive_charged_ && !budget.TryAdd(need - receive_charged_)) return false;
    receive_charged_ = std::max(receive_charged_, need);
    return true;
  };
  if (!granted()) {
    // Hold only the bytes really received while waiting: a buffer kept from an earlier
    // call, or doubled as it grew, is memory another connection may be waiting for.
    reader_.ShrinkToFit(kQuietReceiveBuffer);
    CountReceiveBuffer();
    need = ReceiveCharge(reader_.CapacityFor());
  }
  if (!granted()) {
    if (!waiting_receive_memory_) {
      server->counters_.receive_memory_holds.fetch_add(1, std::memory_order_relaxed);
      server->receive_waiters_.fetch_add(1);
      receive_wait_since_ = Clock::now();
      std::lock_guard lock(out_mu_);
      waiting_receive_memory_ = true;
      UpdateInterestLocked();
    }
    // Once per need: a wake-up for a larger one registered before would come too late.
    size_t more = need - receive_charged_;
    size_t registered = receive_wait_need_.load();
    if (registered == 0 || more < registered) {
      receive_wait_need_.store(more);
      budget.WaitForRoom(
          [thread = thread_, weak = weak_from_this()] {
            if (auto self = weak.lock()) self->receive_wait_need_.store(0);
            thread->Resume(weak);
          },
          more);
    }
    return false;
  }
  if (waiting_receive_memory_) {
    // The wait was the server's doing: the call's clocks start again now.
    record_since_ = last_progress_ = Clock::now();
    server->receive_waiters_.fetch_sub(1);
    std::lock_guard lock(out_mu_);
    waiting_receive_memory_ = false;
    UpdateInterestLocked();
  }
  return true;
}

void TcpServer::Connection::CountReceiveBuffer() {
  size_t now = receive_closed_ ? 0 : reader_.capacity();
  if (now != receive_counted_) {
    auto& counters = thread_->server()->counters_;
    if (now > receive_counted_) {
      uint64_t total = counters.receive_buffer_bytes.fetch_add(now - receive_counted_) +
                       (now - receive_counted_);
      RaiseTo(counters.receive_buffer_peak, total, std::memory_order_seq_cst);
    } else {
      counters.receive_buffer_bytes.fetch_sub(receive_counted_ - now);
    }
    receive_counted_ = now;
  }
  // Reserved before the buffer grew: only a buffer that shrank gives some back, and only
  // once it is off the count above, or another connection's use of it would count twice.
  size_t charge = ReceiveCharge(now);
  if (charge < receive_charged_) {
    thread_->server()->receive_budget_.Release(receive_charged_ - charge);
    receive_charged_ = charge;
  }
}

void TcpServer::Connection::ShrinkIfQuiet(Clock::time_point now) {
  if (receive_counted_ <= kQuietReceiveBuffer) return;
  // A buffer kept for this client's next call goes back at the next tick, not after a
  // quiet second, when other connections wait for receive memory.
  bool wanted = thread_->server()->receive_waiters_.load() > 0;
  if (!wanted && now - last_activity_ < std::chrono::seconds(1)) return;
  reader_.ShrinkIfIdle(kQuietReceiveBuffer);
  CountReceiveBuffer();
}

void TcpServer::Connection::RunHeld() {
  {
    std::lock_guard lock(out_mu_);
    resume_posted_ = false;
    if (closed_) return;
  }
  ReadAndDispatch();
}

bool TcpServer::Connection::DispatchBuffered(std::vector<OutBuffer>* inline_replies,
                                             size_t* pending) {
  TcpServer* server = thread_->server();
  for (;;) {
    {
      // Before each call, not after a batch: a few KiB of pipelined READ calls ask
      // for gigabytes of replies.
      std::lock_guard lock(out_mu_);
      const TcpServerOptions& o = server->options_;
      bool over_own = out_bytes_ + reserved_bytes_ + *pending > o.max_queued_reply_bytes ||
                      in_flight_ >= o.max_calls_in_flight;
      bool outstanding = out_bytes_ + *pending > 0 || in_flight_ > 0;
      held_for_memory_ = !over_own && outstanding && server->budget_.Over();
      held_ = over_own || held_for_memory_;
      if (held_for_memory_ && !waiting_for_memory_.exchange(true)) {
        server->counters_.memory_holds.fetch_add(1, std::memory_order_relaxed);
        // Not under out_mu_: the budget may call this while another connection's is held.
        server->budget_.WaitForRoom([thread = thread_, weak = weak_from_this()] {
          if (auto self = weak.lock()) self->waiting_for_memory_.store(false);
          thread->Resume(weak);
        });
      }
      if (held_) return true;
    }
    std::span<std::byte> record;
    RecordReader::Status st = reader_.Next(&record);
    if (st == RecordReader::Status::kTooLarge) return false;
    if (st != RecordReader::Status::kRecord) return true;
    ++records_read_;
    server->counters_.records.Add();
    size_t before = inline_replies->size();
    HandleRecord(record, inline_replies);
    for (size_t i = before; i < inline_replies->size(); ++i) {
      size_t n = (*inline_replies)[i].total_size();
      *pending += n;
      server->budget_.Add(n);  // now, not once queued: the next check must see it
    }
  }
}

void TcpServer::Connection::QueueInlineLocked(std::vector<OutBuffer>* replies) {
  if (closed_) {
    size_t n = 0;
    for (const auto& r : *replies) n += r.total_size();
    thread_->server()->budget_.Release(n);
    return;
  }
  if (out_queue_.empty() && !replies->empty()) last_sent_ = Clock::now();
  for (auto& r : *replies) {
    QueuedLocked(r.total_size());
    out_queue_.push_back(std::move(r));
  }
}

void TcpServer::Connection::QueuedLocked(size_t n) {
  out_bytes_ += n;
  auto& peak = thread_->server()->counters_.queued_reply_bytes_peak;
  RaiseTo(peak, uint64_t{out_bytes_}, std::memory_order_seq_cst);
}

void TcpServer::Connection::HandleRecord(std::span<std::byte> record,
                                         std::vector<OutBuffer>* inline_replies) {
  TcpServer* server = thread_->server();
  Dispatcher::Call call;
  OutBuffer reply;
  switch (server->dispatcher_.Accept(record, peer_, &call, &reply)) {
    case Dispatcher::Route::kDrop:
      return;
    case Dispatcher::Route::kReply:
      inline_replies->push_back(std::move(reply));
      return;
    case Dispatcher::Route::kRun:
      break;
  }
  if (!Dispatcher::MayBlock(call, peer_)) {
    if (server->dispatcher_.Run(call, peer_, &reply, /*on_event_loop=*/true)) {
      inline_replies->push_back(std::move(reply));
      return;
    }
    server->counters_.moved_off_loop.fetch_add(1, std::memory_order_relaxed);
  }
  // The record buffer is reused for the next read: the worker gets its own copy.
  auto copy = std::make_shared<PooledBytes>(record);
  Dispatcher::Rebase(call, record, *copy);
  // Its reply is made only when a worker runs it: until then the limits count the most
  // it may take, or a few KiB of pipelined READs of data not in the page cache would
  // all be let through before the first of their replies existed.
  const size_t bound = Dispatcher::ReplyBound(call);
  server->budget_.Add(record.size() + bound);
  {
    std::lock_guard lock(out_mu_);
    ++in_flight_;
    reserved_bytes_ += bound;
    UpdateInterestLocked();
  }
  // Keyed by connection: each takes its turn at the workers, however many calls it piled up.
  server->workers_->Submit(
      reinterpret_cast<uintptr_t>(this),
      [self = shared_from_this(), call = std::move(call), copy = std::move(copy),
       held = record.size() + bound, bound, server]() mutable {
        OutBuffer out;
        server->dispatcher_.Run(call, self->peer_, &out);
        copy.reset();
        server->budget_.Release(held);
        {
          std::lock_guard lock(self->out_mu_);
          --self->in_flight_;
          self->reserved_bytes_ -= bound;
        }
        self->Send(std::move(out));
      });
}

void TcpServer::Connection::Send(OutBuffer reply) {
  std::lock_guard lock(out_mu_);
  if (closed_) return;  // the DRC still has it for a retransmission on a new connection
  if (out_queue_.empty()) last_sent_ = Clock::now();
  thread_->server()->budget_.Add(reply.total_size());
  QueuedLocked(reply.total_size());
  out_queue_.push_back(std::move(reply));
  FlushLocked();
}

void TcpServer::Connection::FlushLocked() {
  TcpServer* server = thread_->server();
  std::vector<iovec> iov;
  while (!out_queue_.empty()) {
    iov.clear();
    size_t skip = out_offset_;
    for (const OutBuffer& b : out_queue_) {
      b.GatherIovecs(skip, &iov);
      skip = 0;
      if (iov.size() >= 256) break;
    }
    ssize_t n = SendNoSignal(fd_, iov.data(), iov.size());
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) break;
      log::Debug("{}:{}: write failed: {}", peer_.host, peer_.port, std::strerror(errno));
      out_queue_.clear();
      server->budget_.Release(out_bytes_);
      out_bytes_ = out_offset_ = 0;
      break;  // the read side notices the broken socket and closes
    }
    server->counters_.bytes_out.Add(static_cast<uint64_t>(n));
    if (n > 0) last_sent_ = Clock::now();
    size_t left = static_cast<size_t>(n);
    out_bytes_ -= left;
    server->budget_.Release(left);
    while (left > 0 && !out_queue_.empty()) {
      size_t front_left = out_queue_.front().total_size() - out_offset_;
      if (left >= front_left) {
        left -= front_left;
        out_offset_ = 0;
        out_queue_.pop_front();
      } else {
        out_offset_ += left;
        left = 0;
      }
    }
  }
  want_out_ = !out_queue_.empty();
  UpdateInterestLocked();
}

bool TcpServer::Connection::ShouldPauseLocked() const {
  const TcpServerOptions& o = thread_->server()->options_;
  return out_bytes_ + reserved_bytes_ > o.max_queued_reply_bytes ||
         in_flight_ >= o.max_calls_in_flight;
}

void TcpServer::Connection::UpdateInterestLocked() {
  if (closed_) return;
  bool over = ShouldPauseLocked();
  // Replies drained below the caps, or (held for the shared budget) every reply of its
  // own went out, which lets it run one call again: the held records run on the I/O
  // thread. Otherwise a connection held for the budget waits for the budget's wake-up.
  bool own_drained = out_bytes_ == 0 && in_flight_ == 0;
  if (held_ && !over && (!held_for_memory_ || own_drained) && !resume_posted_) {
    resume_posted_ = true;
    thread_->Resume(weak_from_this());
  }
  read_paused_ = over || held_ || waiting_receive_memory_;
  uint32_t want = (read_paused_ ? 0u : uint32_t{EPOLLIN}) | (want_out_ ? uint32_t{EPOLLOUT} : 0u);
  if (want != interest_) {
    thread_->Modify(fd_, this, want);
    interest_ = want;
  }
}

bool TcpServer::Connection::Idle(Clock::time_point now, const TcpServerOptions& o,
                                 const char** why) const {
  std::lock_guard lock(out_mu_);
  if (!out_queue_.empty() && now - last_sent_ > o.send_timeout) {
    *why = kNotReading;
    return true;
  }
  if (in_flight_ > 0 || !out_queue_.empty()) return false;
  // Receive memory is given back only as calls complete: without these two, connections
  // holding parts of calls, all waiting for more, or one trickling its call byte by byte,
  // would keep everyone else's large calls out for as long as they stay connected.
  if (waiting_receive_memory_) {
    if (receive_charged_ > 0 && now - receive_wait_since_ > o.stall_timeout) {
      *why = kWaitedReceive;
      return true;
    }
    return false;  // not reading is the server's doing, not the client's
  }
  if (receive_charged_ > 0 && !held_ && reader_.HasPartial() &&
      thread_->server()->receive_waiters_.load() > 0 && now - record_since_ > o.stall_timeout) {
    *why = kSlowRecord;
    return true;
  }
  if (reader_.HasPartial() && now - last_progress_ > o.stall_timeout) {
    *why = kStalled;
    return true;
  }
  if (now - last_activity_ > o.idle_timeout) {
    *why = "idle";
    return true;
  }
  return false;
}

void TcpServer::Connection::Close(const char* why) {
  auto self = shared_from_this();
  {
    std::lock_guard lock(out_mu_);
    if (closed_) return;
    closed_ = true;
    out_queue_.clear();
    thread_->server()->budget_.Release(out_bytes_);
    out_bytes_ = out_offset_ = 0;
    thread_->Remove(fd_);
    ::shutdown(fd_, SHUT_RDWR);
    if (std::exchange(waiting_receive_memory_, false))
      thread_->server()->receive_waiters_.fetch_sub(1);
  }
  receive_closed_ = true;
  CountReceiveBuffer();
  TcpServer* server = thread_->server();
  server->counters_.open.fetch_sub(1);
  thread_->connections.fetch_sub(1, std::memory_order_relaxed);
  if (why == kStalled) {
    server->counters_.closed_bad_record.fetch_add(1);
    log::Warn("{}:{}: closing connection: {}", peer_.host, peer_.port, why);
  } else if (why == kSlowRecord || why == kWaitedReceive) {
    server->counters_.closed_receive_memory.fetch_add(1);
    log::Warn("{}:{}: closing connection: {} (over {} s; --max-receive-memory)", peer_.host,
              peer_.port, why, server->options_.stall_timeout.count());
  } else if (why == kNotReading) {
    server->counters_.closed_not_reading.fetch_add(1);
    log::Warn("{}:{}: closing connection: {} for {} s", peer_.host, peer_.port, why,
              server->options_.send_timeout.count());
  } else {
    log::Debug("{}:{}: closing connection: {}", peer_.host, peer_.port, why);
  }
  thread_->Forget(self);
}

// ---- TcpServer ----

namespace {

int UsableCpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 1;
  return std::max(1, CPU_COUNT(&set));
}

}  // namespace

TcpServer::TcpServer(Dispatcher& dispatcher, TcpServerOptions options)
    : dispatcher_(dispatcher),
      options_(options),
      budget_(options.max_reply_memory),
      receive_budget_(ReceiveLimit(options)) {
  if (options_.io_threads < 1) options_.io_threads = UsableCpus();
  if (options_.worker_threads < 1) options_.worker_threads = 1;
  for (int i = 0; i < options_.io_threads; ++i) {
    io_threads_.push_back(std::make_unique<IoThread>(this));
  }
}

TcpServer::~TcpServer() {
  Stop();
  for (int fd : listen_fds_) ::close(fd);
}

Result<uint16_t> TcpServer::Listen(const std::string& address, uint16_t port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICHOST | AI_PASSIVE;
  addrinfo* res = nullptr;
  std::string port_str = std::to_string(port);
  if (getaddrinfo(address.empty() ? nullptr : address.c_str(), port_str.c_str(), &hints, &res) !=
      0) {
    return Fail(EINVAL);
  }
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> guard(res, freeaddrinfo);
  int fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return FailErrno();
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(fd, res->ai_addr, res->ai_addrlen) != 0 || listen(fd, 1024) != 0) {
    int err = errno;
    ::close(fd);
    return Fail(err);
  }
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
  uint16_t bound = ntohs(ss.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port
                                                  : reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  listen_fds_.push_back(fd);
  for (auto& t : io_threads_) {
    auto listener = std::make_unique<IoThread::Listener>();
    listener->server = this;
    listener->thread = t.get();
    listener->listen_fd = fd;
    t->Add(fd, listener.get(), EPOLLIN | EPOLLEXCLUSIVE);
    t->listeners.push_back(std::move(listener));
  }
  return bound;
}

void TcpServer::Start() {
  if (started_.exchange(true)) return;
  workers_ = std::make_unique<WorkerPool>(options_.worker_threads);
  for (auto& t : io_threads_) {
    IoThread* raw = t.get();
    t->thread_ = std::thread([raw] { raw->Run(); });
  }
}

void TcpServer::Stop() {
  if (!started_.load() || stopped_.exchange(true)) return;
  // No new connections; calls already taken finish and their replies are written.
  for (auto& t : io_threads_) {
    for (auto& l : t->listeners) t->Remove(l->listen_fd);
  }
  workers_->Drain();
  for (auto& t : io_threads_) t->RequestStop();
  for (auto& t : io_threads_) {
    if (t->thread_.joinable()) t->thread_.join();
  }
  for (auto& t : io_threads_) t->CloseAll();
  workers_.reset();
}

}  // namespace nfsx::rpc
