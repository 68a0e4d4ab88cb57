// Options of an nfsx client mount. Most come from the URL's query string
// (libnfs-compatible names where libnfs has the option).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "nfsx/result.h"

namespace nfsx {

struct ClientOptions {
  // Where the server listens. 0: ask the server's port mapper, else 2049 / 20048.
  uint16_t nfs_port = 0;    // URL: host:port or ?nfsport=
  uint16_t mount_port = 0;  // URL: ?mountport=
  int nconnect = 1;         // TCP connections to the server, used round-robin

  // Largest READ/WRITE; 0 takes the server's preference (FSINFO rtpref/wtpref).
  uint32_t rsize = 0;
  uint32_t wsize = 0;

  // Attribute cache (seconds), as the Linux client's mount options. actimeo=N
  // sets all four; noac sets them to 0 and makes writes synchronous.
  double acregmin = 3, acregmax = 60, acdirmin = 30, acdirmax = 60;
  bool noac = false;
  // Close-to-open consistency: open revalidates, close flushes and commits.
  bool cto = true;

  // AUTH_SYS identity; defaults to the calling process's.
  uint32_t uid = UINT32_MAX;
  uint32_t gid = UINT32_MAX;
  std::vector<uint32_t> groups;
  bool privileged_port = false;  // bind a source port < 1024 (needs root)

  // Page cache and write-back limits, in bytes.
  size_t cache_bytes = size_t{512} << 20;
  size_t dirty_bytes = size_t{128} << 20;        // then writers wait for write-back
  size_t uncommitted_bytes = size_t{256} << 20;  // written UNSTABLE, kept until COMMIT
  size_t readahead_bytes = size_t{4} << 20;      // largest sequential read-ahead window
  int max_writes_in_flight = 16;                 // per file
  // Once a file has this many bytes written UNSTABLE, a COMMIT of them goes out in the
  // background while writing goes on (0: never), so neither the server's disk write-out
  // nor the client's memory for a resend piles up until close.
  size_t commit_ahead_bytes = size_t{8} << 20;

  // What a call does when the server does not answer, with Linux's meanings.
  // kHard (the default) retransmits until the server answers, logging "server
  // ... not responding, still trying" once and "OK" when it answers; dirty data
  // is never dropped. kSoft fails the call with EIO, kSoftErr with ETIMEDOUT,
  // after `retrans` retransmissions. URL: hard, soft, softerr.
  enum class Recovery { kHard, kSoft, kSoftErr };
  Recovery recovery = Recovery::kHard;
  // Before the first retransmission (URL: timeo=, in tenths of a second); each
  // later one waits one timeout longer, up to 600 s, as Linux over TCP.
  std::chrono::milliseconds timeout{60000};
  int retrans = 2;  // retransmissions that make a major timeout (URL: retrans=)

  // Applies "key=value&key=value" (a URL query). Unknown keys are an error.
  Result<void> ApplyQuery(std::string_view query, std::string* error);
};

}  // namespace nfsx
