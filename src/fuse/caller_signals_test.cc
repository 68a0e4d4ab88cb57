#include "fuse/caller_signals.h"

#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

namespace nfsx::fuse {
namespace {

constexpr uint64_t Bit(int sig) { return uint64_t{1} << (sig - 1); }

TEST(CallerSignalsTest, SigkillEndsTheWaitEvenWhenOthersWouldNot) {
  EXPECT_TRUE(SignalsEndWait({.pending = Bit(SIGKILL) | Bit(SIGSTOP)}));
}

TEST(CallerSignalsTest, StopsAndContinuesDoNotEndTheWait) {
  for (int sig : {SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU, SIGCONT, SIGCHLD, SIGWINCH}) {
    EXPECT_FALSE(SignalsEndWait({.pending = Bit(sig)})) << strsignal(sig);
  }
}

TEST(CallerSignalsTest, AnUncaughtFatalSignalEndsTheWait) {
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGPIPE}) {
    EXPECT_TRUE(SignalsEndWait({.pending = Bit(sig)})) << strsignal(sig);
  }
}

TEST(CallerSignalsTest, ACaughtSignalEndsTheWaitEvenIfItsDefaultIsHarmless) {
  EXPECT_TRUE(SignalsEndWait({.pending = Bit(SIGINT), .caught = Bit(SIGINT)}));
  EXPECT_TRUE(SignalsEndWait({.pending = Bit(SIGCHLD), .caught = Bit(SIGCHLD)}));
  EXPECT_TRUE(SignalsEndWait({.pending = Bit(SIGTSTP), .caught = Bit(SIGTSTP)}));
}

TEST(CallerSignalsTest, IgnoredAndBlockedSignalsDoNotEndTheWait) {
  EXPECT_FALSE(SignalsEndWait({.pending = Bit(SIGINT), .ignored = Bit(SIGINT)}));
  EXPECT_FALSE(
      SignalsEndWait({.pending = Bit(SIGUSR1), .blocked = Bit(SIGUSR1), .caught = Bit(SIGUSR1)}));
  EXPECT_FALSE(SignalsEndWait({}));
}

TEST(CallerSignalsTest, ParsesProcStatus) {
  const char* status =
      "Name:\tcat\nGroups:\t0 1 2\nSigQ:\t0/96363\nSigPnd:\t0000000000000100\n"
      "ShdPnd:\t0000000000040000\nSigBlk:\t0000000000000002\nSigIgn:\t0000000000001000\n"
      "SigCgt:\t0000000180000400\nCapInh:\t0000000000000000\n";
  SignalSets s;
  ASSERT_TRUE(ParseSignalSets(status, &s));
  EXPECT_EQ(s.pending, 0x40100u);
  EXPECT_EQ(s.blocked, 0x2u);
  EXPECT_EQ(s.ignored, 0x1000u);
  EXPECT_EQ(s.caught, 0x180000400u);
  EXPECT_FALSE(ParseSignalSets("Name:\tcat\nSigPnd:\t0\n", &s));
}

// This thread, read through /proc: nothing pending ends nothing; a pending, blocked
// SIGUSR1 neither; once unblocked (its default kills) it would.
TEST(CallerSignalsTest, ReadsALiveThread) {
  pid_t tid = static_cast<pid_t>(syscall(SYS_gettid));
  EXPECT_FALSE(CallerSignalsEndWait(tid));
  sigset_t set, old;
  sigemptyset(&set);
  sigaddset(&set, SIGUSR1);
  ASSERT_EQ(pthread_sigmask(SIG_BLOCK, &set, &old), 0);
  ASSERT_EQ(syscall(SYS_tgkill, getpid(), tid, SIGUSR1), 0);
  EXPECT_FALSE(CallerSignalsEndWait(tid));
  // Consume it before unblocking: delivering it would end the test binary.
  int sig = 0;
  ASSERT_EQ(sigwait(&set, &sig), 0);
  ASSERT_EQ(pthread_sigmask(SIG_SETMASK, &old, nullptr), 0);
  EXPECT_TRUE(CallerSignalsEndWait(-1)) << "a thread that is gone wants no answer";
}

// A stopped process does not take its signals: a SIGTERM sent to it stays pending, as
// for a caller waiting in the kernel, and it ends the wait; SIGCONT alone does not.
//
// The child says when it runs its own code before it is stopped: a sanitizer's fork keeps
// every signal blocked in the child until its runtime has set up, and a child stopped
// before then (seen in a loaded TSan run) holds SIGTERM blocked, which rightly ends nothing.
TEST(CallerSignalsTest, SeesAnotherProcesssPendingFatalSignal) {
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(ready[0]);
    if (write(ready[1], "r", 1) != 1) _exit(1);
    for (;;) pause();
  }
  close(ready[1]);
  char byte = 0;
  ASSERT_EQ(read(ready[0], &byte, 1), 1);
  close(ready[0]);
  ASSERT_EQ(kill(child, SIGSTOP), 0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, WUNTRACED), child);
  ASSERT_TRUE(WIFSTOPPED(status));
  EXPECT_FALSE(CallerSignalsEndWait(child));
  ASSERT_EQ(kill(child, SIGTERM), 0);
  EXPECT_TRUE(CallerSignalsEndWait(child));
  kill(child, SIGKILL);
  waitpid(child, &status, 0);
}

}  // namespace
}  // namespace nfsx::fuse
