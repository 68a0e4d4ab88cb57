// The nfsx server `nfsx bench` starts in its own process when no --url is given: a
// temporary directory exported read-write to loopback clients, on free ports.
// Being in process also lets the bench report what the server saw per phase.
#pragma once

#include <memory>
#include <string>

#include "bench/counters.h"
#include "nfsx/result.h"

namespace nfsx::server {
class Server;
}

namespace nfsx::bench {

class SelfServer {
 public:
  // `backend`: "localfs" or "memfs". The export is a new directory under `parent` ($TMPDIR
  // or /tmp when empty), removed again by the destructor.
  static Result<std::unique_ptr<SelfServer>> Start(const std::string& backend,
                                                   const std::string& parent, std::string* error);
  ~SelfServer();

  // nfs://127.0.0.1/DIR?version=3&nfsport=N&mountport=M
  std::string url() const;
  const std::string& dir() const { return dir_; }
  std::string description() const;
  // Per-procedure calls the NFS program has answered so far.
  ServerCalls calls() const;

 private:
  SelfServer() = default;
  std::string dir_, state_, backend_;
  std::unique_ptr<server::Server> server_;
};

}  // namespace nfsx::bench
