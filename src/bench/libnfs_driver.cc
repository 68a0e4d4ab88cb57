#include "bench/libnfs_driver.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <nfsc/libnfs.h>
// After libnfs.h, which defines what it needs (EXTERN).
#include <nfsc/libnfs-raw.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>

#include "proto/nfs3_types.h"
#include "tools/libnfs-load/session.h"

namespace nfsx::bench {
namespace {

using Clock = std::chrono::steady_clock;
using nfs3::nfsproc3;

constexpr int kTimeoutMs = 60000;

// libnfs 4.0 keeps the reserved source port cursor and the xid salt in unlocked globals.
std::mutex connect_mu;

// Shared by a driver and its forks, which run on different threads.
struct Counters {
  std::array<std::atomic<uint64_t>, 22> calls{};
  std::atomic<uint64_t> write_bytes{0}, read_bytes{0};

  void Add(nfsproc3 proc, uint64_t n = 1) {
    calls[static_cast<size_t>(proc)].fetch_add(n, std::memory_order_relaxed);
  }
  WireStats Snapshot() const {
    WireStats s;
    for (size_t i = 0; i < calls.size(); ++i) {
      s.nfs_calls[i] = calls[i].load(std::memory_order_relaxed);
      s.rpc_calls += s.nfs_calls[i];
    }
    s.write_bytes = write_bytes.load(std::memory_order_relaxed);
    s.read_bytes = read_bytes.load(std::memory_order_relaxed);
    return s;
  }
};

uint64_t Chunks(uint64_t bytes, uint64_t max) {
  if (bytes == 0 || max == 0) return 1;
  return (bytes + max - 1) / max;
}

Error ErrorOf(int rc) { return Error{rc < 0 ? -rc : EIO}; }

class LibnfsFile final : public BenchFile {
 public:
  LibnfsFile(load::Session* session, nfsfh* fh, Counters* counters)
      : session_(session), nfs_(session->nfs()), fh_(fh), c_(counters) {}
  ~LibnfsFile() override { (void)Close(); }

  Result<size_t> Pread(std::span<std::byte> out, uint64_t offset) override {
    c_->Add(nfsproc3::READ, Chunks(out.size(), nfs_get_readmax(nfs_)));
    int rc = nfs_pread(nfs_, fh_, offset, out.size(), out.data());
    if (rc < 0) return std::unexpected(ErrorOf(rc));
    c_->read_bytes.fetch_add(static_cast<uint64_t>(rc), std::memory_order_relaxed);
    return static_cast<size_t>(rc);
  }
  Result<size_t> Pwrite(std::span<const std::byte> data, uint64_t offset) override {
    c_->Add(nfsproc3::WRITE, Chunks(data.size(), nfs_get_writemax(nfs_)));
    c_->write_bytes.fetch_add(data.size(), std::memory_order_relaxed);
    written_ = true;
    int rc = nfs_pwrite(nfs_, fh_, offset, data.size(), data.data());
    if (rc < 0) return std::unexpected(ErrorOf(rc));
    return static_cast<size_t>(rc);
  }
  Result<size_t> Append(std::span<const std::byte> data) override {
    // nfs_write on an O_APPEND handle: GETATTR for the size, then WRITE there.
    c_->Add(nfsproc3::GETATTR);
    c_->Add(nfsproc3::WRITE, Chunks(data.size(), nfs_get_writemax(nfs_)));
    c_->write_bytes.fetch_add(data.size(), std::memory_order_relaxed);
    written_ = true;
    int rc = nfs_write(nfs_, fh_, data.size(), data.data());
    if (rc < 0) return std::unexpected(ErrorOf(rc));
    return static_cast<size_t>(rc);
  }
  Result<uint64_t> Size() override {
    c_->Add(nfsproc3::GETATTR);
    nfs_stat_64 st{};
    int rc = nfs_fstat64(nfs_, fh_, &st);
    if (rc < 0) return std::unexpected(ErrorOf(rc));
    return st.nfs_size;
  }
  Result<void> Fsync() override {
    c_->Add(nfsproc3::COMMIT);
    int rc = nfs_fsync(nfs_, fh_);
    if (rc < 0) return std::unexpected(ErrorOf(rc));
    return {};
  }
  Result<void> Close() override {
    if (!fh_) return {};
    while (started_ > 0) {
      std::vector<Completion> ignored;
      if (!Reap(&ignored)) break;
    }
    // libnfs COMMITs on close whenever the handle was ever written, even after an fsync.
    if (written_) c_->Add(nfsproc3::COMMIT);
    int rc = nfs_close(nfs_, fh_);
    fh_ = nullptr;
    if (rc < 0) return std::unexpected(ErrorOf(rc));
    return {};
  }

