#include "fuse/fuse_mount.h"

#include <fmt/format.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "base/logging.h"
#include "base/path_components.h"
#include "client/url.h"
#include "fuse/nfs_fuse.h"

namespace nfsx::fuse {

using client::InodePtr;

namespace {

// libfuse reports why a mount failed only through its log: keep the last error
// line for our one-line message, send the rest to our log.
std::mutex g_fuse_log_mu;
std::string g_fuse_last_error;

void FuseLog(enum fuse_log_level level, const char* fmt, va_list ap) {
  char buf[1024];
  std::vsnprintf(buf, sizeof(buf), fmt, ap);
  std::string line(buf);
  while (!line.empty() && line.back() == '\n') line.pop_back();
  if (level <= FUSE_LOG_ERR) {
    std::lock_guard lock(g_fuse_log_mu);
    g_fuse_last_error = line;
  }
  if (level == FUSE_LOG_DEBUG) {
    std::fprintf(stderr, "%s\n", line.c_str());  // -o debug: libfuse's request trace
  } else if (level <= FUSE_LOG_ERR) {
    log::Debug("libfuse: {}", line);
  } else {
    log::Info("libfuse: {}", line);
  }
}

std::string LastFuseError() {
  std::lock_guard lock(g_fuse_log_mu);
  return g_fuse_last_error;
}

// libfuse option values escape ',' and '\'.
std::string EscapeOption(std::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == ',' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

void BlockStopSignals(int how) {
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGINT);
  sigaddset(&s, SIGTERM);
  sigaddset(&s, SIGHUP);
  pthread_sigmask(how, &s, nullptr);
}

// Where the stop signals' handler tells the watcher (a handler may only write()).
int g_stop_fd = -1;

void OnStopSignal(int) {
  int saved = errno;
  uint64_t one = 1;
  ssize_t n = ::write(g_stop_fd, &one, sizeof(one));
  (void)n;
  errno = saved;
}

// SIGINT/SIGTERM/SIGHUP end the request loop, but only once the notification
// thread has stopped. A notification may be blocked in the kernel on the lock of
// a page whose READ is still queued for us (an invalidation racing a read): with
// libfuse's own handlers the loop ended at once, nobody answered that READ, and
// the daemon waited forever for its notification thread (seen under TSan, with
// reads, writes and another client's changes in flight). Here the workers go on
// serving until the notifications have stopped. The signals reach only the loop's
// thread (every other thread blocks them), whose wait they interrupt; the watcher
// then wakes it the same way, after fuse_session_exit.
class StopSignalWatcher {
 public:
  StopSignalWatcher(NfsFuse& fs, fuse_session* se) : fs_(fs), se_(se), loop_(pthread_self()) {
    fd_ = eventfd(0, EFD_CLOEXEC);
    if (fd_ < 0) {
      log::Warn("fuse: eventfd: {}; a stop signal ends the request loop at once",
                std::strerror(errno));
      libfuse_handlers_ = fuse_set_signal_handlers(se_) == 0;
      return;
    }
    g_stop_fd = fd_;
    struct sigaction sa {};
    sa.sa_handler = OnStopSignal;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < kSignals.size(); ++i) {
      sigaction(kSignals[i], nullptr, &saved_[i]);
      // As libfuse: a signal the user had ignored (nohup, a background job of a
      // script) stays ignored.
      installed_[i] = saved_[i].sa_handler != SIG_IGN;
      if (installed_[i]) sigaction(kSignals[i], &sa, nullptr);
      if (installed_[i] && wake_signal_ == 0) wake_signal_ = kSignals[i];
    }
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &ignore, &saved_pipe_);
    thread_ = std::thread([this] { Watch(); });  // created with the signals blocked
  }
  // REQUIRES: the stop signals blocked in the calling thread (the loop's).
  ~StopSignalWatcher() {
    if (fd_ < 0) {
      if (libfuse_handlers_) fuse_remove_signal_handlers(se_);
      return;
    }
    loop_over_.store(true);
    Poke();
    thread_.join();
    // Our wake-ups of the loop (and a repeated signal) may still be pending here: taken
    // now, so that the default action, back from here on, does not end what follows.
    sigset_t set;
    sigemptyset(&set);
    for (int sig : kSignals) sigaddset(&set, sig);
    timespec now{};
    while (sigtimedwait(&set, nullptr, &now) > 0) {
    }
    for (size_t i = 0; i < kSignals.size(); ++i) {
      if (installed_[i]) sigaction(kSignals[i], &saved_[i], nullptr);
    }
    sigaction(SIGPIPE, &saved_pipe_, nullptr);
    g_stop_fd = -1;
    ::close(fd_);
  }
  StopSignalWatcher(const StopSignalWatcher&) = delete;
  StopSignalWatcher& operator=(const StopSignalWatcher&) = delete;

