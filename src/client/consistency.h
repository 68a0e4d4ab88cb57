// ConsistencyTracker: tells the client's own modifications of a file from
// anybody else's, using the attributes in replies. See docs/client_consistency.md.
//
// The problem (seed 000): with many WRITEs in flight, replies come back in any
// order, and the attributes in them (and in a GETATTR that overlapped a WRITE)
// look like changes nobody explained. A client that treats them as someone
// else's change throws its data cache away and re-reads the file. A client
// that ignores attributes instead misses real changes by other clients.
//
// The method. A server that serialises the modifications of a file (nfsx, knfsd)
// gives each state of the file a later ctime than the one before, so ctimes
// order states. Each of our modifying calls (WRITE, COMMIT, SETATTR, directory
// changes) reports the state before it (pre-op) and after it (post-op): an
// edge pre -> post. Edges that meet (one's post is another's pre) join into
// *runs* of states that only our calls produced; the run that starts at the
// known state is the origin. A run whose first state is not the end of another
// run starts where somebody else changed the file, unless a call of ours still
// in flight is the missing edge. So every state that needs explaining (the start
// of a run, a state an observation showed) is judged once every modification we
// had sent when it arrived has replied: the edge that would explain it was sent
// before the server showed the state. Unexplained then means a third-party change.
//
// This works while our client writes without pause: judgements wait only for
// the calls in flight when they arrived, never for the stream to stop. Memory
// is the runs (at most one per reply that arrived out of order and is not yet
// joined), the modifications in flight and the states waiting for judgement;
// each reply costs O(log n) of those.
//
// Observations (GETATTR, LOOKUP, READDIRPLUS, ACCESS, READ...) are judged when
// they arrive, whenever they were sent: a state older than the known one is
// stale and changes nothing; one inside a run is ours; any other waits as above.
//
// Servers that send no pre-op attributes (NFS-Ganesha on WRITE) give edges with
// no start: they extend the origin run, so our own writes never look foreign and
// a change made after our last one is still caught (at the next observation, at
// open); one made between two of our writes cannot be seen (no data says it).
//
// Not thread-safe: the owner (the inode) serialises calls with its lock.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "proto/nfs3_types.h"

namespace nfsx::client {

class ConsistencyTracker {
 public:
  enum class Kind : uint8_t { kModify, kObserve };
  enum class Verdict : uint8_t {
    kConsistent,     // nothing but our own changes
    kForeignChange,  // somebody else changed the file's data: drop cached data
    kForeignAttrs,   // somebody else changed only its inode (chmod, rename, link):
                     // cached data stays good; permissions must be asked again
  };

  // A call in progress, returned by Begin() and handed back to End().
  struct Token {
    Kind kind = Kind::kObserve;
    uint64_t seq = 0;    // kModify: its number; kObserve: the next modification's at Begin
    bool quiet = false;  // kObserve: nothing of ours was in flight at Begin
    uint64_t blindings = UINT64_MAX;  // how many times the tracker had gone blind at Begin
    // Steady-clock ns when the call was sent; 0 if unknown. Not the tracker's: the
    // inode's attribute timer starts here (the reply shows the file as of then).
    int64_t sent_ns = 0;
  };

  // Sets the known state (from an authoritative reply, e.g. the first GETATTR).
  void Reset(const nfs3::fattr3& attr);
  bool has_attr() const { return attr_.has_value(); }
  const nfs3::fattr3& attr() const { return *attr_; }

  // Before sending a call.
  Token Begin(Kind kind);
  // For attributes that arrived without a Begin() before their call was sent
  // (a LOOKUP's or READDIRPLUS's entries for files not known then).
  static Token Late(int64_t sent_ns) { return Token{.sent_ns = sent_ns}; }
  // A reply to a kModify call (wcc_data; either side may be absent), or to a
  // kObserve call (`pre` absent, `post` = its attributes, if any). Also call it
  // with both absent when the call failed without attributes.
  Verdict End(const Token& token, const nfs3::pre_op_attr& pre, const nfs3::post_op_attr& post);

  uint64_t foreign_changes() const { return foreign_changes_; }
  // What the tracker holds: modifications in flight, runs, states awaiting judgement.
  size_t in_flight() const { return in_flight_.size(); }
  size_t runs() const { return runs_.size(); }
  size_t waiting() const { return waiting_by_state_.size(); }

