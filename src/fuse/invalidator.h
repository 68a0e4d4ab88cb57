// Invalidator: tells the kernel to drop what it cached of a file (pages and
// attributes) or of a directory's names, on a thread of its own.
//
// The client notices another client's change deep inside a call: on the RPC
// reader thread, or inside a FUSE request for that very inode. A notification
// from there could deadlock (the kernel may wait for page locks that the
// pending request holds) or stall every reply of the connection, so requests
// are queued here and sent by this thread, which holds no lock of ours.
//
// Thread-safe.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

struct fuse_session;

namespace nfsx::fuse {

class Invalidator {
 public:
  // `names_under(dir)` lists the names the kernel may have cached in a directory.
  explicit Invalidator(std::function<std::vector<std::string>(uint64_t)> names_under);
  ~Invalidator();  // Stop()s

  // Starts sending once the session is mounted.
  void Start(fuse_session* se);
  // Sends nothing more; waits for the thread, so once it returns nothing of
  // ours writes to the session's fd (which fuse_session_unmount closes).
  // Idempotent.
  void Stop();
  // Between Start and the end of Stop: notifications may be written to the session.
  bool sending() const;

  // Queue an invalidation of a file's pages and attributes (a directory's
  // attributes and cached names). Never blocks on the kernel.
  void File(uint64_t nodeid);
  void Directory(uint64_t nodeid);

  uint64_t sent() const;

 private:
  void Loop();

  std::function<std::vector<std::string>(uint64_t)> names_under_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  struct Item {
    uint64_t nodeid;
    bool dir;
  };
  std::deque<Item> queue_;  // GUARDED_BY(mu_)
  bool stop_ = false;       // GUARDED_BY(mu_)
  uint64_t sent_ = 0;       // GUARDED_BY(mu_)
  fuse_session* se_ = nullptr;
  // Held to start and to join the thread: a FUSE destroy request and the
  // unmount path may both stop it.
  mutable std::mutex thread_mu_;
  std::thread thread_;  // GUARDED_BY(thread_mu_)
};

}  // namespace nfsx::fuse
