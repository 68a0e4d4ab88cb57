#include "vfs/fault_fs.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <span>
#include <utility>
#include <vector>

#include "vfs/unsynced_journal.h"

namespace nfsx::vfs {

class FaultInjectingFs::Injector {
 public:
  void Arm(FaultOp op, int error, std::optional<uint64_t> fileid, uint64_t count) {
    if (count == 0) return;
    std::lock_guard lock(mu_);
    rules_.push_back(Rule{op, error, fileid, count});
    Counted(op, fileid.has_value(), +1);
  }

  void Clear() {
    std::lock_guard lock(mu_);
    for (const Rule& r : rules_) Counted(r.op, r.fileid.has_value(), -1);
    rules_.clear();
  }

  // Counts a call; true when some fault for `op` is armed and Fire() must be asked.
  bool Begin(FaultOp op) {
    calls_[Index(op)].fetch_add(1, std::memory_order_relaxed);
    return armed_[Index(op)].load(std::memory_order_relaxed) > 0;
  }

  // Whether Fire() needs the fileids of the call (finding them costs a GetAttr).
  bool WantsFileIds(FaultOp op) const {
    return by_file_[Index(op)].load(std::memory_order_relaxed) > 0;
  }

  // The first armed rule (in arming order) that matches consumes one count and fails the call.
  std::optional<int> Fire(FaultOp op, std::span<const uint64_t> fileids) {
    std::lock_guard lock(mu_);
    for (auto it = rules_.begin(); it != rules_.end(); ++it) {
      if (it->op != op) continue;
      if (it->fileid && std::find(fileids.begin(), fileids.end(), *it->fileid) == fileids.end()) {
        continue;
      }
      const int error = it->error;
      if (it->remaining != kEveryCall && --it->remaining == 0) {
        Counted(op, it->fileid.has_value(), -1);
        rules_.erase(it);
      }
      injected_.fetch_add(1, std::memory_order_relaxed);
      return error;
    }
    return std::nullopt;
  }

  void SetTimeGranularity(uint64_t ns) { granularity_ns_.store(ns, std::memory_order_relaxed); }
  void LimitWrites(size_t bytes) { write_limit_.store(bytes, std::memory_order_relaxed); }
  size_t write_limit() const { return write_limit_.load(std::memory_order_relaxed); }
  void LimitReads(size_t bytes) { read_limit_.store(bytes, std::memory_order_relaxed); }
  // `out` cut to the read limit.
  std::span<std::byte> Limited(std::span<std::byte> out) const {
    size_t limit = read_limit_.load(std::memory_order_relaxed);
    return limit > 0 && out.size() > limit ? out.first(limit) : out;
  }
  void set_journal(std::shared_ptr<UnsyncedWriteJournal> journal) { journal_ = std::move(journal); }
  UnsyncedWriteJournal* journal() const { return journal_.get(); }
  // What a filesystem with the configured clock granularity would report.
  Result<Attr> Coarsen(Result<Attr> attr) const {
    uint64_t g = granularity_ns_.load(std::memory_order_relaxed);
    if (!attr || g == 0) return attr;
    auto cut = [g](Timespec& t) {
      uint64_t ns = static_cast<uint64_t>(t.sec) * 1000000000u + t.nsec;
      ns -= ns % g;
      t.sec = static_cast<int64_t>(ns / 1000000000u);
      t.nsec = static_cast<uint32_t>(ns % 1000000000u);
    };
    cut(attr->atime);
    cut(attr->mtime);
    cut(attr->ctime);
    return attr;
  }

  // A disk that does not answer one kind of call: while held, the next `arrivals` callers
  // wait in Pass() (kEveryCall: all of them) until released; later ones go through.
  class Gate {
   public:
    void Hold(uint64_t arrivals) {
      std::lock_guard lock(mu_);
      to_hold_ = arrivals;
    }
    void Release() {
      {
        std::lock_guard lock(mu_);
        to_hold_ = 0;
        ++releases_;
      }
      released_.notify_all();
    }
    // Whether the next caller would wait.
    bool holding() const {
      std::lock_guard lock(mu_);
      return to_hold_ > 0;
    }
    // Returns once the gate is open to this caller.
    void Pass() {
      std::unique_lock lock(mu_);
      if (to_hold_ == 0) return;
      if (to_hold_ != FaultInjectingFs::kEveryCall) --to_hold_;
      ++waited_;
      const uint64_t releases = releases_;
      released_.wait(lock, [&] { return releases_ != releases; });
    }
    uint64_t waited() const {
      std::lock_guard lock(mu_);
      return waited_;
    }