 private:
  static constexpr std::array<int, 3> kSignals{SIGINT, SIGTERM, SIGHUP};

  void Poke() {
    uint64_t one = 1;
    ssize_t n = ::write(fd_, &one, sizeof(one));
    (void)n;
  }

  void Watch() {
    uint64_t v;
    while (::read(fd_, &v, sizeof(v)) < 0 && errno == EINTR) {
    }
    if (loop_over_.load()) return;  // unmounted: no signal came
    log::Info("fuse: stop signal: stopping notifications, then the request loop");
    fs_.StopNotifications();
    fuse_session_exit(se_);
    // The loop checks for its end when its wait is interrupted; a wake-up that came
    // just before it began waiting would be lost, so until it has ended, again.
    while (!loop_over_.load()) {
      pthread_kill(loop_, wake_signal_);  // one with our handler: an ignored one wakes nothing
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }

  NfsFuse& fs_;
  fuse_session* se_;
  const pthread_t loop_;
  int fd_ = -1;
  bool libfuse_handlers_ = false;  // no eventfd: libfuse's handlers instead
  int wake_signal_ = 0;
  std::array<struct sigaction, kSignals.size()> saved_{};
  std::array<bool, kSignals.size()> installed_{};
  struct sigaction saved_pipe_ {};
  std::atomic<bool> loop_over_{false};
  std::thread thread_;
};

}  // namespace

