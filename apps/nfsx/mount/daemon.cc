// Background mounts: the fork happens before the client starts any thread (a
// forked child keeps only the forking thread), and the parent waits for the
// child to say it is mounted, so that every error still reaches the terminal
// and the exit status.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "apps/nfsx/mount/mount_commands.h"

namespace nfsx::app::mount {

int RunDetached(const std::function<int(const std::function<void()>& ready)>& body,
                const std::string& log_file) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    std::fprintf(stderr, "nfsx mount: pipe: %s\n", std::strerror(errno));
    return 1;
  }
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid < 0) {
    std::fprintf(stderr, "nfsx mount: fork: %s\n", std::strerror(errno));
    return 1;
  }
  if (pid > 0) {
    close(fds[1]);
    char c;
    ssize_t n;
    do {
      n = read(fds[0], &c, 1);
    } while (n < 0 && errno == EINTR);
    close(fds[0]);
    if (n == 1) return 0;  // mounted; the child serves on
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) != 0) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) {
      std::fprintf(stderr, "nfsx mount: the mount process died (%s)\n",
                   strsignal(WTERMSIG(status)));
    }
    return 1;
  }
  close(fds[0]);
  setsid();
  int ready_fd = fds[1];
  auto ready = [&] {
    const char* out = log_file.empty() ? "/dev/null" : log_file.c_str();
    int fd = open(out, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    int in = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (in >= 0) dup2(in, STDIN_FILENO);
    if (fd >= 0) {
      std::fflush(nullptr);
      dup2(fd, STDOUT_FILENO);
      dup2(fd, STDERR_FILENO);
    }
    if (fd > STDERR_FILENO) close(fd);
    if (in > STDERR_FILENO) close(in);
    if (chdir("/") != 0) {
      // Nothing depends on the working directory; it is left only to not pin a mount.
    }
    char c = 0;
    (void)!write(ready_fd, &c, 1);
    close(ready_fd);
  };
  int rc = body(ready);
  std::fflush(nullptr);
  _exit(rc);
}

}  // namespace nfsx::app::mount
