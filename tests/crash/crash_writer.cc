// crash_writer - keeps rewriting one file with data that proves where it came from, and
// fsyncs it, while the test kills the server under it (tests/crash/crash_loop.sh).
//
//   crash_writer --lib URL NAME [--direct] | --path FILE   --log LOG --stop STOPFILE
//                [--blocks N] [--seed S]
//   crash_writer --verify FILE --state "PASS POS" [--blocks N] [--loose]
//
// The file is N blocks of 64 KiB, rewritten in passes: pass p writes blocks 0..N-1 in
// order with pass-p data. Every 4 KiB unit carries a header (magic, pass, unit number)
// and bytes derived from both, so any unit read back says which pass wrote it, or that
// no pass did. After each fsync that succeeds the writer appends "A PASS POS" to LOG:
// blocks below POS hold pass PASS and the others pass PASS-1 (pass 0: never written),
// and that much is now the server's promise. At STOPFILE it fsyncs, closes and logs
// "D PASS POS" once close succeeded. Any failed call ends it with status 1 and "E ..." in
// the log: the mount is hard, so nothing may fail while the server restarts.
//
// Buffered writers read a random block back now and then and compare it with what they
// wrote (read-your-writes must survive the server losing its unsynced data); O_DIRECT
// writers, whose reads go to the server, do so right after an fsync.
//
// --verify checks FILE (the export, read on the server's side) against a state. --loose
// is for a state read off LOG at a crash: the writer fsyncs at least every kMaxBatch
// blocks, so only the kMaxBatch blocks from POS on (cyclically) can have been written
// since; each of their units may hold the acknowledged pass, the next one, or 0xDB where
// the restarted server lost what was never synced (nfsx serve
// --test-lose-unsynced-writes). Every other unit must hold exactly what was acknowledged.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "nfsx/client.h"

namespace {

constexpr size_t kUnit = 4096;
constexpr size_t kBlock = 64 * 1024;
constexpr uint64_t kMagic = 0x48535243'5853464eULL;  // "NFSXCRSH"
constexpr std::byte kLost{0xDB};
constexpr uint64_t kMaxBatch = 32;  // blocks written between two fsyncs, at most

uint64_t Mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  return x ^ (x >> 33);
}

void FillUnit(std::span<std::byte> unit, uint64_t pass, uint64_t index) {
  uint64_t words[3] = {kMagic, pass, index};
  std::memcpy(unit.data(), words, sizeof(words));
  uint64_t state = Mix(pass * 0x9e3779b97f4a7c15ULL + index);
  for (size_t i = sizeof(words); i < unit.size(); i += 8) {
    state = Mix(state + i);
    std::memcpy(unit.data() + i, &state, std::min<size_t>(8, unit.size() - i));
  }
}

void FillBlock(std::span<std::byte> block, uint64_t pass, uint64_t block_index) {
  for (size_t u = 0; u < kBlock / kUnit; ++u) {
    FillUnit(block.subspan(u * kUnit, kUnit), pass, block_index * (kBlock / kUnit) + u);
  }
}

// What a unit holds: the pass that wrote it, 0 for zeros (never written), -1 for the
// 0xDB of a lost range, -2 for anything else.
int64_t Classify(std::span<const std::byte> unit, uint64_t index) {
  if (std::all_of(unit.begin(), unit.end(), [](std::byte b) { return b == std::byte{0}; })) {
    return 0;
  }
  if (std::all_of(unit.begin(), unit.end(), [](std::byte b) { return b == kLost; })) return -1;
  uint64_t words[3];
  std::memcpy(words, unit.data(), sizeof(words));
  if (words[0] != kMagic || words[2] != index) return -2;
  std::vector<std::byte> want(unit.size());
  FillUnit(want, words[1], index);
  return std::memcmp(want.data(), unit.data(), unit.size()) == 0 ? static_cast<int64_t>(words[1])
                                                                 : -2;
}

// The pass a unit must hold in state (pass, pos).
uint64_t Expected(uint64_t pass, uint64_t pos, uint64_t block) {
  return block < pos ? pass : pass - 1;
}

std::string Describe(int64_t c) {
  if (c == -1) return "0xDB (lost at a crash)";
  if (c == -2) return "bytes no pass wrote";
  if (c == 0) return "zeros";
  return "pass " + std::to_string(c);
}

