// The clients a benchmark runs through, behind one small interface:
//   nfsx        our client library (include/nfsx/client.h)
//   libnfs      Debian's libnfs, an independent client (tools/libnfs-load/session.h)
//   path:DIR    plain POSIX calls in DIR: an `nfsx mount`, any mount, the local filesystem
// Workloads see files by name, relative to the directory the driver works in.
#pragma once

#include <fcntl.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "nfsx/client.h"
#include "nfsx/result.h"
#include "tools/libnfs-load/histogram.h"

namespace nfsx::bench {

// One open file. Used by one thread at a time.
class BenchFile {
 public:
  virtual ~BenchFile() = default;
  virtual Result<size_t> Pread(std::span<std::byte> out, uint64_t offset) = 0;
  virtual Result<size_t> Pwrite(std::span<const std::byte> data, uint64_t offset) = 0;
  // write(2) on a file opened O_APPEND: lands at the end of file.
  virtual Result<size_t> Append(std::span<const std::byte> data) = 0;
  // fstat(2)'s size, as fresh as the driver's attribute cache makes it.
  virtual Result<uint64_t> Size() = 0;
  virtual Result<void> Fsync() = 0;
  // Flushes (where the client buffers) and closes; the file is unusable afterwards.
  virtual Result<void> Close() = 0;

  // Asynchronous reads and writes from one thread, as the clients offer them (nfsx's
  // PreadAsync/PwriteAsync, libnfs's nfs_pread_async/nfs_pwrite_async): Start* queues
  // one and returns; Reap waits for at least one of those started to end and appends
  // every ended one to `done`. A buffer is the caller's again once its completion is
  // reaped; all must be reaped before Close. ENOTSUP where the driver has none (path:).
  struct Completion {
    uint64_t tag;
    Result<size_t> result;
  };
  virtual Result<void> StartPread(std::span<std::byte> out, uint64_t offset, uint64_t tag);
  virtual Result<void> StartPwrite(std::span<const std::byte> data, uint64_t offset, uint64_t tag);
  virtual Result<void> Reap(std::vector<Completion>* done);
};

struct OpenOptions {
  // Every Size() asks the server (nfsx: a client with actimeo=0), as a client that must
  // learn the end of file before each append does.
  bool fresh_attributes = false;
};

class Driver {
 public:
  virtual ~Driver() = default;

  // "nfsx", "libnfs" or "path".
  virtual std::string kind() const = 0;
  // One line for reports: which client, where.
  virtual std::string description() const = 0;

  // `flags` as open(2): O_RDONLY/O_WRONLY/O_RDWR, O_CREAT, O_TRUNC, O_APPEND, O_DIRECT.
  virtual Result<std::unique_ptr<BenchFile>> Open(const std::string& name, int flags,
                                                  OpenOptions options = {}) = 0;
  virtual Result<void> Unlink(const std::string& name) = 0;

  // A driver for another thread. nfsx: the same client (one mount shared by all threads, as
  // processes share a kernel mount); libnfs: a connection of its own (a libnfs context is
  // single-threaded); path: stateless.
  virtual Result<std::unique_ptr<Driver>> Fork() = 0;

  // What went over the wire so far, summed over this driver and all its forks; nullopt
  // where the driver cannot see the wire (path:).
  virtual std::optional<WireStats> counters() const = 0;

  // Whether reads may be served from a cache in this process (nfsx's page cache).
  virtual bool client_cache() const = 0;
  // The largest READ/WRITE the driver sends (for counting expectations); 0 when unknown.
  virtual uint64_t max_io() const = 0;

  // NULL RPC round trips to the NFS program: `calls` of them with `in_flight` outstanding,
  // each one's latency recorded. ENOTSUP where the driver has no wire (path:).
  virtual Result<void> Ping(int in_flight, uint64_t calls, load::Histogram* latency_ns) = 0;

  // Anything the reader of the results must know (e.g. O_DIRECT unsupported here).
  virtual std::vector<std::string> notes() const { return {}; }
};

struct DriverSpec {
  std::string kind;  // "nfsx", "libnfs", "path"
  std::string dir;   // path: the directory
};

// "nfsx", "libnfs", "path:DIR"; nullopt (with *error) otherwise.
std::optional<DriverSpec> ParseDriverSpec(const std::string& text, std::string* error);

// Connects the driver. `url` is an NFS URL of the directory to work in (nfsx and libnfs).
Result<std::unique_ptr<Driver>> MakeDriver(const DriverSpec& spec, const std::string& url,
                                           std::string* error);

// Whether this build has the libnfs driver.
bool HaveLibnfsDriver();

}  // namespace nfsx::bench