   private:
    mutable std::mutex mu_;
    std::condition_variable released_;
    uint64_t to_hold_ = 0;   // guarded by mu_
    uint64_t releases_ = 0;  // guarded by mu_
    uint64_t waited_ = 0;    // guarded by mu_
  };
  Gate& reads() { return reads_; }
  Gate& syncs() { return syncs_; }
  Gate& writes() { return writes_; }

  uint64_t calls(FaultOp op) const { return calls_[Index(op)].load(std::memory_order_relaxed); }
  uint64_t injected() const { return injected_.load(std::memory_order_relaxed); }

 private:
  struct Rule {
    FaultOp op;
    int error;
    std::optional<uint64_t> fileid;  // any file when empty
    uint64_t remaining;              // kEveryCall: never runs out
  };

  static size_t Index(FaultOp op) { return static_cast<size_t>(op); }

  // Requires mu_.
  void Counted(FaultOp op, bool by_file, int delta) {
    auto adjust = [delta](std::atomic<uint32_t>& n) {
      if (delta > 0) {
        n.fetch_add(1, std::memory_order_relaxed);
      } else {
        n.fetch_sub(1, std::memory_order_relaxed);
      }
    };
    adjust(armed_[Index(op)]);
    if (by_file) adjust(by_file_[Index(op)]);
  }

  std::mutex mu_;
  std::vector<Rule> rules_;  // guarded by mu_
  // Per operation: armed rules, and those of them limited to a file. Written under mu_, read
  // without it so that unarmed operations never touch the mutex.
  std::array<std::atomic<uint32_t>, kNumFaultOps> armed_{};
  std::array<std::atomic<uint32_t>, kNumFaultOps> by_file_{};
  std::array<std::atomic<uint64_t>, kNumFaultOps> calls_{};
  std::atomic<uint64_t> injected_{0};
  std::atomic<uint64_t> granularity_ns_{0};
  std::atomic<size_t> write_limit_{0};
  std::atomic<size_t> read_limit_{0};
  std::shared_ptr<UnsyncedWriteJournal> journal_;  // set before the first Open
  Gate reads_, syncs_, writes_;
};

namespace {

class FaultOpenFile final : public OpenFile {
 public:
  FaultOpenFile(std::unique_ptr<OpenFile> base, std::shared_ptr<FaultInjectingFs::Injector> inj,
                std::vector<std::byte> handle)
      : base_(std::move(base)), injector_(std::move(inj)), handle_(std::move(handle)) {}

  Result<size_t> Read(uint64_t offset, std::span<std::byte> out) override {
    if (auto error = Check(FaultOp::kRead)) return Fail(*error);
    injector_->reads().Pass();
    return base_->Read(offset, injector_->Limited(out));
  }

  Result<size_t> ReadIfCached(uint64_t offset, std::span<std::byte> out) override {
    if (auto error = Check(FaultOp::kRead)) return Fail(*error);
    if (injector_->reads().holding()) return Fail(EAGAIN);
    return base_->ReadIfCached(offset, injector_->Limited(out));
  }

  Result<size_t> Write(uint64_t offset, std::span<const std::byte> data) override {
    if (auto error = Check(FaultOp::kWrite)) return Fail(*error);
    if (size_t limit = injector_->write_limit(); limit > 0 && data.size() > limit) {
      data = data.first(limit);  // a short write, as pwrite(2) may make
    }
    // Recorded before it happens: a kill in between loses a range nobody was told of.
    if (UnsyncedWriteJournal* j = injector_->journal()) j->Wrote(handle_, offset, data.size());
    Result<size_t> written = base_->Write(offset, data);
    injector_->writes().Pass();  // landed, and the disk is slow to say so
    return written;
  }