Result<std::unique_ptr<FuseMount>> FuseMount::Create(const std::string& url,
                                                     const std::string& mountpoint,
                                                     const std::string& options,
                                                     std::string* error) {
  auto fail = [&](int code, std::string what) -> Result<std::unique_ptr<FuseMount>> {
    if (error) *error = std::move(what);
    return Fail(code);
  };
  std::string why;
  auto parsed = client::ParseNfsUrl(url, ClientOptions{}, &why);
  if (!parsed) return fail(parsed.error().code, fmt::format("bad URL '{}': {}", url, why));
  MountOptions mo;
  if (auto r = ParseMountOptions(options, &mo, &parsed->options, &why); !r) {
    return fail(r.error().code, why);
  }
  mo.caller_identity = parsed->options.uid == UINT32_MAX && parsed->options.gid == UINT32_MAX;
  // Once other users may use the mount, the kernel also checks them against the mode
  // bits, as the kernel NFS client does before it asks the server. With one identity
  // for everyone (uid=, gid=), that check is all that keeps a user to their rights.
  if (mo.allow_other) mo.default_permissions = true;
  char resolved[PATH_MAX];
  struct stat st;
  if (!realpath(mountpoint.c_str(), resolved) || stat(resolved, &st) != 0) {
    return fail(errno, fmt::format("mountpoint {}: {}", mountpoint, std::strerror(errno)));
  }
  if (!S_ISDIR(st.st_mode)) {
    return fail(ENOTDIR, fmt::format("mountpoint {}: {}", mountpoint, std::strerror(ENOTDIR)));
  }
  std::unique_ptr<FuseMount> m(new FuseMount());
  m->mountpoint_ = resolved;
  m->max_threads_ = mo.max_threads;

  // The client's threads must never take the stop signals: the loop's thread
  // waits for them (libfuse blocks them in its own workers).
  BlockStopSignals(SIG_BLOCK);
  std::string rest;
  auto core = client::ClientCore::Mount(*parsed, &rest, &why);
  if (!core) return fail(core.error().code, why);
  InodePtr root = (*core)->root();
  std::string walked;
  for (const std::string& name : PathComponents(rest)) {
    walked += "/" + name;
    auto next = (*core)->Lookup(root, name);
    int err = !next ? next.error().code : (*next)->type() != nfs3::NF3DIR ? ENOTDIR : 0;
    if (err) {
      return fail(err,
                  fmt::format("{} on {}: {}{}", parsed->path, parsed->host, ErrorString(Error{err}),
                              walked.size() < rest.size() + 1 ? " (at " + walked + ")" : ""));
    }
    root = *next;
  }
  std::string source = fmt::format("{}:{}", parsed->host, parsed->path);
  m->fs_ = std::make_unique<NfsFuse>(std::move(*core), root, mo, source);

  std::string fuse_opts = fmt::format("fsname={},subtype=nfsx", EscapeOption(source));
  if (mo.allow_other) fuse_opts += ",allow_other";
  if (mo.default_permissions) fuse_opts += ",default_permissions";
  if (mo.read_only) fuse_opts += ",ro";
  std::vector<std::string> argv_s = {"nfsx", "-o", fuse_opts};
  if (mo.debug) argv_s.push_back("-d");
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  fuse_args args{static_cast<int>(argv.size()), argv.data(), 0};
  fuse_set_log_func(FuseLog);
  const fuse_lowlevel_ops& ops = NfsFuse::Ops();
  m->se_ = fuse_session_new(&args, &ops, sizeof(ops), m->fs_.get());
  fuse_opt_free_args(&args);
  if (!m->se_) return fail(EINVAL, "cannot create a FUSE session: " + LastFuseError());
  if (fuse_session_mount(m->se_, m->mountpoint_.c_str()) != 0) {
    std::string reason = LastFuseError();
    fuse_session_destroy(m->se_);
    m->se_ = nullptr;
    return fail(EPERM, fmt::format("cannot mount FUSE file system on {}: {}", m->mountpoint_,
                                   reason.empty() ? "unknown error" : reason));
  }
  log::Info("fuse: mounted {} on {}", source, m->mountpoint_);
  return m;
}

FuseMount::~FuseMount() {
  if (se_) {
    (void)fs_->Unmount([this] { fuse_session_unmount(se_); });
    fuse_session_destroy(se_);
  }
}

int FuseMount::Run() {
  fs_->Start(se_);
  int rc;
  {
    StopSignalWatcher stop(*fs_, se_);
    BlockStopSignals(SIG_UNBLOCK);
    fuse_loop_config* cfg = fuse_loop_cfg_create();
    fuse_loop_cfg_set_clone_fd(cfg, 1);
    fuse_loop_cfg_set_max_threads(cfg, static_cast<unsigned>(max_threads_));
    fuse_loop_cfg_set_idle_threads(cfg, static_cast<unsigned>(std::min(max_threads_, 8)));
    rc = fuse_session_loop_mt(se_, cfg);
    fuse_loop_cfg_destroy(cfg);
    BlockStopSignals(SIG_BLOCK);
  }
  // Another stop signal now ends the process, as it did with libfuse's handlers: the
  // way out of a flush to a server that is gone.
  BlockStopSignals(SIG_UNBLOCK);
  if (rc != 0) log::Info("fuse: request loop ended ({})", rc);
  // After a signal the file system is still mounted; after umount this only
  // closes the session's fd. Dirty data is flushed after that, as before.
  auto flushed = fs_->Unmount([this] { fuse_session_unmount(se_); });
  fuse_session_destroy(se_);
  se_ = nullptr;
  log::Info("fuse: unmounted {}", mountpoint_);
  return flushed ? 0 : 1;
}

}  // namespace nfsx::fuse