  // Serviced by Reap, on this thread: libnfs's callbacks run inside nfs_service.
  Result<void> StartPread(std::span<std::byte> out, uint64_t offset, uint64_t tag) override {
    c_->Add(nfsproc3::READ, Chunks(out.size(), nfs_get_readmax(nfs_)));
    auto* op = new AsyncOp{this, tag, out};
    if (nfs_pread_async(nfs_, fh_, offset, out.size(), &LibnfsFile::OnRead, op) < 0) {
      delete op;
      return Fail(EIO);
    }
    ++started_;
    return {};
  }
  Result<void> StartPwrite(std::span<const std::byte> data, uint64_t offset,
                           uint64_t tag) override {
    c_->Add(nfsproc3::WRITE, Chunks(data.size(), nfs_get_writemax(nfs_)));
    c_->write_bytes.fetch_add(data.size(), std::memory_order_relaxed);
    written_ = true;
    auto* op = new AsyncOp{this, tag, {}};
    if (nfs_pwrite_async(nfs_, fh_, offset, data.size(), data.data(), &LibnfsFile::OnWritten, op) <
        0) {
      delete op;
      return Fail(EIO);
    }
    ++started_;
    return {};
  }
  Result<void> Reap(std::vector<Completion>* done) override {
    if (started_ == 0 && ended_.empty()) return Fail(EINVAL);  // nothing was started
    while (ended_.empty()) {
      std::string error;
      if (!session_->PollOnce(1000, &error)) {
        fmt::print(stderr, "nfsx bench: libnfs: {}\n", error);
        return Fail(EIO);
      }
    }
    for (auto& c : ended_) done->push_back(std::move(c));
    ended_.clear();
    return {};
  }

 private:
  struct AsyncOp {
    LibnfsFile* file;
    uint64_t tag;
    std::span<std::byte> out;  // a read's
  };
  // libnfs 4.0 hands a read's data to the callback, in its own buffer.
  static void OnRead(int status, nfs_context* /*nfs*/, void* data, void* private_data) {
    std::unique_ptr<AsyncOp> op(static_cast<AsyncOp*>(private_data));
    if (status >= 0) {
      size_t n = std::min(static_cast<size_t>(status), op->out.size());
      std::memcpy(op->out.data(), data, n);
      op->file->c_->read_bytes.fetch_add(n, std::memory_order_relaxed);
      op->file->Ended(op->tag, n);
    } else {
      op->file->Ended(op->tag, std::unexpected(ErrorOf(status)));
    }
  }
  static void OnWritten(int status, nfs_context* /*nfs*/, void* /*data*/, void* private_data) {
    std::unique_ptr<AsyncOp> op(static_cast<AsyncOp*>(private_data));
    if (status >= 0) {
      op->file->Ended(op->tag, static_cast<size_t>(status));
    } else {
      op->file->Ended(op->tag, std::unexpected(ErrorOf(status)));
    }
  }
  void Ended(uint64_t tag, Result<size_t> r) {
    --started_;
    ended_.push_back(Completion{tag, std::move(r)});
  }

  load::Session* session_;
  nfs_context* nfs_;
  nfsfh* fh_;
  Counters* c_;
  bool written_ = false;
  uint64_t started_ = 0;           // not ended yet
  std::vector<Completion> ended_;  // not reaped yet
};

struct PingState {
  load::Histogram* latency = nullptr;
  uint64_t sent = 0, done = 0, calls = 0;
  int error = 0;
  std::vector<Clock::time_point> start;  // by slot
};

struct PingSlot {
  PingState* state;
  size_t index;
};

class LibnfsDriver final : public Driver {
 public:
  LibnfsDriver(std::string url, std::unique_ptr<load::Session> session,
               std::shared_ptr<Counters> counters)
      : url_(std::move(url)), session_(std::move(session)), c_(std::move(counters)) {}

  std::string kind() const override { return "libnfs"; }
  std::string description() const override {
    return fmt::format("libnfs {} (Debian), {}", "4.0", url_);
  }

