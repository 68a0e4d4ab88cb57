// Write verifiers (RFC 1813 §3.3.7): a client resends every UNSTABLE write whose
// verifier differs from its COMMIT's, so a verifier must change whenever data
// the server acknowledged may have been lost: at every server start, and after
// a write-back error (a failed fsync, fdatasync or close).
//
// Scope is per file: one failing file makes only its own writers resend, not
// every client of the server. A file's error count lives here, not in the
// evictable FileTable, so eviction cannot undo a rotation.
//
// Thread-safe. Verifier() takes no lock until the first error is recorded.
#pragma once

#include <atomic>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "proto/nfs3_types.h"

namespace nfsx::server {

class WriteVerifiers {
 public:
  // A boot verifier that no earlier run of the server used (time and randomness).
  WriteVerifiers();

  nfs3::writeverf3 Verifier(std::string_view file) const;
  // Records a write-back error on `file`: its verifier changes from now on.
  void Rotate(std::string_view file);

  // For clients' tests: from now on Rotate() changes nothing, as on a server whose
  // verifier is global and changes only at restart (NFS-Ganesha 4.3).
  void KeepThroughErrorsForTests() { keep_through_errors_.store(true); }

  const nfs3::writeverf3& boot_verifier() const { return boot_; }
  uint64_t rotations() const { return rotations_.load(); }

 private:
  nfs3::writeverf3 boot_;
  std::atomic<uint64_t> rotations_{0};
  std::atomic<bool> keep_through_errors_{false};
  mutable std::mutex mu_;
  std::unordered_map<std::string, uint64_t> epochs_;  // GUARDED_BY(mu_)
};

}  // namespace nfsx::server
