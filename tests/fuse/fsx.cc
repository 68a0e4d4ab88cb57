// fsx-style data-integrity exerciser: random reads, writes, truncates, mmap
// reads and writes, O_APPEND writes, O_DIRECT reads and writes, fsyncs and
// reopens on one file, every byte read checked against an in-memory model.
//
//   fsx [--seed N] [--ops N] [--max-size BYTES] [--max-op BYTES] [--no-mmap]
//       [--no-direct] [--no-append] [--save-model PATH] [--verbose] FILE
//
// Defaults come from NFSX_FSX_OPS and NFSX_FSX_SEED when set (so a test suite
// can run longer without editing it). The seed is printed first; the same seed
// and options replay the same operations. On a mismatch it prints the failing
// operation, where the data differs, and the operations before it; exit 1.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <random>
#include <string>
#include <vector>

namespace {

struct Config {
  uint64_t seed = 0;
  long ops = 50000;
  size_t max_size = 256 * 1024;
  size_t max_op = 64 * 1024;
  bool mmap = true;
  bool direct = true;
  bool append = true;
  bool verbose = false;
  std::string file;
  std::string save_model;  // where to write the expected final contents
};

enum Op {
  kRead,
  kWrite,
  kMapRead,
  kMapWrite,
  kTruncate,
  kAppend,
  kDirectRead,
  kDirectWrite,
  kFsync,
  kReopen,
  kNumOps
};
const char* const kOpNames[] = {"read",   "write",       "mapread",      "mapwrite", "truncate",
                                "append", "direct-read", "direct-write", "fsync",    "reopen"};
const int kWeights[] = {20, 20, 8, 8, 8, 8, 4, 4, 2, 2};

class Fsx {
 public:
  explicit Fsx(const Config& c)
      : c_(c), rng_(c.seed), page_(static_cast<size_t>(sysconf(_SC_PAGESIZE))) {}

  int Run() {
    std::printf("fsx: seed %" PRIu64 ", %ld operations, file %s, max size %zu, max op %zu\n",
                c_.seed, c_.ops, c_.file.c_str(), c_.max_size, c_.max_op);
    std::fflush(stdout);
    if (!Open(O_CREAT | O_TRUNC)) return 1;
    auto start = std::chrono::steady_clock::now();
    long counts[kNumOps] = {};
    for (op_no_ = 1; op_no_ <= c_.ops; ++op_no_) {
      Op op = Pick();
      if (!Do(op)) return Fail();
      ++counts[op];
      if (!CheckSize()) return Fail();
    }
    --op_no_;
    if (!CheckAll("final read") || !Open(0) || !CheckAll("read after reopen")) return Fail();
    Close();
    if (!c_.save_model.empty()) {
      FILE* f = std::fopen(c_.save_model.c_str(), "wb");
      if (!f || std::fwrite(model_.data(), 1, model_.size(), f) != model_.size()) {
        std::printf("fsx: cannot write %s\n", c_.save_model.c_str());
        return 1;
      }
      std::fclose(f);
    }
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("fsx: PASSED %ld operations in %.1f s, 0 mismatches (", c_.ops, secs);
    for (int i = 0; i < kNumOps; ++i)
      std::printf("%s%s %ld", i ? ", " : "", kOpNames[i], counts[i]);
    std::printf(")\n");
    return 0;
  }

 private:
  Op Pick() {
    for (;;) {
      int total = 0;
      for (int w : kWeights) total += w;
      int r = static_cast<int>(rng_() % static_cast<uint64_t>(total));
      int op = 0;
      while (r >= kWeights[op]) r -= kWeights[op++];
      if ((op == kMapRead || op == kMapWrite) && !c_.mmap) continue;
      if ((op == kDirectRead || op == kDirectWrite) && !c_.direct) continue;
      if (op == kAppend && !c_.append) continue;
      return static_cast<Op>(op);
    }
  }

  uint64_t Rand(uint64_t n) { return n ? rng_() % n : 0; }

  bool Open(int extra) {
    Close();
    fd_ = open(c_.file.c_str(), O_RDWR | extra, 0644);
    afd_ = open(c_.file.c_str(), O_RDWR | O_APPEND);
    dfd_ = c_.direct ? open(c_.file.c_str(), O_RDWR | O_DIRECT) : -1;
    if (fd_ < 0 || afd_ < 0 || (c_.direct && dfd_ < 0)) {
      Note("open %s: %s", c_.file.c_str(), std::strerror(errno));
      return false;
    }
    return true;
  }

