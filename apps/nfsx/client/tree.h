// What `cp` needs of either side of a copy: a local directory tree (POSIX) or a tree
// on an NFS server (the client library). The copy logic is written once against this.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "nfsx/client.h"

namespace nfsx::app::cli {

// A file open for reading, read front to back.
class Source {
 public:
  virtual ~Source() = default;
  // 0 at the end.
  virtual Result<size_t> Read(std::span<std::byte> out) = 0;
};

// A file open for writing, written front to back.
class Sink {
 public:
  virtual ~Sink() = default;
  // All of `data`, or an error.
  virtual Result<void> Write(std::span<const std::byte> data) = 0;
  // Must be called: on NFS this is where the data is committed, and where it fails if the
  // server lost it.
  virtual Result<void> Close() = 0;
};

struct TreeEntry {
  std::string name;
  std::optional<Stat> attr;  // lstat(2) of it, when listing it told that for free
};

class Tree {
 public:
  virtual ~Tree() = default;

  // Trees with equal identities see the same files: (fsid, fileid) pairs compare.
  virtual const std::string& identity() const = 0;

  // `follow`: a symlink in the last component is followed (stat) or not (lstat).
  virtual Result<Stat> GetAttr(std::string_view path, bool follow) = 0;
  // A directory's entries, without "." and "..", sorted by name.
  virtual Result<std::vector<TreeEntry>> List(std::string_view dir) = 0;
  virtual Result<std::unique_ptr<Source>> OpenRead(std::string_view path) = 0;
  // Creates (with `mode`) or truncates.
  virtual Result<std::unique_ptr<Sink>> OpenWrite(std::string_view path, uint32_t mode) = 0;
  virtual Result<void> Mkdir(std::string_view path, uint32_t mode) = 0;
  virtual Result<std::string> Readlink(std::string_view path) = 0;
  virtual Result<void> Symlink(std::string_view target, std::string_view path) = 0;
  // Removes a non-directory.
  virtual Result<void> Unlink(std::string_view path) = 0;

  // For cp -p; these follow symlinks, so callers do not use them on links.
  virtual Result<void> SetMode(std::string_view path, uint32_t mode) = 0;
  virtual Result<void> SetOwner(std::string_view path, uint32_t uid, uint32_t gid) = 0;
  virtual Result<void> SetTimes(std::string_view path, Timestamp atime, Timestamp mtime) = 0;
};

// The local filesystem; paths are as the user wrote them (relative to the cwd or absolute).
std::unique_ptr<Tree> MakeLocalTree();

// The export `client` mounted; paths are relative to its root. `identity` names the server.
std::unique_ptr<Tree> MakeNfsTree(Client* client, std::string identity);

// A file in a tree, and how to name it in messages.
struct Location {
  Tree* tree = nullptr;
  std::string path;
  std::string display;  // a local path or a URL, as the user wrote it or derived from it

  Location Child(std::string_view name) const;
};

}  // namespace nfsx::app::cli