// Checks `data` (the whole block at block_index of a file of `blocks`) against the state;
// returns "" or why not.
std::string CheckBlock(std::span<const std::byte> data, uint64_t block_index, uint64_t blocks,
                       uint64_t pass, uint64_t pos, bool loose) {
  uint64_t want = Expected(pass, pos, block_index);
  bool may_have_changed = loose && (block_index + blocks - pos) % blocks < kMaxBatch;
  for (size_t u = 0; u < kBlock / kUnit; ++u) {
    uint64_t index = block_index * (kBlock / kUnit) + u;
    std::span<const std::byte> unit;
    std::vector<std::byte> zeros(kUnit);
    if ((u + 1) * kUnit <= data.size()) {
      unit = data.subspan(u * kUnit, kUnit);
    } else {
      unit = zeros;  // past the end of the file reads as never written
    }
    int64_t got = Classify(unit, index);
    if (got == static_cast<int64_t>(want)) continue;
    if (may_have_changed && (got == -1 || got == static_cast<int64_t>(want) + 1)) {
      continue;
    }
    return "unit " + std::to_string(index) + " (block " + std::to_string(block_index) + ") holds " +
           Describe(got) + ", expected pass " + std::to_string(want);
  }
  return "";
}

struct Target {
  virtual ~Target() = default;
  virtual std::string Pwrite(std::span<const std::byte> data, uint64_t offset) = 0;
  virtual std::string Pread(std::span<std::byte> out, uint64_t offset, size_t* got) = 0;
  virtual std::string Fsync() = 0;
  virtual std::string Close() = 0;
};

class LibTarget : public Target {
 public:
  LibTarget(std::unique_ptr<nfsx::Client> client, std::unique_ptr<nfsx::File> file)
      : client_(std::move(client)), file_(std::move(file)) {}
  std::string Pwrite(std::span<const std::byte> data, uint64_t offset) override {
    auto r = file_->Pwrite(data, offset);
    if (!r) return nfsx::ErrorString(r.error());
    return *r == data.size() ? "" : "short write of " + std::to_string(*r);
  }
  std::string Pread(std::span<std::byte> out, uint64_t offset, size_t* got) override {
    auto r = file_->Pread(out, offset);
    if (!r) return nfsx::ErrorString(r.error());
    *got = *r;
    return "";
  }
  std::string Fsync() override {
    auto r = file_->Fsync();
    return r ? "" : nfsx::ErrorString(r.error());
  }
  std::string Close() override {
    auto r = file_->Close();
    return r ? "" : nfsx::ErrorString(r.error());
  }

 private:
  std::unique_ptr<nfsx::Client> client_;
  std::unique_ptr<nfsx::File> file_;
};

class PathTarget : public Target {
 public:
  explicit PathTarget(int fd) : fd_(fd) {}
  std::string Pwrite(std::span<const std::byte> data, uint64_t offset) override {
    ssize_t n = pwrite(fd_, data.data(), data.size(), static_cast<off_t>(offset));
    if (n < 0) return std::strerror(errno);
    return static_cast<size_t>(n) == data.size() ? "" : "short write of " + std::to_string(n);
  }
  std::string Pread(std::span<std::byte> out, uint64_t offset, size_t* got) override {
    ssize_t n = pread(fd_, out.data(), out.size(), static_cast<off_t>(offset));
    if (n < 0) return std::strerror(errno);
    *got = static_cast<size_t>(n);
    return "";
  }
  std::string Fsync() override { return fsync(fd_) == 0 ? "" : std::strerror(errno); }
  std::string Close() override { return close(fd_) == 0 ? "" : std::strerror(errno); }

 private:
  int fd_;
};

struct Args {
  std::string url, name, path, log, stop, verify, state;
  bool direct = false, loose = false;
  uint64_t blocks = 128, seed = 1;
};

int Usage() {
  std::fprintf(stderr,
               "usage: crash_writer (--lib URL NAME [--direct] | --path FILE) --log LOG --stop "
               "STOPFILE [--blocks N] [--seed S]\n"
               "       crash_writer --verify FILE --state \"PASS POS\" [--blocks N] [--loose]\n");
  return 2;
}

int Verify(const Args& a) {
  uint64_t pass = 0, pos = 0;
  if (std::sscanf(a.state.c_str(), "%lu %lu", &pass, &pos) != 2) return Usage();
  int fd = open(a.verify.c_str(), O_RDONLY);
  if (fd < 0) {
    // Nothing acknowledged yet may mean no file yet.
    if (errno == ENOENT && pass <= 1 && pos == 0) return 0;
    std::fprintf(stderr, "%s: %s\n", a.verify.c_str(), std::strerror(errno));
    return 1;
  }
  std::vector<std::byte> block(kBlock);
  int status = 0;
  for (uint64_t b = 0; b < a.blocks; ++b) {
    ssize_t n = pread(fd, block.data(), kBlock, static_cast<off_t>(b * kBlock));
    if (n < 0) {
      std::fprintf(stderr, "%s: %s\n", a.verify.c_str(), std::strerror(errno));
      return 1;
    }
    std::string why =
        CheckBlock(std::span(block).first(static_cast<size_t>(n)), b, a.blocks, pass, pos, a.loose);
    if (!why.empty()) {
      std::fprintf(stderr, "%s: state \"%s\": %s\n", a.verify.c_str(), a.state.c_str(),
                   why.c_str());
      status = 1;
    }
  }
  close(fd);
  return status;
}