  // Beyond this many states awaiting judgement the window is given up as
  // unverifiable (bounded memory against a call that never replies).
  static constexpr size_t kMaxWaiting = 4096;

 private:
  // Keeps attr_ monotonic: ctime never goes backwards. `ours`: post-op attributes
  // of one of our modifications; `continues`: of one whose pre-op state is the
  // known one (then it is the newest state even where ctime did not move).
  void ApplyMonotonic(const nfs3::fattr3& attr, bool ours, bool continues = false);
  // Whether a state with the known ctime is one our modifications produced.
  bool OursAtTopCtime(const nfs3::fattr3& attr) const;
  // The data of a state: what tells a change of contents from one of the inode only.
  struct Data {
    nfs3::nfstime3 mtime;
    uint64_t size = 0;
    bool operator==(const Data&) const = default;
  };
  static Data DataOf(const nfs3::fattr3& attr) { return {attr.mtime, attr.size}; }
  // attr_ becomes `attr`, a state with a new ctime: nothing is known of its tick yet.
  void Adopt(const nfs3::fattr3& attr);
  void ForgetWaiting();
  struct Run {
    nfs3::nfstime3 last;  // ctime of its last state
    Data data;            // of its last state
  };
  struct Waiting;
  using Runs = std::map<nfs3::nfstime3, Run>;  // by the ctime of the first state

  void AddEdge(const nfs3::pre_op_attr& pre, const nfs3::fattr3& post);
  // `quiet_since_sent`: nothing of ours was in flight from the call's sending to now.
  Verdict Observe(const nfs3::fattr3& attr, bool quiet_since_sent);
  void Await(nfs3::nfstime3 state, Data data);
  // Forgets the waiting states in (from, to]: a run of ours covers them now.
  void Explain(nfs3::nfstime3 from, nfs3::nfstime3 to);
  bool Explained(nfs3::nfstime3 state) const;
  // Joins the run at `it` with the runs it now reaches.
  void MergeForward(Runs::iterator it);
  // What an unexplained state is: a change of data, or of the inode only (its data
  // is that of the last state of ours before it).
  Verdict Foreign(nfs3::nfstime3 state, const Data& data) const;
  // Judges the waiting states whose modifications have all replied.
  Verdict Judge();
  // The known state becomes the latest one seen, with nothing left to judge.
  void Rebase();
  bool quiet() const { return in_flight_.empty(); }
  uint64_t low() const { return quiet() ? next_ : *in_flight_.begin(); }

  std::optional<nfs3::fattr3> attr_;
  uint64_t next_ = 1;             // number of the next modification
  std::set<uint64_t> in_flight_;  // modifications sent and not replied
  nfs3::nfstime3 floor_{};        // the known state; older ones are stale
  Runs runs_;
  // States awaiting judgement: each is judged once every modification numbered
  // up to its `needs` (the last one sent when it arrived) replied, and forgotten
  // as soon as a run covers it. Indexed both ways.
  using ByNeeds = std::multimap<uint64_t, nfs3::nfstime3>;
  struct Waiting {
    ByNeeds::iterator by_needs;
    Data data;
  };
  ByNeeds waiting_by_needs_;
  std::map<nfs3::nfstime3, Waiting> waiting_by_state_;
  // A modification brought no post-op attributes (or too much waited): a state we
  // produced is unknown, so nothing is judged until a reply to a call sent after
  // that shows a state, which becomes the known one without a verdict (as Linux
  // does when wcc data is missing).
  bool blind_ = false;
  uint64_t blindings_ = 0;  // times the tracker went blind
  void GoBlind();
  // Leaves blindness: `state` (or a newer one seen) becomes the known state.
  void SeeAgain(const nfs3::fattr3& state);
  // A server whose ctime ticks coarsely shows several states with one ctime: the
  // (mtime, size) our modifications produced at the known ctime, so that a quiet
  // reply showing another one is known for somebody else's.
  static constexpr size_t kMaxTopStates = 64;
  std::vector<Data> top_states_;
  bool top_states_overflow_ = false;
  uint64_t foreign_changes_ = 0;
};

}  // namespace nfsx::client
