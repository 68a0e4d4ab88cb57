// The public, path-based client API (include/nfsx/client.h) over ClientCore.
#include <fcntl.h>

#include <condition_variable>
#include <deque>
#include <thread>

#include "base/logging.h"
#include "base/path_components.h"
#include "client/client_core.h"

namespace nfsx {
namespace {

using client::ClientCore;
using client::InodePtr;

constexpr int kMaxSymlinks = 40;

// Runs the async forms of the API: blocking operations on worker threads.
class Executor {
 public:
  explicit Executor(int threads) {
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Loop(); });
  }
  ~Executor() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }
  void Post(std::function<void()> task) {
    {
      std::lock_guard lock(mu_);
      tasks_.push_back(std::move(task));
    }
    cv_.notify_one();
  }

 private:
  void Loop() {
    std::unique_lock lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return stop_ || !tasks_.empty(); });
      if (tasks_.empty()) return;
      auto task = std::move(tasks_.front());
      tasks_.pop_front();
      lock.unlock();
      task();
      lock.lock();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

class FileImpl;

class ClientImpl final : public Client {
 public:
  ClientImpl(std::unique_ptr<ClientCore> core, std::string rest)
      : core_(std::move(core)), rest_(std::move(rest)), executor_(4) {}
  ~ClientImpl() override { (void)core_->SyncAll(); }

  const std::string& path_in_export() const override { return rest_; }
  const ClientOptions& options() const override { return core_->options(); }
  ClientCore& core() { return *core_; }

  // Resolves a path from the export root. With `follow_last` a symlink in the
  // last component is followed too.
  Result<InodePtr> Resolve(std::string_view path, bool follow_last, int depth = 0) {
    if (depth > kMaxSymlinks) return Fail(ELOOP);
    InodePtr cur = core_->root();
    std::vector<InodePtr> stack{cur};
    auto parts = PathComponents(path);
    for (size_t i = 0; i < parts.size(); ++i) {
      const std::string& name = parts[i];
      if (name == ".") continue;
      if (name == "..") {
        if (stack.size() > 1) stack.pop_back();
        cur = stack.back();
        continue;
      }
      if (cur->type() != nfs3::NF3DIR) return Fail(ENOTDIR);
      auto next = core_->Lookup(cur, name);
      if (!next) return next;
      bool last = i + 1 == parts.size();
      if ((*next)->type() == nfs3::NF3LNK && (!last || follow_last)) {
        auto target = core_->Readlink(*next);
        if (!target) return std::unexpected(target.error());
        // Relative targets resolve from the link's directory; absolute ones from
        // the export root (the client cannot see past it).
        std::string rebuilt;
        if (target->empty() || target->front() != '/') {
          for (size_t k = 0; k < i; ++k) rebuilt += parts[k] + "/";
        }
        rebuilt += *target;
        for (size_t k = i + 1; k < parts.size(); ++k) rebuilt += "/" + parts[k];
        return Resolve(rebuilt, follow_last, depth + 1);
      }
      cur = *next;
      stack.push_back(cur);
    }
    return cur;
  }

  // The directory that holds `path`'s last component, and that component.
  Result<std::pair<InodePtr, std::string>> Parent(std::string_view path) {
    auto parts = PathComponents(path);
    if (parts.empty()) return Fail(EINVAL);
    std::string name = parts.back();
    if (name == "." || name == "..") return Fail(EINVAL);
    std::string dir;
    for (size_t i = 0; i + 1 < parts.size(); ++i) dir += parts[i] + "/";
    auto d = Resolve(dir, true);
    if (!d) return std::unexpected(d.error());
    if ((*d)->type() != nfs3::NF3DIR) return Fail(ENOTDIR);
    return std::make_pair(*d, name);
  }

  Result<std::unique_ptr<File>> Open(std::string_view path, int flags, uint32_t mode) override;