class Writer {
 public:
  Writer(const Args& a, std::unique_ptr<Target> target, FILE* log)
      : a_(a), target_(std::move(target)), log_(log), rng_(a.seed) {}

  int Run() {
    std::vector<std::byte> block(kBlock);
    uint64_t pass = 1, pos = 0;
    unsigned until_sync = NextBatch();
    while (access(a_.stop.c_str(), F_OK) != 0) {
      FillBlock(block, pass, pos);
      if (auto e = target_->Pwrite(block, pos * kBlock); !e.empty()) return Fail("write", e);
      if (++pos == a_.blocks) {
        ++pass;
        pos = 0;
      }
      if (!a_.direct && rng_() % 4 == 0) {
        if (auto e = ReadBack(pass, pos); !e.empty()) return Fail("read back", e);
      }
      if (--until_sync > 0) continue;
      until_sync = NextBatch();
      if (auto e = target_->Fsync(); !e.empty()) return Fail("fsync", e);
      Log("A", pass, pos);
      if (a_.direct) {
        if (auto e = ReadBack(pass, pos); !e.empty()) return Fail("read back", e);
      }
    }
    if (auto e = target_->Fsync(); !e.empty()) return Fail("final fsync", e);
    if (auto e = target_->Close(); !e.empty()) return Fail("close", e);
    Log("D", pass, pos);
    return 0;
  }

 private:
  unsigned NextBatch() { return 1 + static_cast<unsigned>(rng_() % kMaxBatch); }

  std::string ReadBack(uint64_t pass, uint64_t pos) {
    uint64_t b = rng_() % a_.blocks;
    if (pass == 1 && b >= pos) return "";  // not written yet
    std::vector<std::byte> data(kBlock);
    size_t got = 0;
    if (auto e = target_->Pread(data, b * kBlock, &got); !e.empty()) return e;
    return CheckBlock(std::span(data).first(got), b, a_.blocks, pass, pos, /*loose=*/false);
  }

  void Log(const char* what, uint64_t pass, uint64_t pos) {
    std::fprintf(log_, "%s %lu %lu\n", what, pass, pos);
    std::fflush(log_);
  }

  int Fail(const char* what, const std::string& why) {
    std::fprintf(log_, "E %s: %s\n", what, why.c_str());
    std::fflush(log_);
    std::fprintf(stderr, "crash_writer: %s: %s\n", what, why.c_str());
    return 1;
  }

  const Args& a_;
  std::unique_ptr<Target> target_;
  FILE* log_;
  std::mt19937_64 rng_;
};

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (arg == "--lib") {
      a.url = next();
      a.name = next();
    } else if (arg == "--path") {
      a.path = next();
    } else if (arg == "--direct") {
      a.direct = true;
    } else if (arg == "--log") {
      a.log = next();
    } else if (arg == "--stop") {
      a.stop = next();
    } else if (arg == "--blocks") {
      a.blocks = std::stoull(next());
    } else if (arg == "--seed") {
      a.seed = std::stoull(next());
    } else if (arg == "--verify") {
      a.verify = next();
    } else if (arg == "--state") {
      a.state = next();
    } else if (arg == "--loose") {
      a.loose = true;
    } else {
      return Usage();
    }
  }
  if (a.blocks <= kMaxBatch) return Usage();  // --loose needs blocks the batch cannot reach
  if (!a.verify.empty()) return Verify(a);
  if (a.log.empty() || a.stop.empty() || (a.url.empty() == a.path.empty())) return Usage();

  std::unique_ptr<Target> target;
  if (!a.url.empty()) {
    std::string error;
    auto client = nfsx::Client::Connect(a.url, &error);
    if (!client) {
      std::fprintf(stderr, "crash_writer: %s: %s\n", a.url.c_str(), error.c_str());
      return 1;
    }
    int flags = O_RDWR | O_CREAT | O_TRUNC | (a.direct ? O_DIRECT : 0);
    auto file = (*client)->Open(a.name, flags, 0644);
    if (!file) {
      std::fprintf(stderr, "crash_writer: open %s: %s\n", a.name.c_str(),
                   nfsx::ErrorString(file.error()).c_str());
      return 1;
    }
    target = std::make_unique<LibTarget>(std::move(*client), std::move(*file));
  } else {
    int fd = open(a.path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
      std::fprintf(stderr, "crash_writer: %s: %s\n", a.path.c_str(), std::strerror(errno));
      return 1;
    }
    target = std::make_unique<PathTarget>(fd);
  }
  FILE* log = std::fopen(a.log.c_str(), "a");
  if (!log) {
    std::fprintf(stderr, "crash_writer: %s: %s\n", a.log.c_str(), std::strerror(errno));
    return 1;
  }
  int status = Writer(a, std::move(target), log).Run();
  std::fclose(log);
  return status;
}
