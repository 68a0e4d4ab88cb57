#include "client/consistency.h"

#include <algorithm>

namespace nfsx::client {

using nfs3::fattr3;
using nfs3::nfstime3;

void ConsistencyTracker::Reset(const fattr3& attr) {
  attr_ = attr;
  rebaseline_ = false;
}

void ConsistencyTracker::ApplyMonotonic(const fattr3& attr) {
  if (!attr_ || attr.ctime >= attr_->ctime) attr_ = attr;
}

ConsistencyTracker::Token ConsistencyTracker::Begin(Kind kind) {
  Token t{kind, window_, false};
  if (kind == Kind::kModify) {
    if (members_ == 0) {
      // A new window starts from the state we know.
      explained_.clear();
      observed_.clear();
      // Without a trusted starting state nothing in the window can be judged.
      unverifiable_ = !attr_ || rebaseline_;
      if (attr_) explained_.push_back(attr_->ctime);
    }
    ++members_;
    t.member = true;
  } else if (members_ > 0) {
    ++members_;
    t.member = true;
  }
  return t;
}

ConsistencyTracker::Verdict ConsistencyTracker::End(const Token& t, const nfs3::pre_op_attr& pre,
                                                    const nfs3::post_op_attr& post) {
  if (t.member) {
    if (t.kind == Kind::kModify) {
      if (pre) observed_.push_back(pre->ctime);
      if (post) {
        explained_.push_back(post->ctime);
      } else {
        unverifiable_ = true;
      }
    } else if (post) {
      observed_.push_back(post->ctime);
    }
    if (post) ApplyMonotonic(*post);
    return --members_ == 0 ? Settle() : Verdict::kConsistent;
  }
  if (!post) return Verdict::kConsistent;
  if (members_ > 0 || t.window != window_) {
    // Sent while quiet, but a window opened (or came and went) before the reply:
    // it may show a state from inside that window. Judge it with the window if
    // it is still open, else only keep attributes monotonic.
    if (members_ > 0) observed_.push_back(post->ctime);
    ApplyMonotonic(*post);
    return Verdict::kConsistent;
  }
  // Quiet: the reply must show exactly the state we know.
  if (!attr_ || rebaseline_) {
    attr_ = *post;
    rebaseline_ = false;
    return Verdict::kConsistent;
  }
  bool same = post->ctime == attr_->ctime && post->mtime == attr_->mtime &&
              post->size == attr_->size;
  attr_ = *post;
  if (same) return Verdict::kConsistent;
  ++foreign_changes_;
  return Verdict::kForeignChange;
}

ConsistencyTracker::Verdict ConsistencyTracker::Settle() {
  ++window_;
  if (unverifiable_) {
    rebaseline_ = true;
    return Verdict::kConsistent;
  }
  for (const nfstime3& seen : observed_) {
    if (std::find(explained_.begin(), explained_.end(), seen) == explained_.end()) {
      ++foreign_changes_;
      return Verdict::kForeignChange;
    }
  }
  return Verdict::kConsistent;
}

}  // namespace nfsx::client
