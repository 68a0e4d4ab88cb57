#include "base/interruption.h"

namespace nfsx {
namespace {

thread_local InterruptScope* current = nullptr;

}  // namespace

InterruptScope::InterruptScope(Check check, void* arg) : check_(check), arg_(arg), outer_(current) {
  current = this;
}

InterruptScope::~InterruptScope() { current = outer_; }

bool InterruptScope::Interrupted() {
  for (InterruptScope* s = current; s; s = s->outer_) {
    if (s->check_ && s->check_(s->arg_)) return true;
  }
  return false;
}

bool InterruptScope::Active() { return current != nullptr; }

}  // namespace nfsx