  Result<void> Sync(bool data_only) override {
    UnsyncedWriteJournal* j = injector_->journal();
    if (auto error = Check(FaultOp::kSync)) {
      // As a write-back error: what the sync covered is lost, later syncs or not.
      if (j) j->WriteBackFailed(handle_, j->Next());
      injector_->syncs().Pass();  // a failing disk can be slow too
      return Fail(*error);
    }
    // Only writes recorded before the sync began are covered by it.
    const uint64_t before = j ? j->Next() : 0;
    // Held after that point: writes that arrive while a sync waits are not covered by it,
    // as with an fsync(2) that started before them.
    injector_->syncs().Pass();
    Result<void> synced = base_->Sync(data_only);
    if (synced && j) j->Synced(handle_, before);
    return synced;
  }

  Result<Attr> GetAttr() override {
    if (auto error = Check(FaultOp::kGetAttr)) return Fail(*error);
    return injector_->Coarsen(base_->GetAttr());
  }

  Result<void> Close() override {
    const std::optional<int> error = Check(FaultOp::kClose);
    Result<void> closed = base_->Close();
    if (error) return Fail(*error);
    return closed;
  }

  bool writable() const override { return base_->writable(); }

 private:
  std::optional<int> Check(FaultOp op) {
    if (!injector_->Begin(op)) return std::nullopt;
    if (!injector_->WantsFileIds(op)) return injector_->Fire(op, {});
    // Looked up only once a per-file fault exists, so plain use costs no extra GetAttr.
    uint64_t id = fileid_.load(std::memory_order_relaxed);
    if (id == 0) {
      if (Result<Attr> attr = base_->GetAttr()) {
        id = attr->fileid;
        fileid_.store(id, std::memory_order_relaxed);
      }
    }
    if (id == 0) return injector_->Fire(op, {});
    return injector_->Fire(op, std::span<const uint64_t>(&id, 1));
  }

