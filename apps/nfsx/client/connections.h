// One Client per server and export for the whole command: `cp -r` of a tree, or ten URLs on
// one command line, mount once and share the client's caches.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "apps/nfsx/client/nfs_url.h"
#include "nfsx/client.h"

namespace nfsx::app::cli {

// A file on a server, as the library wants it.
struct RemotePath {
  Client* client = nullptr;
  std::string path;  // relative to the export root ("" is the root)
  UrlParts url;      // for the URLs of files below it in messages
};

class Connections {
 public:
  // Finds or makes the client for `url`. On failure *error is the whole message
  // (the library's words when it has them).
  Result<RemotePath> Resolve(std::string_view url, std::string* error);

  // Like Resolve, but on a client that also reaches the file's directory, as removing or
  // creating it needs: the library mounts the deepest directory it can, so the URL of a
  // directory would otherwise be the root of its own mount.
  Result<RemotePath> ResolveWithParent(std::string_view url, std::string* error);

  // Both URLs on one client, as RENAME needs: mounts their common directory when they
  // are on one server but below different mounted directories.
  Result<std::pair<RemotePath, RemotePath>> ResolveTogether(std::string_view a, std::string_view b,
                                                            std::string* error);

  // Sum over every client of this command.
  WireStats TotalStats() const;

 private:
  struct Mount {
    std::string server_key;
    std::string mounted;  // URL path of the directory the client mounted
    bool shareable = true;
    std::unique_ptr<Client> client;
  };
  Result<RemotePath> Resolve(const UrlParts& parts, std::string* error);
  Result<RemotePath> Connect(const UrlParts& parts, std::string* error);
  RemotePath On(const Mount& m, const UrlParts& parts, const std::string& below) const;

  std::vector<Mount> mounts_;
};

}  // namespace nfsx::app::cli
