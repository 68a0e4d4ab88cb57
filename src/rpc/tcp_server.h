// TcpServer: ONC RPC over TCP for a Dispatcher.
//
// I/O threads each run an epoll loop over their share of the connections, and
// each accepts (one listening socket in every loop's epoll set, EPOLLEXCLUSIVE),
// keeping a new connection unless another loop has fewer. Calls run inline on
// the I/O thread unless their procedure may block (kProcMayBlock), in which case
// a worker thread runs them; a call that finds on the loop that it would wait on
// the disk (CallContext::would_block) is run again by a worker.
// Replies go out in completion order, batched into one writev per wakeup.
// Many connections, many calls in flight per connection, replies in any order.
//
// A connection is closed, and the server carries on, when a record exceeds the
// maximum size, when the peer stalls mid-record, or when it stays idle.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/result.h"
#include "base/sharded_counter.h"
#include "rpc/dispatcher.h"
#include "rpc/memory_budget.h"
#include "rpc/worker_pool.h"

namespace nfsx::rpc {

struct TcpServerOptions {
  // Event loops; 0: one per CPU this process may run on (its affinity, so `taskset`
  // and cgroup cpusets count).
  int io_threads = 0;
  int worker_threads = 8;
  size_t max_record = 4u << 20;  // largest call accepted, in bytes
  size_t max_connections = 4096;
  std::chrono::seconds idle_timeout{360};  // no traffic at all
  std::chrono::seconds stall_timeout{30};  // half a record and no progress
  // Replies queued and none of their bytes taken by the client for this long: a
  // client that stopped reading holds server memory, so it is dropped (its DRC
  // entries stay for a retransmission on a new connection).
  std::chrono::seconds send_timeout{60};
  size_t max_queued_reply_bytes = 64u << 20;  // per connection; stop reading beyond
  size_t max_calls_in_flight = 512;           // per connection, offloaded calls
  // All connections together: queued replies and calls copied for workers. Beyond it a
  // connection with replies of its own outstanding runs no more calls until the total
  // drains below; one with none may still run one at a time, so clients that wait for
  // each answer are served while pipelining ones are held. The total thus stays under
  // this plus one reply per connection. 0: no limit.
  size_t max_reply_memory = 512u << 20;
  // All connections together: receive buffers beyond 64 KiB each (calls larger than that
  // being received, and buffers kept between large calls). A connection that needs more
  // for its call waits, not reading, until others give some back; the whole record is
  // asked for at its record mark, so one granted always completes without asking again.
  // A connection that holds some while its call goes on for stall_timeout and others
  // wait is closed, as is one that waited that long holding part of a call. 0: no limit;
  // else at least twice max_record (and 256 KiB).
  size_t max_receive_memory = 256u << 20;
};

struct TcpServerCounters {
  std::atomic<uint64_t> accepted{0};
  std::atomic<uint64_t> open{0};
  // Bumped by every call (the rest only by rare events): per thread, summed when read.
  ShardedCounter records;
  ShardedCounter bytes_in;
  ShardedCounter bytes_out;
  std::atomic<uint64_t> closed_bad_record{0};        // too large or stalled
  std::atomic<uint64_t> accept_pauses{0};            // accept() out of descriptors or memory
  std::atomic<uint64_t> refused{0};                  // closed at accept: max_connections open
  std::atomic<uint64_t> closed_not_reading{0};       // replies unread for send_timeout
  std::atomic<uint64_t> queued_reply_bytes_peak{0};  // most queued on one connection
  std::atomic<uint64_t> memory_holds{0};  // connections held because max_reply_memory was spent
  // Calls begun on an event loop that would have waited on the disk (a READ of data
  // not in the page cache), run again by a worker.
  std::atomic<uint64_t> moved_off_loop{0};
  // Receive buffers of all connections now (a call is assembled whole in one), and at
  // most so far: max_receive_memory plus 64 KiB per connection, and a connection quiet
  // for a second keeps at most 64 KiB.
  std::atomic<uint64_t> receive_buffer_bytes{0};
  std::atomic<uint64_t> receive_buffer_peak{0};
  std::atomic<uint64_t> receive_memory_holds{0};   // reads paused: max_receive_memory spent
  std::atomic<uint64_t> closed_receive_memory{0};  // closed for holding it too long
};

class TcpServer {
 public:
  TcpServer(Dispatcher& dispatcher, TcpServerOptions options);
  ~TcpServer();
  TcpServer(const TcpServer&) = delete;
  TcpServer& operator=(const TcpServer&) = delete;

  // Binds and listens on address:port (port 0 picks one). Returns the bound port.
  // REQUIRES: before Start().
  Result<uint16_t> Listen(const std::string& address, uint16_t port);

  void Start();
  // Stops accepting, lets calls already running finish and their replies go out,
  // then closes every connection. Idempotent.
  void Stop();

  const TcpServerCounters& counters() const { return counters_; }
  int io_threads() const { return options_.io_threads; }
  // Bytes held for all connections now, and at most so far (max_reply_memory).
  size_t reply_memory() const { return budget_.used(); }
  size_t reply_memory_peak() const { return budget_.peak(); }
  // Receive-buffer bytes beyond each connection's base, now and at most (max_receive_memory).
  size_t receive_memory() const { return receive_budget_.used(); }
  size_t receive_memory_peak() const { return receive_budget_.peak(); }

  class IoThread;  // internal
  class Connection;

 private:
  Dispatcher& dispatcher_;
  TcpServerOptions options_;
  TcpServerCounters counters_;
  MemoryBudget budget_;
  MemoryBudget receive_budget_;
  std::atomic<size_t> receive_waiters_{0};  // connections not read until it has room
  std::vector<int> listen_fds_;
  std::unique_ptr<WorkerPool> workers_;
  std::vector<std::unique_ptr<IoThread>> io_threads_;
  std::atomic<bool> started_{false};
  std::atomic<bool> stopped_{false};
};

}  // namespace nfsx::rpc
