// A libnfs context mounted on the directory a URL names: one TCP connection, serviced from
// the owner's thread with poll(). nfsx-libnfs-load's jobs and `nfsx bench --driver libnfs`
// both sit on it, so that the two drive libnfs the same way.
#pragma once

#include <memory>
#include <string>

struct nfs_context;

namespace nfsx::load {

class Session {
 public:
  // Creates the context, applies the URL's options (libnfs syntax: version=3&nfsport=...)
  // and MOUNTs the URL's path. Call from one thread at a time: libnfs 4.0 keeps the reserved
  // source port cursor and the xid salt in unlocked globals.
  static std::unique_ptr<Session> Connect(const std::string& url, int timeout_ms,
                                          std::string* error);
  // Destroys the context; requests still queued get their callbacks (with an error) first.
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  nfs_context* nfs() const { return nfs_; }
  // The last error libnfs recorded on this context.
  std::string last_error() const;

  // Waits up to `timeout_ms` for the socket, then services the context, also when nothing
  // arrived (that is when libnfs expires requests). False when the connection failed.
  bool PollOnce(int timeout_ms, std::string* error);

  void Unmount();

 private:
  explicit Session(nfs_context* nfs) : nfs_(nfs) {}
  nfs_context* nfs_;
};

}  // namespace nfsx::load