  Result<std::unique_ptr<BenchFile>> Open(
      const std::string& name, int flags,
      OpenOptions /*options: libnfs caches no attributes*/) override {
    flags &= ~O_DIRECT;  // libnfs has no cache to bypass
    std::string path = "/" + name;
    if (flags & O_CREAT) {
      CountParentLookup(name);
      c_->Add(nfsproc3::CREATE);
      c_->Add(nfsproc3::LOOKUP);
      if (flags & O_TRUNC) c_->Add(nfsproc3::SETATTR);
    } else {
      uint64_t parts = 1;
      for (char ch : name) parts += ch == '/';
      c_->Add(nfsproc3::LOOKUP, parts);
      c_->Add(nfsproc3::ACCESS);
      if ((flags & O_TRUNC) && (flags & O_ACCMODE) != O_RDONLY) c_->Add(nfsproc3::SETATTR);
    }
    nfsfh* fh = nullptr;
    int rc = nfs_open2(session_->nfs(), path.c_str(), flags, 0644, &fh);
    if (rc < 0) return std::unexpected(ErrorOf(rc));
    return std::unique_ptr<BenchFile>(new LibnfsFile(session_.get(), fh, c_.get()));
  }

  Result<void> Unlink(const std::string& name) override {
    CountParentLookup(name);
    c_->Add(nfsproc3::REMOVE);
    int rc = nfs_unlink(session_->nfs(), ("/" + name).c_str());
    if (rc < 0) return std::unexpected(ErrorOf(rc));
    return {};
  }

  Result<std::unique_ptr<Driver>> Fork() override {
    std::string error;
    std::unique_ptr<load::Session> s;
    {
      std::lock_guard lock(connect_mu);
      s = load::Session::Connect(url_, kTimeoutMs, &error);
    }
    if (!s) {
      fmt::print(stderr, "nfsx bench: libnfs: {}\n", error);
      return Fail(ECONNREFUSED);
    }
    return std::unique_ptr<Driver>(new LibnfsDriver(url_, std::move(s), c_));
  }

  std::optional<WireStats> counters() const override { return c_->Snapshot(); }
  bool client_cache() const override { return false; }
  uint64_t max_io() const override { return nfs_get_writemax(session_->nfs()); }

  Result<void> Ping(int in_flight, uint64_t calls, load::Histogram* latency_ns) override {
    PingState st;
    st.latency = latency_ns;
    st.calls = calls;
    size_t slots = static_cast<size_t>(std::max(1, in_flight));
    st.start.resize(slots);
    std::vector<PingSlot> slot(slots);
    rpc_context* rpc = nfs_get_rpc_context(session_->nfs());
    auto send = [&](PingSlot* s) {
      st.start[s->index] = Clock::now();
      ++st.sent;
      c_->Add(nfsproc3::NULLPROC);
      return rpc_nfs3_null_async(rpc, &LibnfsDriver::OnNull, s) == 0;
    };
    for (size_t i = 0; i < slots; ++i) slot[i] = PingSlot{&st, i};
    for (;;) {
      // Fill every free slot; a slot is free once its reply came in.
      for (size_t i = 0; i < slots && st.error == 0 && st.sent < calls; ++i) {
        if (st.start[i] == Clock::time_point{} && !send(&slot[i])) return Fail(EIO);
      }
      if (st.done == st.sent) break;
      std::string error;
      if (!session_->PollOnce(1000, &error)) {
        fmt::print(stderr, "nfsx bench: libnfs: {}\n", error);
        return Fail(EIO);
      }
    }
    if (st.error) return Fail(st.error);
    return {};
  }

 private:
  // libnfs resolves the parent of what it creates or removes: a LOOKUP per directory, and
  // for the mounted directory itself (the path normalizes to "") a GETATTR.
  void CountParentLookup(const std::string& name) {
    uint64_t dirs = 0;
    for (char ch : name) dirs += ch == '/';
    if (dirs == 0) {
      c_->Add(nfsproc3::GETATTR);
    } else {
      c_->Add(nfsproc3::LOOKUP, dirs);
    }
  }

  static void OnNull(rpc_context* /*rpc*/, int status, void* /*data*/, void* private_data) {
    auto* s = static_cast<PingSlot*>(private_data);
    PingState* st = s->state;
    auto ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - st->start[s->index]);
    st->latency->Record(static_cast<uint64_t>(ns.count()));
    st->start[s->index] = Clock::time_point{};
    ++st->done;
    if (status != RPC_STATUS_SUCCESS && st->error == 0) st->error = EIO;
  }

  std::string url_;
  std::unique_ptr<load::Session> session_;
  std::shared_ptr<Counters> c_;
};

}  // namespace

Result<std::unique_ptr<Driver>> MakeLibnfsDriver(const std::string& url, std::string* error) {
  std::unique_ptr<load::Session> s;
  {
    std::lock_guard lock(connect_mu);
    s = load::Session::Connect(url, kTimeoutMs, error);
  }
  if (!s) return Fail(ECONNREFUSED);
  return std::unique_ptr<Driver>(new LibnfsDriver(url, std::move(s), std::make_shared<Counters>()));
}

}  // namespace nfsx::bench
