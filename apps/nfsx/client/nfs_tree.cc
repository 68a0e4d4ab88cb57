// The NFS side of a copy, through the client library.
#include <fcntl.h>

#include <algorithm>

#include "apps/nfsx/client/tree.h"

namespace nfsx::app::cli {
namespace {

class FileSource final : public Source {
 public:
  explicit FileSource(std::unique_ptr<File> file) : file_(std::move(file)) {}
  Result<size_t> Read(std::span<std::byte> out) override { return file_->Read(out); }

 private:
  std::unique_ptr<File> file_;
};

class FileSink final : public Sink {
 public:
  explicit FileSink(std::unique_ptr<File> file) : file_(std::move(file)) {}
  Result<void> Write(std::span<const std::byte> data) override {
    while (!data.empty()) {
      auto n = file_->Write(data);
      if (!n) return std::unexpected(n.error());
      if (*n == 0) return Fail(EIO);  // no progress: never spin
      data = data.subspan(*n);
    }
    return {};
  }
  Result<void> Close() override { return file_->Close(); }

 private:
  std::unique_ptr<File> file_;
};

class NfsTree final : public Tree {
 public:
  NfsTree(Client* client, std::string identity) : client_(client), identity_(std::move(identity)) {}

  const std::string& identity() const override { return identity_; }

  Result<Stat> GetAttr(std::string_view path, bool follow) override {
    return follow ? client_->GetAttr(path) : client_->Lstat(path);
  }

  // READDIRPLUS brings each entry's attributes: no LOOKUP per entry to learn its type.
  Result<std::vector<TreeEntry>> List(std::string_view dir) override {
    auto listed = client_->ReadDir(dir);
    if (!listed) return std::unexpected(listed.error());
    std::vector<TreeEntry> entries;
    for (DirEntry& e : *listed) {
      if (e.name != "." && e.name != "..") {
        entries.push_back(TreeEntry{std::move(e.name), std::move(e.attr)});
      }
    }
    std::sort(entries.begin(), entries.end(),
              [](const TreeEntry& a, const TreeEntry& b) { return a.name < b.name; });
    return entries;
  }

  Result<std::unique_ptr<Source>> OpenRead(std::string_view path) override {
    auto file = client_->Open(path, O_RDONLY);
    if (!file) return std::unexpected(file.error());
    return std::unique_ptr<Source>(new FileSource(std::move(*file)));
  }

  Result<std::unique_ptr<Sink>> OpenWrite(std::string_view path, uint32_t mode) override {
    auto file = client_->Open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
    if (!file) return std::unexpected(file.error());
    return std::unique_ptr<Sink>(new FileSink(std::move(*file)));
  }

  Result<void> Mkdir(std::string_view path, uint32_t mode) override {
    return client_->Mkdir(path, mode);
  }
  Result<std::string> Readlink(std::string_view path) override { return client_->Readlink(path); }
  Result<void> Symlink(std::string_view target, std::string_view path) override {
    return client_->Symlink(target, path);
  }
  Result<void> Unlink(std::string_view path) override { return client_->Unlink(path); }

  Result<void> SetMode(std::string_view path, uint32_t mode) override {
    SetAttrs a;
    a.mode = mode;
    return client_->SetAttr(path, a);
  }
  Result<void> SetOwner(std::string_view path, uint32_t uid, uint32_t gid) override {
    SetAttrs a;
    a.uid = uid;
    a.gid = gid;
    return client_->SetAttr(path, a);
  }
  Result<void> SetTimes(std::string_view path, Timestamp atime, Timestamp mtime) override {
    SetAttrs a;
    a.atime_how = a.mtime_how = SetAttrs::Time::kGiven;
    a.atime = atime;
    a.mtime = mtime;
    return client_->SetAttr(path, a);
  }

 private:
  Client* client_;
  std::string identity_;
};

}  // namespace

std::unique_ptr<Tree> MakeNfsTree(Client* client, std::string identity) {
  return std::make_unique<NfsTree>(client, std::move(identity));
}

}  // namespace nfsx::app::cli