  Result<Stat> GetAttr(std::string_view path) override {
    auto ino = Resolve(path, true);
    if (!ino) return std::unexpected(ino.error());
    return core_->GetAttr(*ino);
  }
  Result<Stat> Lstat(std::string_view path) override {
    auto ino = Resolve(path, false);
    if (!ino) return std::unexpected(ino.error());
    return core_->GetAttr(*ino);
  }
  Result<void> SetAttr(std::string_view path, const SetAttrs& attrs) override {
    auto ino = Resolve(path, true);
    if (!ino) return std::unexpected(ino.error());
    auto r = core_->SetAttr(*ino, attrs);
    if (!r) return std::unexpected(r.error());
    return {};
  }
  Result<void> Truncate(std::string_view path, uint64_t size) override {
    auto ino = Resolve(path, true);
    if (!ino) return std::unexpected(ino.error());
    if ((*ino)->type() == nfs3::NF3DIR) return Fail(EISDIR);
    return core_->Truncate(*ino, size);
  }
  Result<std::vector<DirEntry>> ReadDir(std::string_view path) override {
    auto ino = Resolve(path, true);
    if (!ino) return std::unexpected(ino.error());
    if ((*ino)->type() != nfs3::NF3DIR) return Fail(ENOTDIR);
    return core_->ReadDir(*ino);
  }
  Result<void> Mkdir(std::string_view path, uint32_t mode) override {
    auto p = Parent(path);
    if (!p) return std::unexpected(p.error());
    auto r = core_->Mkdir(p->first, p->second, mode);
    if (!r) return std::unexpected(r.error());
    return {};
  }
  Result<void> Rmdir(std::string_view path) override {
    auto p = Parent(path);
    if (!p) return std::unexpected(p.error());
    return core_->Rmdir(p->first, p->second);
  }
  Result<void> Unlink(std::string_view path) override {
    auto p = Parent(path);
    if (!p) return std::unexpected(p.error());
    return core_->Remove(p->first, p->second);
  }
  Result<void> Rename(std::string_view from, std::string_view to) override {
    auto a = Parent(from);
    if (!a) return std::unexpected(a.error());
    auto b = Parent(to);
    if (!b) return std::unexpected(b.error());
    return core_->Rename(a->first, a->second, b->first, b->second);
  }
  Result<void> Symlink(std::string_view target, std::string_view link_path) override {
    auto p = Parent(link_path);
    if (!p) return std::unexpected(p.error());
    auto r = core_->Symlink(p->first, p->second, std::string(target));
    if (!r) return std::unexpected(r.error());
    return {};
  }
  Result<std::string> Readlink(std::string_view path) override {
    auto ino = Resolve(path, false);
    if (!ino) return std::unexpected(ino.error());
    if ((*ino)->type() != nfs3::NF3LNK) return Fail(EINVAL);
    return core_->Readlink(*ino);
  }
  Result<void> Link(std::string_view existing, std::string_view new_path) override {
    auto file = Resolve(existing, false);
    if (!file) return std::unexpected(file.error());
    auto p = Parent(new_path);
    if (!p) return std::unexpected(p.error());
    return core_->Link(*file, p->first, p->second);
  }
  Result<FsStat> StatFs() override { return core_->StatFs(); }

  void OpenAsync(std::string_view path, int flags, uint32_t mode,
                 Callback<std::unique_ptr<File>> done) override {
    executor_.Post([this, p = std::string(path), flags, mode, done = std::move(done)] {
      done(Open(p, flags, mode));
    });
  }
  void GetAttrAsync(std::string_view path, Callback<Stat> done) override {
    executor_.Post([this, p = std::string(path), done = std::move(done)] { done(GetAttr(p)); });
  }
  void ReadDirAsync(std::string_view path, Callback<std::vector<DirEntry>> done) override {
    executor_.Post([this, p = std::string(path), done = std::move(done)] { done(ReadDir(p)); });
  }
  Result<void> SyncAll() override { return core_->SyncAll(); }
  WireStats stats() const override { return core_->stats(); }

  Executor& executor() { return executor_; }

 private:
  std::unique_ptr<ClientCore> core_;
  std::string rest_;
  Executor executor_;
};

class FileImpl final : public File {
 public:
  FileImpl(ClientImpl* client, InodePtr ino, int flags)
      : client_(client), core_(client->core()), ino_(std::move(ino)), flags_(flags) {
    ino_->opens.fetch_add(1);
  }
  ~FileImpl() override { (void)Close(); }