  const std::unique_ptr<OpenFile> base_;
  const std::shared_ptr<FaultInjectingFs::Injector> injector_;
  const std::vector<std::byte> handle_;  // the backend's, when writes are journaled
  std::atomic<uint64_t> fileid_{0};      // 0 until needed
};

}  // namespace

FaultInjectingFs::FaultInjectingFs(std::unique_ptr<Filesystem> base)
    : owned_(std::move(base)), base_(owned_.get()), injector_(std::make_shared<Injector>()) {}

FaultInjectingFs::FaultInjectingFs(Filesystem& base)
    : base_(&base), injector_(std::make_shared<Injector>()) {}

// A call still held would wait for ever (open files outlive the filesystem object).
FaultInjectingFs::~FaultInjectingFs() {
  injector_->reads().Release();
  injector_->syncs().Release();
  injector_->writes().Release();
}

void FaultInjectingFs::FailNext(FaultOp op, int error, uint64_t count) {
  injector_->Arm(op, error, std::nullopt, count);
}

void FaultInjectingFs::FailOnFile(FaultOp op, uint64_t fileid, int error, uint64_t count) {
  injector_->Arm(op, error, fileid, count);
}

void FaultInjectingFs::ClearFaults() { injector_->Clear(); }

void FaultInjectingFs::SetTimeGranularity(uint64_t ns) { injector_->SetTimeGranularity(ns); }

void FaultInjectingFs::LimitWrites(size_t bytes) { injector_->LimitWrites(bytes); }
void FaultInjectingFs::LimitReads(size_t bytes) { injector_->LimitReads(bytes); }

void FaultInjectingFs::HoldReads() { injector_->reads().Hold(kEveryCall); }
void FaultInjectingFs::ReleaseReads() { injector_->reads().Release(); }
uint64_t FaultInjectingFs::reads_held() const { return injector_->reads().waited(); }
void FaultInjectingFs::HoldSyncs(uint64_t count) { injector_->syncs().Hold(count); }
void FaultInjectingFs::ReleaseSyncs() { injector_->syncs().Release(); }
uint64_t FaultInjectingFs::syncs_held() const { return injector_->syncs().waited(); }
void FaultInjectingFs::HoldWrites(uint64_t count) { injector_->writes().Hold(count); }
void FaultInjectingFs::ReleaseWrites() { injector_->writes().Release(); }
uint64_t FaultInjectingFs::writes_held() const { return injector_->writes().waited(); }

Result<UnsyncedWriteJournal::Replayed> FaultInjectingFs::LoseUnsyncedWritesAtRestart(
    const std::string& journal_path) {
  auto journal = UnsyncedWriteJournal::Open(journal_path);
  if (!journal) return std::unexpected(journal.error());
  auto replayed = (*journal)->Replay(*base_);
  if (!replayed) return replayed;
  injector_->set_journal(std::shared_ptr<UnsyncedWriteJournal>(std::move(*journal)));
  return replayed;
}

uint64_t FaultInjectingFs::calls(FaultOp op) const { return injector_->calls(op); }

uint64_t FaultInjectingFs::faults_injected() const { return injector_->injected(); }

std::optional<int> FaultInjectingFs::Check(FaultOp op, std::initializer_list<Node*> nodes) {
  if (!injector_->Begin(op)) return std::nullopt;
  std::array<uint64_t, 2> ids{};
  size_t n = 0;
  if (injector_->WantsFileIds(op)) {
    for (Node* node : nodes) {
      if (node == nullptr || n == ids.size()) continue;
      if (Result<Attr> attr = base_->GetAttr(*node)) ids[n++] = attr->fileid;
    }
  }
  return injector_->Fire(op, std::span<const uint64_t>(ids.data(), n));
}

NodePtr FaultInjectingFs::Root() { return base_->Root(); }

uint64_t FaultInjectingFs::fsid() const { return base_->fsid(); }

bool FaultInjectingFs::persistent() const { return base_->persistent(); }

size_t FaultInjectingFs::EncodeHandle(const Node& node,
                                      std::span<std::byte, kMaxBackendHandle> out) {
  return base_->EncodeHandle(node, out);
}

Result<NodePtr> FaultInjectingFs::DecodeHandle(std::span<const std::byte> handle) {
  constexpr FaultOp kOp = FaultOp::kDecodeHandle;
  if (!injector_->Begin(kOp)) return base_->DecodeHandle(handle);
  // Decoding has no side effects, so it may run before deciding: a per-file fault needs the
  // decoded file to match against.
  Result<NodePtr> node = base_->DecodeHandle(handle);
  uint64_t id = 0;
  if (node && injector_->WantsFileIds(kOp)) {
    if (Result<Attr> attr = base_->GetAttr(**node)) id = attr->fileid;
  }
  const auto ids = id != 0 ? std::span<const uint64_t>(&id, 1) : std::span<const uint64_t>();
  if (std::optional<int> error = injector_->Fire(kOp, ids)) return Fail(*error);
  return node;
}

Result<Attr> FaultInjectingFs::GetAttr(Node& node) {
  if (auto error = Check(FaultOp::kGetAttr, {&node})) return Fail(*error);
  return injector_->Coarsen(base_->GetAttr(node));
}

Result<void> FaultInjectingFs::SetAttr(Node& node, const vfs::SetAttr& attr) {
  if (auto error = Check(FaultOp::kSetAttr, {&node})) return Fail(*error);
  Result<void> done = base_->SetAttr(node, attr);
  if (UnsyncedWriteJournal* j = injector_->journal(); done && j && attr.size) {
    std::array<std::byte, kMaxBackendHandle> buf;
    j->Truncated(std::span(buf).first(base_->EncodeHandle(node, buf)), *attr.size);
  }
  return done;
}

Result<NodePtr> FaultInjectingFs::Lookup(Node& dir, std::string_view name) {
  if (auto error = Check(FaultOp::kLookup, {&dir})) return Fail(*error);
  return base_->Lookup(dir, name);
}

Result<NodePtr> FaultInjectingFs::Parent(Node& dir) {
  if (auto error = Check(FaultOp::kParent, {&dir})) return Fail(*error);
  return base_->Parent(dir);
}

Result<std::string> FaultInjectingFs::ReadLink(Node& node) {
  if (auto error = Check(FaultOp::kReadLink, {&node})) return Fail(*error);
  return base_->ReadLink(node);
}

Result<std::unique_ptr<OpenFile>> FaultInjectingFs::Open(Node& node, bool writable) {
  if (auto error = Check(FaultOp::kOpen, {&node})) return Fail(*error);
  Result<std::unique_ptr<OpenFile>> file = base_->Open(node, writable);
  if (!file) return file;
  std::vector<std::byte> handle;
  if (injector_->journal()) {
    std::array<std::byte, kMaxBackendHandle> buf;
    handle.assign(buf.begin(),
                  buf.begin() + static_cast<ptrdiff_t>(base_->EncodeHandle(node, buf)));
  }
  return std::make_unique<FaultOpenFile>(std::move(*file), injector_, std::move(handle));
}

Result<NodePtr> FaultInjectingFs::Create(Node& dir, std::string_view name, uint32_t mode,
                                         Owner owner, bool exclusive) {
  if (auto error = Check(FaultOp::kCreate, {&dir})) return Fail(*error);
  return base_->Create(dir, name, mode, owner, exclusive);
}

Result<NodePtr> FaultInjectingFs::Mkdir(Node& dir, std::string_view name, uint32_t mode,
                                        Owner owner) {
  if (auto error = Check(FaultOp::kMkdir, {&dir})) return Fail(*error);
  return base_->Mkdir(dir, name, mode, owner);
}

Result<NodePtr> FaultInjectingFs::Symlink(Node& dir, std::string_view name, std::string_view target,
                                          Owner owner) {
  if (auto error = Check(FaultOp::kSymlink, {&dir})) return Fail(*error);
  return base_->Symlink(dir, name, target, owner);
}

Result<NodePtr> FaultInjectingFs::Mknod(Node& dir, std::string_view name, FileType type,
                                        uint32_t mode, uint32_t major, uint32_t minor,
                                        Owner owner) {
  if (auto error = Check(FaultOp::kMknod, {&dir})) return Fail(*error);
  return base_->Mknod(dir, name, type, mode, major, minor, owner);
}

Result<void> FaultInjectingFs::Remove(Node& dir, std::string_view name) {
  if (auto error = Check(FaultOp::kRemove, {&dir})) return Fail(*error);
  return base_->Remove(dir, name);
}

Result<void> FaultInjectingFs::Rmdir(Node& dir, std::string_view name) {
  if (auto error = Check(FaultOp::kRmdir, {&dir})) return Fail(*error);
  return base_->Rmdir(dir, name);
}

Result<void> FaultInjectingFs::Rename(Node& from_dir, std::string_view from_name, Node& to_dir,
                                      std::string_view to_name) {
  if (auto error = Check(FaultOp::kRename, {&from_dir, &to_dir})) return Fail(*error);
  return base_->Rename(from_dir, from_name, to_dir, to_name);
}

Result<void> FaultInjectingFs::Link(Node& file, Node& dir, std::string_view name) {
  if (auto error = Check(FaultOp::kLink, {&file, &dir})) return Fail(*error);
  return base_->Link(file, dir, name);
}

Result<bool> FaultInjectingFs::ReadDir(Node& dir, uint64_t cookie,
                                       const std::function<bool(const DirEntry&)>& emit) {
  if (auto error = Check(FaultOp::kReadDir, {&dir})) return Fail(*error);
  return base_->ReadDir(dir, cookie, emit);
}

Result<FsStat> FaultInjectingFs::StatFs(Node& node) {
  if (auto error = Check(FaultOp::kStatFs, {&node})) return Fail(*error);
  return base_->StatFs(node);
}

Result<void> FaultInjectingFs::SyncDir(Node& dir) {
  if (auto error = Check(FaultOp::kSyncDir, {&dir})) return Fail(*error);
  return base_->SyncDir(dir);
}

}  // namespace nfsx::vfs