  void Close() {
    for (int* fd : {&fd_, &afd_, &dfd_}) {
      if (*fd >= 0) close(*fd);
      *fd = -1;
    }
  }

  template <class... A>
  void Note(const char* fmt, A... a) {
    char buf[512];
    std::snprintf(buf, sizeof(buf), fmt, a...);
    what_ = buf;
  }

  void Log(const std::string& s) {
    history_.push_back(std::to_string(op_no_) + ": " + s);
    if (history_.size() > 30) history_.pop_front();
    if (c_.verbose) std::printf("%ld: %s\n", op_no_, s.c_str());
  }

  std::vector<uint8_t> Data(size_t len) {
    std::vector<uint8_t> d(len);
    // Bytes that say which operation wrote them, so a stale byte is recognisable.
    uint8_t tag = static_cast<uint8_t>(op_no_ * 31 + 7);
    for (size_t i = 0; i < len; ++i) d[i] = static_cast<uint8_t>(tag + (rng_() & 0x0f) * 16 + i);
    return d;
  }

  bool Compare(const uint8_t* got, uint64_t off, size_t len, const char* how) {
    for (size_t i = 0; i < len; ++i) {
      if (got[i] == model_[off + i]) continue;
      char buf[1024];
      int n = std::snprintf(buf, sizeof(buf),
                            "%s: mismatch at offset %" PRIu64 " (op range %" PRIu64
                            "+%zu, file "
                            "size %zu)\n  expected:",
                            how, off + i, off, len, model_.size());
      for (size_t k = i; k < std::min(len, i + 16); ++k) {
        n += std::snprintf(buf + n, sizeof(buf) - static_cast<size_t>(n), " %02x", model_[off + k]);
      }
      n += std::snprintf(buf + n, sizeof(buf) - static_cast<size_t>(n), "\n  got:     ");
      for (size_t k = i; k < std::min(len, i + 16); ++k) {
        n += std::snprintf(buf + n, sizeof(buf) - static_cast<size_t>(n), " %02x", got[k]);
      }
      what_ = buf;
      return false;
    }
    return true;
  }

  bool PreadAll(int fd, uint8_t* out, size_t len, uint64_t off, size_t* got) {
    *got = 0;
    while (*got < len) {
      ssize_t n = pread(fd, out + *got, len - *got, static_cast<off_t>(off + *got));
      if (n < 0) {
        Note("pread %" PRIu64 "+%zu: %s", off, len, std::strerror(errno));
        return false;
      }
      if (n == 0) break;
      *got += static_cast<size_t>(n);
    }
    return true;
  }

  bool PwriteAll(int fd, const uint8_t* data, size_t len, uint64_t off) {
    size_t done = 0;
    while (done < len) {
      ssize_t n = pwrite(fd, data + done, len - done, static_cast<off_t>(off + done));
      if (n <= 0) {
        Note("pwrite %" PRIu64 "+%zu: %s", off, len, n < 0 ? std::strerror(errno) : "wrote 0");
        return false;
      }
      done += static_cast<size_t>(n);
    }
    return true;
  }

  bool DoRead(int fd, const char* how) {
    uint64_t size = model_.size();
    // Mostly inside the file, sometimes across or past its end.
    uint64_t off = Rand(size + size / 8 + 1);
    size_t len = static_cast<size_t>(Rand(c_.max_op) + 1);
    Log(std::string(how) + " " + std::to_string(off) + "+" + std::to_string(len));
    std::vector<uint8_t> buf(len);
    size_t got;
    if (!PreadAll(fd, buf.data(), len, off, &got)) return false;
    size_t want = off >= size ? 0 : static_cast<size_t>(std::min<uint64_t>(len, size - off));
    if (got != want) {
      Note("%s %" PRIu64 "+%zu: read %zu bytes, expected %zu (file size %" PRIu64 ")", how, off,
           len, got, want, size);
      return false;
    }
    return Compare(buf.data(), off, got, how);
  }