  Result<size_t> Read(std::span<std::byte> out) override {
    std::lock_guard lock(pos_mu_);
    auto n = Pread(out, pos_);
    if (n) pos_ += *n;
    return n;
  }
  Result<size_t> Write(std::span<const std::byte> data) override {
    std::lock_guard lock(pos_mu_);
    if (flags_ & O_APPEND) {
      auto at = DoAppend(data);
      if (!at) return std::unexpected(at.error());
      pos_ = *at + data.size();
      return data.size();
    }
    auto n = DoWrite(data, pos_);
    if (n) pos_ += *n;
    return n;
  }
  Result<size_t> Pread(std::span<std::byte> out, uint64_t offset) override {
    if (closed_) return Fail(EBADF);
    if ((flags_ & O_ACCMODE) == O_WRONLY) return Fail(EBADF);
    return core_.Read(ino_, offset, out, flags_ & O_DIRECT, &ra_);
  }
  Result<size_t> Pwrite(std::span<const std::byte> data, uint64_t offset) override {
    if (closed_) return Fail(EBADF);
    // As on Linux, pwrite on an O_APPEND file appends.
    if (flags_ & O_APPEND) {
      auto at = DoAppend(data);
      if (!at) return std::unexpected(at.error());
      return data.size();
    }
    return DoWrite(data, offset);
  }
  Result<uint64_t> Seek(int64_t offset, int whence) override {
    std::lock_guard lock(pos_mu_);
    int64_t base = 0;
    if (whence == SEEK_CUR) base = static_cast<int64_t>(pos_);
    if (whence == SEEK_END) {
      auto st = core_.GetAttr(ino_);
      if (!st) return std::unexpected(st.error());
      base = static_cast<int64_t>(st->size);
    }
    if (whence != SEEK_SET && whence != SEEK_CUR && whence != SEEK_END) return Fail(EINVAL);
    if (base + offset < 0) return Fail(EINVAL);
    pos_ = static_cast<uint64_t>(base + offset);
    return pos_;
  }
  Result<void> Fsync() override {
    if (closed_) return Fail(EBADF);
    return core_.Flush(ino_, true);
  }
  Result<Stat> Fstat() override {
    if (closed_) return Fail(EBADF);
    return core_.GetAttr(ino_);
  }
  Result<void> Ftruncate(uint64_t size) override {
    if (closed_) return Fail(EBADF);
    if ((flags_ & O_ACCMODE) == O_RDONLY) return Fail(EBADF);
    return core_.Truncate(ino_, size);
  }
  Result<void> Close() override {
    if (closed_.exchange(true)) return {};
    Result<void> r;
    // Close-to-open: everything written is on the server's disk before close returns.
    if (core_.options().cto && (flags_ & O_ACCMODE) != O_RDONLY) r = core_.Flush(ino_, true);
    ino_->opens.fetch_sub(1);
    return r;
  }

  // O_DIRECT I/O of one READ or WRITE holds no thread while in flight; the rest (a cache
  // to fill, data to flush first) runs its blocking form on a worker.
  void PreadAsync(std::span<std::byte> out, uint64_t offset, Callback<size_t> done) override {
    if (closed_) return done(Fail(EBADF));
    if ((flags_ & O_ACCMODE) == O_WRONLY) return done(Fail(EBADF));
    ClientCore::IoDone io = std::move(done);
    if ((flags_ & O_DIRECT) && core_.StartReadDirect(ino_, offset, out, io)) return;
    client_->executor().Post(
        [this, out, offset, io = std::make_shared<ClientCore::IoDone>(std::move(io))] {
          (*io)(Pread(out, offset));
        });
  }
  void PwriteAsync(std::span<const std::byte> data, uint64_t offset,
                   Callback<size_t> done) override {
    if (closed_) return done(Fail(EBADF));
    if ((flags_ & O_ACCMODE) == O_RDONLY) return done(Fail(EBADF));
    ClientCore::IoDone io = std::move(done);
    if (DirectWriteMode() && core_.StartWriteDirect(ino_, offset, data, io)) return;
    client_->executor().Post(
        [this, data, offset, io = std::make_shared<ClientCore::IoDone>(std::move(io))] {
          (*io)(Pwrite(data, offset));
        });
  }
  void FsyncAsync(Callback<void> done) override {
    client_->executor().Post([this, done = std::move(done)] { done(Fsync()); });
  }

  std::span<const std::byte> handle() const override { return ino_->fh().view(); }
  uint64_t fileid() const override { return ino_->fileid(); }

