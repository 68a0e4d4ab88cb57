#include "client/consistency.h"

#include <algorithm>

namespace nfsx::client {

using nfs3::fattr3;
using nfs3::nfstime3;

void ConsistencyTracker::Reset(const fattr3& attr) {
  Adopt(attr);
  blind_ = false;
  Rebase();
}

void ConsistencyTracker::Rebase() {
  floor_ = attr_ ? attr_->ctime : nfstime3{};
  runs_.clear();
  runs_.emplace(floor_, Run{floor_, attr_ ? DataOf(*attr_) : Data{}});
  ForgetWaiting();
}

void ConsistencyTracker::ForgetWaiting() {
  waiting_by_needs_.clear();
  waiting_by_state_.clear();
}

void ConsistencyTracker::Adopt(const fattr3& attr) {
  attr_ = attr;
  top_states_.clear();
  top_states_overflow_ = false;
}

void ConsistencyTracker::ApplyMonotonic(const fattr3& attr, bool ours, bool continues) {
  if (!attr_ || attr.ctime > attr_->ctime) {
    Adopt(attr);
  } else if (attr.ctime == attr_->ctime) {
    // One ctime, several states (a coarse clock): ours that follows the known state
    // is newer; otherwise keep the one that looks latest.
    if (continues || std::tie(attr.mtime, attr.size) >= std::tie(attr_->mtime, attr_->size)) {
      attr_ = attr;
    }
  } else {
    return;
  }
  if (ours && !OursAtTopCtime(attr)) {
    if (top_states_.size() < kMaxTopStates) {
      top_states_.push_back(DataOf(attr));
    } else {
      top_states_overflow_ = true;
    }
  }
}

bool ConsistencyTracker::OursAtTopCtime(const fattr3& attr) const {
  return std::find(top_states_.begin(), top_states_.end(), DataOf(attr)) != top_states_.end();
}

ConsistencyTracker::Token ConsistencyTracker::Begin(Kind kind) {
  if (kind != Kind::kModify) return Token{kind, next_, quiet(), blindings_};
  uint64_t seq = next_++;
  in_flight_.insert(seq);
  return Token{kind, seq, false, blindings_};
}

ConsistencyTracker::Verdict ConsistencyTracker::End(const Token& t, const nfs3::pre_op_attr& pre,
                                                    const nfs3::post_op_attr& post) {
  Verdict v = Verdict::kConsistent;
  if (t.kind == Kind::kModify) {
    in_flight_.erase(t.seq);
    if (!post) {
      GoBlind();
    } else {
      if (blind_ && pre && t.blindings == blindings_) {
        // Sent after the unknown state was produced: its pre-op state is a fresh start.
        fattr3 start = *post;
        start.size = pre->size;
        start.mtime = pre->mtime;
        start.ctime = pre->ctime;
        SeeAgain(start);
      }
      bool continues = pre && attr_ && pre->ctime == attr_->ctime && pre->size == attr_->size &&
                       pre->mtime == attr_->mtime;
      if (!blind_) AddEdge(pre, *post);
      ApplyMonotonic(*post, true, continues);
    }
  } else if (post) {
    if (blind_) {
      // Only a call sent after the unknown state existed can show where things are.
      if (t.blindings == blindings_) {
        SeeAgain(*post);
      } else {
        ApplyMonotonic(*post, false);
      }
    } else {
      v = Observe(*post, t.quiet && t.seq == next_ && quiet());
    }
  }
  if (v == Verdict::kConsistent) v = Judge();
  // Everything explained: the latest state is the known one.
  if (quiet() && waiting_by_state_.empty() && !blind_) Rebase();
  return v;
}

void ConsistencyTracker::GoBlind() {
  blind_ = true;
  ++blindings_;
  ForgetWaiting();
}

void ConsistencyTracker::SeeAgain(const fattr3& state) {
  // The latest state seen (this one, or a newer one a reply already showed) is real,
  // and everything before it is history now.
  blind_ = false;
  ApplyMonotonic(state, false);
  Rebase();
}

void ConsistencyTracker::AddEdge(const nfs3::pre_op_attr& pre, const fattr3& post_attr) {
  const nfstime3 post = post_attr.ctime;
  const Data post_data = DataOf(post_attr);
  if (post < floor_) return;  // a reply from before the known state: nothing to learn
  auto extend = [&](Run& run) {
    if (post >= run.last) run = Run{post, post_data};
  };
  if (!pre) {
    // No pre-op attributes (Ganesha's WRITE): taken as following on from our own
    // states, so it extends the origin run.
    auto origin = runs_.find(floor_);
    extend(origin->second);
    MergeForward(origin);
    return;
  }
  // Before the known state: the server's times went back (a restart that lost
  // what it showed) or a reset happened since the call was sent. Ours from there.
  nfstime3 from = std::max(pre->ctime, floor_);
  auto it = runs_.upper_bound(from);
  if (it != runs_.begin() && std::prev(it)->second.last >= from) {
    it = std::prev(it);  // follows on from (or repeats part of) a run we know
    extend(it->second);
  } else {
    it = runs_.emplace_hint(it, from, Run{std::max(from, post), post_data});
    // A state we did not produce, unless an edge still in flight ends there.
    Await(from, Data{pre->mtime, pre->size});
  }
  MergeForward(it);
}

void ConsistencyTracker::MergeForward(Runs::iterator it) {
  for (auto next = std::next(it); next != runs_.end() && next->first <= it->second.last;) {
    if (next->second.last > it->second.last) it->second = next->second;
    next = runs_.erase(next);
  }
  Explain(it->first, it->second.last);
}

void ConsistencyTracker::Explain(nfstime3 from, nfstime3 to) {
  auto it = waiting_by_state_.upper_bound(from);
  while (it != waiting_by_state_.end() && it->first <= to) {
    waiting_by_needs_.erase(it->second.by_needs);
    it = waiting_by_state_.erase(it);
  }
}

ConsistencyTracker::Verdict ConsistencyTracker::Observe(const fattr3& attr, bool quiet_since_sent) {
  if (attr.ctime < floor_) return Verdict::kConsistent;  // stale: sent before what we know
  // A server whose ctime ticks coarsely can show two states with one ctime;
  // with nothing of ours in flight, one our modifications did not produce is not ours.
  if (quiet_since_sent && attr_ && attr.ctime == attr_->ctime && !top_states_overflow_ &&
      (attr.size != attr_->size || attr.mtime != attr_->mtime) && !OursAtTopCtime(attr)) {
    Adopt(attr);
    ++foreign_changes_;
    Rebase();
    return Verdict::kForeignChange;
  }
  ApplyMonotonic(attr, false);
  if (!Explained(attr.ctime)) Await(attr.ctime, DataOf(attr));
  return Verdict::kConsistent;
}

void ConsistencyTracker::Await(nfstime3 state, Data data) {
  // Seen before (pollers repeat themselves): the first sighting's deadline holds.
  if (waiting_by_state_.contains(state)) return;
  if (waiting_by_state_.size() >= kMaxWaiting) {
    GoBlind();
    return;
  }
  waiting_by_state_.emplace(state, Waiting{waiting_by_needs_.emplace(next_ - 1, state), data});
}

bool ConsistencyTracker::Explained(nfstime3 state) const {
  if (state == floor_) return true;
  auto it = runs_.upper_bound(state);
  if (it == runs_.begin()) return false;
  --it;
  // Inside a run, or its last state; the first state of a run is explained only
  // by another run reaching it (then they have merged) or by being the known state.
  return it->first < state && state <= it->second.last;
}

ConsistencyTracker::Verdict ConsistencyTracker::Foreign(nfstime3 state, const Data& data) const {
  auto after = runs_.lower_bound(state);  // runs starting at the state or later
  if (after == runs_.begin()) return Verdict::kForeignChange;
  const Run& before = std::prev(after)->second;  // the last states of ours before it
  // mtime moves with every write (the nfsx server makes it strictly increase), so
  // the same mtime and size as our last state before means nobody wrote in between.
  return before.data == data ? Verdict::kForeignAttrs : Verdict::kForeignChange;
}

ConsistencyTracker::Verdict ConsistencyTracker::Judge() {
  uint64_t replied_below = low();
  while (!waiting_by_needs_.empty() && waiting_by_needs_.begin()->first < replied_below) {
    nfstime3 state = waiting_by_needs_.begin()->second;
    waiting_by_needs_.erase(waiting_by_needs_.begin());
    auto node = waiting_by_state_.extract(state);
    if (state < floor_ || Explained(state)) continue;
    Verdict v = Foreign(state, node.mapped().data);
    if (v == Verdict::kForeignChange) ++foreign_changes_;
    Rebase();
    return v;
  }
  return Verdict::kConsistent;
}

}  // namespace nfsx::client