  bool DoWrite(int fd, const char* how) {
    uint64_t off = Rand(c_.max_size);
    size_t len = static_cast<size_t>(std::min<uint64_t>(Rand(c_.max_op) + 1, c_.max_size - off));
    Log(std::string(how) + " " + std::to_string(off) + "+" + std::to_string(len));
    auto d = Data(len);
    if (!PwriteAll(fd, d.data(), len, off)) return false;
    if (model_.size() < off + len) model_.resize(off + len, 0);
    std::copy(d.begin(), d.end(), model_.begin() + static_cast<ptrdiff_t>(off));
    return true;
  }

  bool DoMapRead() {
    uint64_t size = model_.size();
    if (size == 0) return true;
    uint64_t off = Rand(size);
    size_t len = static_cast<size_t>(std::min<uint64_t>(Rand(c_.max_op) + 1, size - off));
    Log("mapread " + std::to_string(off) + "+" + std::to_string(len));
    uint64_t base = off / page_ * page_;
    size_t maplen = static_cast<size_t>(off + len - base);
    void* p = mmap(nullptr, maplen, PROT_READ, MAP_SHARED, fd_, static_cast<off_t>(base));
    if (p == MAP_FAILED) {
      Note("mmap read %" PRIu64 "+%zu: %s", base, maplen, std::strerror(errno));
      return false;
    }
    bool ok = Compare(static_cast<const uint8_t*>(p) + (off - base), off, len, "mapread");
    munmap(p, maplen);
    return ok;
  }

  bool DoMapWrite() {
    uint64_t off = Rand(c_.max_size);
    size_t len = static_cast<size_t>(std::min<uint64_t>(Rand(c_.max_op) + 1, c_.max_size - off));
    Log("mapwrite " + std::to_string(off) + "+" + std::to_string(len));
    if (off + len > model_.size()) {
      // A mapping cannot extend a file: grow it first, as fsx does.
      if (ftruncate(fd_, static_cast<off_t>(off + len)) != 0) {
        Note("ftruncate before mapwrite: %s", std::strerror(errno));
        return false;
      }
      model_.resize(off + len, 0);
    }
    uint64_t base = off / page_ * page_;
    size_t maplen = static_cast<size_t>(off + len - base);
    void* p =
        mmap(nullptr, maplen, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, static_cast<off_t>(base));
    if (p == MAP_FAILED) {
      Note("mmap write %" PRIu64 "+%zu: %s", base, maplen, std::strerror(errno));
      return false;
    }
    auto d = Data(len);
    std::memcpy(static_cast<uint8_t*>(p) + (off - base), d.data(), len);
    std::copy(d.begin(), d.end(), model_.begin() + static_cast<ptrdiff_t>(off));
    // Half the time msync; otherwise the pages are written back whenever the kernel likes.
    bool ok = true;
    if (rng_() & 1) {
      if (msync(p, maplen, MS_SYNC) != 0) {
        Note("msync: %s", std::strerror(errno));
        ok = false;
      }
    }
    munmap(p, maplen);
    return ok;
  }

  bool DoTruncate() {
    uint64_t size = Rand(c_.max_size + 1);
    Log("truncate " + std::to_string(model_.size()) + " -> " + std::to_string(size));
    if (ftruncate(fd_, static_cast<off_t>(size)) != 0) {
      Note("ftruncate %" PRIu64 ": %s", size, std::strerror(errno));
      return false;
    }
    model_.resize(size, 0);
    return true;
  }

  bool DoAppend() {
    if (model_.size() >= c_.max_size) return DoTruncate();
    size_t len = static_cast<size_t>(
        std::min<uint64_t>(Rand(c_.max_op / 4) + 1, c_.max_size - model_.size()));
    Log("append " + std::to_string(len) + " at " + std::to_string(model_.size()));
    auto d = Data(len);
    ssize_t n = write(afd_, d.data(), len);
    if (n != static_cast<ssize_t>(len)) {
      Note("append %zu: %s", len, n < 0 ? std::strerror(errno) : "short write");
      return false;
    }
    model_.insert(model_.end(), d.begin(), d.end());
    return true;
  }

  bool DoFsync() {
    Log("fsync");
    if (fsync(fd_) != 0) {
      Note("fsync: %s", std::strerror(errno));
      return false;
    }
    return true;
  }

