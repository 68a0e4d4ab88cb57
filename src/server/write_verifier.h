// Write verifiers (RFC 1813 §3.3.7): a client resends every UNSTABLE write whose
// verifier differs from its COMMIT's, so a verifier must change whenever data
// the server acknowledged may have been lost: at every server start, and after
// a write-back error (a failed fsync, fdatasync or close).
//
// Scope is per file: one failing file makes only its own writers resend, not
// every client of the server. A file's error count lives here, not in the
// evictable FileTable, so eviction cannot undo a rotation.
//
// Syncs of one file run side by side (concurrent fdatasyncs share one disk flush), but
// fsync(2) tells a write-back error to only one of the syncs that overlap it on a
// descriptor: a sync that succeeded beside a failing one must not read the verifier
// before the failure has rotated it. So every sync of a file's data is bracketed by
// BeginSync/EndSync, and a successful one reads its verifier with VerifierAfter(),
// which waits for the syncs that began before it ended (as knfsd samples the errseq
// before and checks it after, where user space has no errseq to read).
//
// Thread-safe. Verifier() takes no lock until the first error is recorded.
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <set>
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

  // A sync of `file` begins; returns its ticket for EndSync.
  uint64_t BeginSync(std::string_view file);
  // The sync ends; a failed one rotates the verifier first. Returns the horizon to give
  // VerifierAfter: the syncs begun before this one ended.
  uint64_t EndSync(std::string_view file, uint64_t ticket, bool failed);
  // The verifier a successful sync vouches for, once every sync of `file` begun before
  // `horizon` has ended (and rotated, if it failed).
  nfs3::writeverf3 VerifierAfter(std::string_view file, uint64_t horizon);

  const nfs3::writeverf3& boot_verifier() const { return boot_; }
  uint64_t rotations() const { return rotations_.load(); }

 private:
  nfs3::writeverf3 boot_;
  std::atomic<uint64_t> rotations_{0};
  std::atomic<bool> keep_through_errors_{false};
  mutable std::mutex mu_;
  std::unordered_map<std::string, uint64_t> epochs_;  // GUARDED_BY(mu_)

  std::mutex sync_mu_;
  std::condition_variable sync_ended_;
  uint64_t next_ticket_ = 1;                                     // GUARDED_BY(sync_mu_)
  std::unordered_map<std::string, std::set<uint64_t>> syncing_;  // GUARDED_BY(sync_mu_)
};

}  // namespace nfsx::server
