#include "apps/nfsx/client/connections.h"

#include <fmt/format.h>

#include <cstring>

#include "apps/nfsx/client/path_util.h"

namespace nfsx::app::cli {

RemotePath Connections::On(const Mount& m, const UrlParts& parts, const std::string& below) const {
  // The client's root is the directory it mounted: paths below that are what it takes.
  return RemotePath{m.client.get(), NormalizePath(below), parts};
}

Result<RemotePath> Connections::Connect(const UrlParts& parts, std::string* error) {
  std::string why;
  auto client = Client::Connect(BuildNfsUrl(parts), &why);
  if (!client) {
    *error = why.empty() ? std::string(std::strerror(client.error().code)) : why;
    return std::unexpected(client.error());
  }
  // The library mounted a prefix of the path and tells the rest; later URLs below that
  // prefix share this client. Should it ever spell the rest differently, share nothing.
  auto mounted = PathWithoutTail(parts.path, (*client)->path_in_export());
  mounts_.push_back(
      Mount{parts.ServerKey(), mounted.value_or(""), mounted.has_value(), std::move(*client)});
  const Mount& m = mounts_.back();
  return RemotePath{m.client.get(), m.client->path_in_export(), parts};
}

Result<RemotePath> Connections::Resolve(std::string_view url, std::string* error) {
  auto parts = SplitNfsUrl(url);
  if (!parts) {
    *error = "not a valid nfs:// URL";
    return Fail(EINVAL);
  }
  return Resolve(*parts, error);
}

Result<RemotePath> Connections::Resolve(const UrlParts& parts, std::string* error) {
  for (const Mount& m : mounts_) {
    if (!m.shareable || m.server_key != parts.ServerKey()) continue;
    if (auto below = PathBelow(m.mounted, parts.path)) return On(m, parts, *below);
  }
  return Connect(parts, error);
}

Result<RemotePath> Connections::ResolveWithParent(std::string_view url, std::string* error) {
  auto parts = SplitNfsUrl(url);
  if (!parts) {
    *error = "not a valid nfs:// URL";
    return Fail(EINVAL);
  }
  // Through the parent first: one mount serves the file and its siblings.
  if (std::string name = BaseName(parts->path); !name.empty()) {
    UrlParts parent = *parts;
    parent.path = DirName(parts->path);
    auto above = Resolve(parent, error);
    if (above) return RemotePath{above->client, JoinPath(above->path, name), *parts};
    int err = above.error().code;
    // Only a refusal to mount the parent says anything about the URL itself; a server that
    // cannot be reached is not worth a second wait.
    if (err != ENOENT && err != EACCES && err != EPERM && err != ENOTDIR) return above;
  }
  // The parent cannot be mounted: the URL may be an export's root.
  auto direct = Resolve(*parts, error);
  if (!direct || !direct->path.empty()) return direct;
  *error = "is the root of an export";
  return Fail(EBUSY);
}

Result<std::pair<RemotePath, RemotePath>> Connections::ResolveTogether(std::string_view a,
                                                                       std::string_view b,
                                                                       std::string* error) {
  auto pa = SplitNfsUrl(a);
  auto pb = SplitNfsUrl(b);
  if (!pa || !pb) {
    *error = "not a valid nfs:// URL";
    return Fail(EINVAL);
  }
  if (pa->ServerKey() != pb->ServerKey()) {
    *error = "the URLs name different servers or options; RENAME works within one export";
    return Fail(EXDEV);
  }
  // The directory both live in, so that one mount reaches both.
  std::vector<std::string> ca = SplitPath(pa->path), cb = SplitPath(pb->path);
  UrlParts common = *pa;
  common.path = "/";
  for (size_t i = 0; i + 1 < ca.size() && i + 1 < cb.size() && ca[i] == cb[i]; ++i) {
    common.path = JoinPath(common.path, ca[i]);
  }
  const Mount* mount = nullptr;
  for (const Mount& m : mounts_) {
    if (m.shareable && m.server_key == common.ServerKey() && PathBelow(m.mounted, common.path)) {
      mount = &m;
    }
  }
  if (!mount) {
    auto connected = Connect(common, error);
    if (!connected) return std::unexpected(connected.error());
    mount = &mounts_.back();
    if (!mount->shareable) {
      *error = "cannot tell which export the URLs are in";
      return Fail(EXDEV);
    }
  }
  return std::make_pair(On(*mount, *pa, *PathBelow(mount->mounted, pa->path)),
                        On(*mount, *pb, *PathBelow(mount->mounted, pb->path)));
}

WireStats Connections::TotalStats() const {
  WireStats total;
  for (const Mount& m : mounts_) {
    WireStats s = m.client->stats();
    total.rpc_calls += s.rpc_calls;
    total.retransmits += s.retransmits;
    total.reconnects += s.reconnects;
    for (size_t i = 0; i < std::size(total.nfs_calls); ++i) total.nfs_calls[i] += s.nfs_calls[i];
    total.write_bytes += s.write_bytes;
    total.read_bytes += s.read_bytes;
    total.read_bytes_landed += s.read_bytes_landed;
    total.resent_bytes += s.resent_bytes;
    total.commits_ahead += s.commits_ahead;
    total.invalidations += s.invalidations;
  }
  return total;
}

}  // namespace nfsx::app::cli