  bool DoReopen() {
    Log("close and reopen");
    return Open(0);
  }

  bool Do(Op op) {
    switch (op) {
      case kRead:
        return DoRead(fd_, "read");
      case kWrite:
        return DoWrite(fd_, "write");
      case kMapRead:
        return DoMapRead();
      case kMapWrite:
        return DoMapWrite();
      case kTruncate:
        return DoTruncate();
      case kAppend:
        return DoAppend();
      case kDirectRead:
        return DoRead(dfd_, "direct-read");
      case kDirectWrite:
        return DoWrite(dfd_, "direct-write");
      case kFsync:
        return DoFsync();
      case kReopen:
        return DoReopen();
      case kNumOps:
        break;
    }
    return false;
  }

  bool CheckSize() {
    struct stat st;
    if (fstat(fd_, &st) != 0) {
      Note("fstat: %s", std::strerror(errno));
      return false;
    }
    if (static_cast<uint64_t>(st.st_size) != model_.size()) {
      Note("file size %lld, expected %zu", static_cast<long long>(st.st_size), model_.size());
      return false;
    }
    return true;
  }

  bool CheckAll(const char* how) {
    Log(how);
    std::vector<uint8_t> buf(model_.size() + 1);
    size_t got;
    if (!PreadAll(fd_, buf.data(), buf.size(), 0, &got)) return false;
    if (got != model_.size()) {
      Note("%s: %zu bytes, expected %zu", how, got, model_.size());
      return false;
    }
    return Compare(buf.data(), 0, got, how);
  }

  int Fail() {
    std::printf("fsx: FAILED at operation %ld of %ld (seed %" PRIu64 "): %s\n", op_no_, c_.ops,
                c_.seed, what_.c_str());
    std::printf("fsx: the last operations:\n");
    for (const std::string& h : history_) std::printf("  %s\n", h.c_str());
    std::printf("fsx: replay with: fsx --seed %" PRIu64
                " --ops %ld --max-size %zu --max-op %zu%s%s%s %s\n",
                c_.seed, c_.ops, c_.max_size, c_.max_op, c_.mmap ? "" : " --no-mmap",
                c_.direct ? "" : " --no-direct", c_.append ? "" : " --no-append", c_.file.c_str());
    std::fflush(stdout);
    return 1;
  }

  Config c_;
  std::mt19937_64 rng_;
  size_t page_;
  int fd_ = -1, afd_ = -1, dfd_ = -1;
  long op_no_ = 0;
  std::vector<uint8_t> model_;
  std::string what_;
  std::deque<std::string> history_;
};

int Usage() {
  std::fprintf(stderr,
               "usage: fsx [--seed N] [--ops N] [--max-size BYTES] [--max-op BYTES] [--no-mmap] "
               "[--no-direct] [--no-append] [--save-model PATH] [--verbose] FILE\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  Config c;
  if (const char* s = std::getenv("NFSX_FSX_OPS")) c.ops = std::atol(s);
  if (const char* s = std::getenv("NFSX_FSX_SEED")) {
    c.seed = std::strtoull(s, nullptr, 0);
  } else {
    c.seed = static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count()) ^
             static_cast<uint64_t>(getpid());
  }
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    const char* v = nullptr;
    if (a == "--seed" && (v = value())) {
      c.seed = std::strtoull(v, nullptr, 0);
    } else if (a == "--ops" && (v = value())) {
      c.ops = std::atol(v);
    } else if (a == "--max-size" && (v = value())) {
      c.max_size = std::strtoull(v, nullptr, 0);
    } else if (a == "--max-op" && (v = value())) {
      c.max_op = std::strtoull(v, nullptr, 0);
    } else if (a == "--save-model" && (v = value())) {
      c.save_model = v;
    } else if (a == "--no-mmap") {
      c.mmap = false;
    } else if (a == "--no-direct") {
      c.direct = false;
    } else if (a == "--no-append") {
      c.append = false;
    } else if (a == "--verbose") {
      c.verbose = true;
    } else if (!a.empty() && a[0] != '-' && c.file.empty()) {
      c.file = a;
    } else {
      return Usage();
    }
  }
  if (c.file.empty() || c.max_size == 0 || c.max_op == 0) return Usage();
  return Fsx(c).Run();
}