 private:
  client::WriteMode WriteModeOf() const {
    if (flags_ & (O_SYNC | O_DSYNC)) return client::WriteMode::kSync;
    if (flags_ & O_DIRECT) return client::WriteMode::kDirect;
    return client::WriteMode::kBuffered;
  }
  // O_DIRECT, and neither O_APPEND nor O_SYNC, which have their own paths.
  bool DirectWriteMode() const {
    return !(flags_ & O_APPEND) && WriteModeOf() == client::WriteMode::kDirect;
  }
  Result<size_t> DoWrite(std::span<const std::byte> data, uint64_t offset) {
    if ((flags_ & O_ACCMODE) == O_RDONLY) return Fail(EBADF);
    return core_.Write(ino_, offset, data, WriteModeOf());
  }
  Result<uint64_t> DoAppend(std::span<const std::byte> data) {
    if ((flags_ & O_ACCMODE) == O_RDONLY) return Fail(EBADF);
    return core_.Append(ino_, data);
  }

  ClientImpl* client_;
  ClientCore& core_;
  InodePtr ino_;
  int flags_;
  std::atomic<bool> closed_{false};
  std::mutex pos_mu_;
  uint64_t pos_ = 0;
  client::ReadAhead ra_;
};

Result<std::unique_ptr<File>> ClientImpl::Open(std::string_view path, int flags, uint32_t mode) {
  InodePtr ino;
  bool created = false;
  if (flags & O_CREAT) {
    auto p = Parent(path);
    if (!p) return std::unexpected(p.error());
    if (!(flags & O_EXCL)) {
      auto existing = core_->Lookup(p->first, p->second);
      if (existing && (*existing)->type() == nfs3::NF3LNK) {
        auto followed = Resolve(path, true);
        if (followed) existing = followed;
      }
      if (existing)
        ino = *existing;
      else if (existing.error().code != ENOENT)
        return std::unexpected(existing.error());
    }
    if (!ino) {
      auto c = core_->Create(p->first, p->second, mode, flags & O_EXCL, false);
      if (!c) return std::unexpected(c.error());
      ino = *c;
      created = true;
    }
  } else {
    auto r = Resolve(path, true);
    if (!r) return std::unexpected(r.error());
    ino = *r;
  }
  bool writing = (flags & O_ACCMODE) != O_RDONLY;
  if (ino->type() == nfs3::NF3DIR && writing) return Fail(EISDIR);
  if (ino->type() != nfs3::NF3REG && ino->type() != nfs3::NF3DIR) {
    if (ino->type() == nfs3::NF3LNK) return Fail(ELOOP);
  }
  if (!created) {
    // Close-to-open: see what other clients did since we last looked.
    if (core_->options().cto) {
      if (auto r = core_->Revalidate(ino); !r) return std::unexpected(r.error());
    }
    uint32_t want = 0;
    if ((flags & O_ACCMODE) != O_WRONLY) want |= nfs3::ACCESS3_READ;
    if (writing) want |= nfs3::ACCESS3_MODIFY;
    if (want && ino->type() == nfs3::NF3REG) {
      auto granted = core_->Access(ino, want);
      if (!granted) return std::unexpected(granted.error());
      if ((*granted & want) != want) return Fail(EACCES);
    }
    if ((flags & O_TRUNC) && writing && ino->type() == nfs3::NF3REG) {
      if (auto t = core_->Truncate(ino, 0); !t) return std::unexpected(t.error());
    }
  }
  return std::unique_ptr<File>(new FileImpl(this, ino, flags));
}

}  // namespace

Result<std::unique_ptr<Client>> Client::Connect(std::string_view url, std::string* error) {
  return Connect(url, ClientOptions{}, error);
}

Result<std::unique_ptr<Client>> Client::Connect(std::string_view url, ClientOptions options,
                                                std::string* error) {
  auto parsed = client::ParseNfsUrl(url, options, error);
  if (!parsed) return std::unexpected(parsed.error());
  std::string rest;
  auto core = ClientCore::Mount(*parsed, &rest, error);
  if (!core) return std::unexpected(core.error());
  return std::unique_ptr<Client>(new ClientImpl(std::move(*core), std::move(rest)));
}

}  // namespace nfsx
