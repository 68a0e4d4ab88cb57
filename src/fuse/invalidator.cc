#include "fuse/invalidator.h"

#include <algorithm>
#include <cstring>

#include "base/logging.h"
#include "fuse/fuse_api.h"

namespace nfsx::fuse {

Invalidator::Invalidator(std::function<std::vector<std::string>(uint64_t)> names_under)
    : names_under_(std::move(names_under)) {}

Invalidator::~Invalidator() { Stop(); }

void Invalidator::Start(fuse_session* se) {
  std::lock_guard lock(thread_mu_);
  se_ = se;
  thread_ = std::thread([this] { Loop(); });
}

void Invalidator::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  std::lock_guard lock(thread_mu_);
  if (thread_.joinable()) thread_.join();
}

bool Invalidator::sending() const {
  std::lock_guard lock(thread_mu_);
  return thread_.joinable();
}

void Invalidator::File(uint64_t nodeid) {
  std::lock_guard lock(mu_);
  if (stop_) return;
  // A burst of changes to one file needs one notification.
  auto same = [&](const Item& i) { return i.nodeid == nodeid && !i.dir; };
  if (std::find_if(queue_.begin(), queue_.end(), same) != queue_.end()) return;
  queue_.push_back({nodeid, false});
  cv_.notify_one();
}

void Invalidator::Directory(uint64_t nodeid) {
  std::lock_guard lock(mu_);
  if (stop_) return;
  auto same = [&](const Item& i) { return i.nodeid == nodeid && i.dir; };
  if (std::find_if(queue_.begin(), queue_.end(), same) != queue_.end()) return;
  queue_.push_back({nodeid, true});
  cv_.notify_one();
}

uint64_t Invalidator::sent() const {
  std::lock_guard lock(mu_);
  return sent_;
}

void Invalidator::Loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    Item item = queue_.front();
    queue_.pop_front();
    lock.unlock();
    // -ENOENT: the kernel no longer has the inode (or the name); nothing to drop.
    int rc = fuse_lowlevel_notify_inval_inode(se_, item.nodeid, 0, 0);
    if (rc != 0 && rc != -ENOENT) {
      log::Debug("fuse: invalidating inode {}: {}", item.nodeid, std::strerror(-rc));
    }
    if (item.dir) {
      // Someone else changed the directory: names we cached (positive or
      // negative) may be wrong now, so the kernel must look them up again.
      for (const std::string& name : names_under_(item.nodeid)) {
        (void)fuse_lowlevel_notify_inval_entry(se_, item.nodeid, name.c_str(), name.size());
      }
    }
    lock.lock();
    ++sent_;
  }
}

}  // namespace nfsx::fuse
