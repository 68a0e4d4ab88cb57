#include "tools/libnfs-load/session.h"

#include <fmt/format.h>
#include <nfsc/libnfs.h>
#include <poll.h>

#include <cerrno>
#include <cstring>

namespace nfsx::load {

std::unique_ptr<Session> Session::Connect(const std::string& url_text, int timeout_ms,
                                          std::string* error) {
  nfs_context* nfs = nfs_init_context();
  if (!nfs) {
    *error = "nfs_init_context failed";
    return nullptr;
  }
  std::unique_ptr<Session> session(new Session(nfs));
  // Reconnecting would hide a server that dropped us; the URL may still ask for it.
  nfs_set_autoreconnect(nfs, 0);
  nfs_set_timeout(nfs, timeout_ms);
  nfs_url* url = nfs_parse_url_dir(nfs, url_text.c_str());
  if (!url) {
    *error = fmt::format("bad URL {}: {}", url_text, nfs_get_error(nfs));
    return nullptr;
  }
  std::string server = url->server ? url->server : "";
  std::string path = url->path ? url->path : "";
  nfs_destroy_url(url);
  if (server.empty() || path.empty()) {
    *error = fmt::format("URL {} names no server or no path", url_text);
    return nullptr;
  }
  if (nfs_mount(nfs, server.c_str(), path.c_str()) != 0) {
    *error = fmt::format("mount {}:{} failed: {}", server, path, nfs_get_error(nfs));
    return nullptr;
  }
  return session;
}

Session::~Session() { nfs_destroy_context(nfs_); }

std::string Session::last_error() const {
  const char* e = nfs_get_error(nfs_);
  return e ? e : "";
}

bool Session::PollOnce(int timeout_ms, std::string* error) {
  pollfd pfd{};
  pfd.fd = nfs_get_fd(nfs_);
  pfd.events = static_cast<short>(nfs_which_events(nfs_));
  int n = poll(&pfd, 1, timeout_ms);
  if (n < 0 && errno != EINTR) {
    *error = fmt::format("poll: {}", std::strerror(errno));
    return false;
  }
  if (nfs_service(nfs_, n > 0 ? pfd.revents : 0) < 0) {
    *error = fmt::format("connection failed: {}", nfs_get_error(nfs_));
    return false;
  }
  return true;
}

void Session::Unmount() { nfs_umount(nfs_); }

}  // namespace nfsx::load
