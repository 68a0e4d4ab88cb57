// POSIX behaviour suite for a mounted file system: every operation NFSv3 can
// express, each with checks that can fail, compared with what a local file
// system does. Run as root on an export that does not squash root.
//
//   posix_suite DIR     (DIR: an empty directory on the mount)
//
// Prints one line per check; exit status 1 if any failed.
#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace {

int g_failed = 0;
int g_passed = 0;
std::string g_dir;

void Check(bool ok, const std::string& what) {
  if (ok) {
    ++g_passed;
    std::printf("ok: %s\n", what.c_str());
  } else {
    ++g_failed;
    std::printf("FAIL: %s\n", what.c_str());
  }
}

// The call must fail with `err`.
void CheckErrno(int rc, int err, const std::string& what) {
  int e = errno;
  bool ok = rc < 0 && e == err;
  Check(ok,
        what + " -> " + strerrorname_np(err) +
            (ok ? "" : std::string(" (got ") + (rc < 0 ? strerrorname_np(e) : "success") + ")"));
}

std::string P(const std::string& name) { return g_dir + "/" + name; }

bool WriteFile(const std::string& path, const std::string& data, int flags = O_TRUNC) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | flags, 0644);
  if (fd < 0) return false;
  bool ok = write(fd, data.data(), data.size()) == static_cast<ssize_t>(data.size());
  return close(fd) == 0 && ok;
}

std::string ReadFile(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY);
  if (fd < 0) return "<" + std::string(strerrorname_np(errno)) + ">";
  std::string out;
  char buf[65536];
  for (ssize_t n; (n = read(fd, buf, sizeof(buf))) > 0;) out.append(buf, static_cast<size_t>(n));
  close(fd);
  return out;
}

struct stat Stat(const std::string& path) {
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) st.st_ino = 0;
  return st;
}

std::string Pattern(size_t n, unsigned seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131 + seed * 7 + i / 4096) & 0xff);
  return s;
}

void TestCreateReadWrite() {
  std::string f = P("crw");
  int fd = open(f.c_str(), O_CREAT | O_EXCL | O_RDWR, 0640);
  Check(fd >= 0, "open(O_CREAT|O_EXCL) creates");
  std::string data = Pattern(100000, 1);
  Check(write(fd, data.data(), data.size()) == 100000, "write 100000 bytes");
  struct stat st;
  Check(fstat(fd, &st) == 0 && st.st_size == 100000 && (st.st_mode & 07777) == 0640 &&
            S_ISREG(st.st_mode),
        "fstat: size 100000, mode 0640, regular");
  std::string back(100000, '\0');
  Check(pread(fd, back.data(), back.size(), 0) == 100000 && back == data, "pread returns the data");
  Check(lseek(fd, 5, SEEK_SET) == 5 && read(fd, back.data(), 10) == 10 &&
            back.compare(0, 10, data, 5, 10) == 0,
        "lseek + read");
  Check(pread(fd, back.data(), 10, 200000) == 0, "read past EOF returns 0");
  Check(close(fd) == 0, "close");
  Check(ReadFile(f) == data, "reopen reads the same bytes");
  CheckErrno(open(f.c_str(), O_CREAT | O_EXCL | O_WRONLY, 0644), EEXIST, "O_CREAT|O_EXCL existing");
  CheckErrno(open(P("nonexistent").c_str(), O_RDONLY), ENOENT, "open missing");
  CheckErrno(open(P("nodir/x").c_str(), O_CREAT | O_WRONLY, 0644), ENOENT, "create in missing dir");
  CheckErrno(open((f + "/x").c_str(), O_RDONLY), ENOTDIR, "file used as directory");
  fd = open(f.c_str(), O_WRONLY | O_TRUNC);
  Check(fd >= 0 && fstat(fd, &st) == 0 && st.st_size == 0, "O_TRUNC empties the file");
  if (fd >= 0) close(fd);
  fd = open(f.c_str(), O_CREAT | O_WRONLY, 0600);  // existing: mode unchanged
  Check(fd >= 0 && fstat(fd, &st) == 0 && (st.st_mode & 07777) == 0640,
        "O_CREAT on an existing file keeps its mode");
  if (fd >= 0) close(fd);
  // A hole: bytes before the first write read as zeros.
  fd = open(P("sparse").c_str(), O_CREAT | O_RDWR, 0644);
  Check(pwrite(fd, "end", 3, 1 << 20) == 3, "pwrite at 1 MiB into an empty file");
  Check(fstat(fd, &st) == 0 && st.st_size == (1 << 20) + 3, "size after sparse write");
  std::string z(4096, 'x');
  Check(pread(fd, z.data(), 4096, 500000) == 4096 && z == std::string(4096, '\0'),
        "the hole reads as zeros");
  close(fd);
  std::string name(256, 'n');
  CheckErrno(open(P(name).c_str(), O_CREAT | O_WRONLY, 0644), ENAMETOOLONG, "256-byte name");
}

void TestLargeSequential() {
  std::string f = P("large");
  std::string data = Pattern(8 << 20, 3);
  int fd = open(f.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
  bool ok = fd >= 0;
  for (size_t off = 0; ok && off < data.size(); off += 256 * 1024) {
    ok = write(fd, data.data() + off, 256 * 1024) == 256 * 1024;
  }
  Check(ok && fsync(fd) == 0 && close(fd) == 0, "write 8 MiB in 256 KiB records, fsync, close");
  Check(ReadFile(f) == data, "8 MiB read back byte for byte");
}

void TestTruncate() {
  std::string f = P("trunc");
  WriteFile(f, "0123456789");
  Check(truncate(f.c_str(), 4) == 0 && ReadFile(f) == "0123", "truncate(path) shrinks");
  Check(truncate(f.c_str(), 8) == 0 && ReadFile(f) == std::string("0123\0\0\0\0", 8),
        "truncate(path) grows with zeros");
  int fd = open(f.c_str(), O_RDWR);
  Check(ftruncate(fd, 2) == 0 && Stat(f).st_size == 2, "ftruncate shrinks");
  Check(pwrite(fd, "ab", 2, 6) == 2 && ReadFile(f) == std::string("01\0\0\0\0ab", 8),
        "write after shrink leaves zeros between");
  Check(ftruncate(fd, 0) == 0 && ReadFile(f).empty(), "ftruncate to 0");
  close(fd);
  CheckErrno(truncate(g_dir.c_str(), 0), EISDIR, "truncate a directory");
}

void TestRename() {
  WriteFile(P("r1"), "one");
  Check(rename(P("r1").c_str(), P("r2").c_str()) == 0 && ReadFile(P("r2")) == "one" &&
            Stat(P("r1")).st_ino == 0,
        "rename moves the name");
  WriteFile(P("r3"), "three");
  ino_t ino2 = Stat(P("r2")).st_ino;
  Check(rename(P("r2").c_str(), P("r3").c_str()) == 0 && ReadFile(P("r3")) == "one" &&
            Stat(P("r3")).st_ino == ino2 && Stat(P("r2")).st_ino == 0,
        "rename over an existing file replaces it");
  mkdir(P("rd1").c_str(), 0755);
  mkdir(P("rd2").c_str(), 0755);
  WriteFile(P("rd1/f"), "f");
  Check(rename(P("r3").c_str(), P("rd1/moved").c_str()) == 0 && ReadFile(P("rd1/moved")) == "one",
        "rename across directories");
  Check(rename(P("rd1").c_str(), P("rd2").c_str()) == 0 && ReadFile(P("rd2/f")) == "f",
        "rename a directory over an empty one");
  mkdir(P("rd3").c_str(), 0755);
  mkdir(P("rd4").c_str(), 0755);
  WriteFile(P("rd4/x"), "x");
  int rc = rename(P("rd3").c_str(), P("rd4").c_str());
  int e = errno;
  Check(rc < 0 && (e == ENOTEMPTY || e == EEXIST), "rename over a non-empty directory fails");
  WriteFile(P("rf"), "f");
  CheckErrno(rename(P("rf").c_str(), P("rd3").c_str()), EISDIR, "rename a file over a directory");
  CheckErrno(rename(P("rd3").c_str(), P("rf").c_str()), ENOTDIR, "rename a directory over a file");
  CheckErrno(rename(P("nope").c_str(), P("nope2").c_str()), ENOENT, "rename a missing name");
  Check(rename(P("rf").c_str(), P("rf").c_str()) == 0 && ReadFile(P("rf")) == "f",
        "rename onto itself");
  CheckErrno(rename(P("rd2").c_str(), P("rd2/sub").c_str()), EINVAL,
             "rename a directory into itself");
}

void TestLinks() {
  WriteFile(P("l1"), "linked");
  Check(link(P("l1").c_str(), P("l2").c_str()) == 0, "link");
  struct stat a = Stat(P("l1")), b = Stat(P("l2"));
  Check(a.st_ino == b.st_ino && a.st_ino != 0, "both names have the same st_ino");
  Check(a.st_nlink == 2 && b.st_nlink == 2, "both names show nlink 2");
  WriteFile(P("l2"), "changed via l2", O_TRUNC);
  Check(ReadFile(P("l1")) == "changed via l2", "a write through one name shows through the other");
  Check(unlink(P("l1").c_str()) == 0 && Stat(P("l2")).st_nlink == 1, "unlink one: nlink 1");
  CheckErrno(link(P("l2").c_str(), P("l2").c_str()), EEXIST, "link onto an existing name");
  mkdir(P("ld").c_str(), 0755);
  CheckErrno(link(P("ld").c_str(), P("ld2").c_str()), EPERM, "link a directory");

  Check(symlink("l2", P("s1").c_str()) == 0, "symlink");
  char buf[256] = {};
  Check(readlink(P("s1").c_str(), buf, sizeof(buf)) == 2 && std::string(buf) == "l2",
        "readlink returns the target");
  Check(S_ISLNK(Stat(P("s1")).st_mode), "lstat: a symlink");
  struct stat st;
  Check(stat(P("s1").c_str(), &st) == 0 && st.st_ino == Stat(P("l2")).st_ino,
        "stat follows the symlink");
  Check(ReadFile(P("s1")) == "changed via l2", "open follows the symlink");
  Check(symlink("/nowhere/at/all", P("s2").c_str()) == 0 && stat(P("s2").c_str(), &st) < 0 &&
            errno == ENOENT,
        "a dangling symlink: stat ENOENT");
  std::string long_target(1000, 'a');
  Check(symlink(long_target.c_str(), P("s3").c_str()) == 0 &&
            readlink(P("s3").c_str(), buf, sizeof(buf)) == sizeof(buf),
        "a 1000-byte symlink target");
  CheckErrno(static_cast<int>(readlink(P("l2").c_str(), buf, sizeof(buf))), EINVAL,
             "readlink of a regular file");
  CheckErrno(symlink("x", P("l2").c_str()), EEXIST, "symlink onto an existing name");
}

void TestDirectories() {
  Check(mkdir(P("d").c_str(), 0750) == 0, "mkdir");
  struct stat st = Stat(P("d"));
  Check(S_ISDIR(st.st_mode) && (st.st_mode & 07777) == 0750, "directory mode 0750");
  CheckErrno(mkdir(P("d").c_str(), 0755), EEXIST, "mkdir existing");
  nlink_t before = Stat(P("d")).st_nlink;
  mkdir(P("d/sub").c_str(), 0755);
  Check(Stat(P("d")).st_nlink == before + 1, "a subdirectory adds a link to its parent");
  WriteFile(P("d/file"), "x");
  CheckErrno(rmdir(P("d").c_str()), ENOTEMPTY, "rmdir a non-empty directory");
  CheckErrno(rmdir(P("d/file").c_str()), ENOTDIR, "rmdir a file");
  CheckErrno(unlink(P("d").c_str()), EISDIR, "unlink a directory");
  CheckErrno(unlink(P("d/missing").c_str()), ENOENT, "unlink a missing name");
  Check(unlink(P("d/file").c_str()) == 0 && rmdir(P("d/sub").c_str()) == 0 &&
            rmdir(P("d").c_str()) == 0 && Stat(P("d")).st_ino == 0,
        "rmdir after emptying");
  Check(mkfifo(P("fifo").c_str(), 0600) == 0 && S_ISFIFO(Stat(P("fifo")).st_mode) &&
            (Stat(P("fifo")).st_mode & 07777) == 0600,
        "mkfifo (MKNOD): a fifo with mode 0600");
  Check(mknod(P("sock").c_str(), S_IFSOCK | 0644, 0) == 0 && S_ISSOCK(Stat(P("sock")).st_mode),
        "mknod a socket");
  Check(mknod(P("chr").c_str(), S_IFCHR | 0600, makedev(1, 3)) == 0 &&
            S_ISCHR(Stat(P("chr")).st_mode) && Stat(P("chr")).st_rdev == makedev(1, 3),
        "mknod a character device 1,3");
}

std::vector<std::string> List(DIR* d, std::vector<long>* positions = nullptr) {
  std::vector<std::string> out;
  for (;;) {
    long pos = telldir(d);
    errno = 0;
    dirent* e = readdir(d);
    if (!e) break;
    out.push_back(e->d_name);
    if (positions) positions->push_back(pos);
  }
  return out;
}

void TestLargeDirectory() {
  constexpr int kFiles = 2000;
  std::string dir = P("big");
  mkdir(dir.c_str(), 0755);
  bool ok = true;
  for (int i = 0; i < kFiles && ok; ++i) {
    ok = mknod((dir + "/entry-with-a-longish-name-" + std::to_string(i)).c_str(), S_IFREG | 0644,
               0) == 0;
  }
  Check(ok, "create 2000 files");
  DIR* d = opendir(dir.c_str());
  std::vector<long> pos;
  std::vector<std::string> names = List(d, &pos);
  std::multiset<std::string> seen(names.begin(), names.end());
  bool once = seen.size() == kFiles + 2 && seen.count(".") == 1 && seen.count("..") == 1;
  for (int i = 0; i < kFiles && once; ++i) {
    once = seen.count("entry-with-a-longish-name-" + std::to_string(i)) == 1;
  }
  Check(once, "readdir lists every entry exactly once, with . and ..");
  // seekdir to positions telldir gave: the same entries again.
  bool stable = true;
  for (size_t k : {size_t{0}, size_t{1}, size_t{777}, names.size() - 1, size_t{1500}}) {
    seekdir(d, pos[k]);
    dirent* e = readdir(d);
    stable = stable && e && names[k] == e->d_name;
  }
  Check(stable, "seekdir to telldir offsets returns the same entries");
  // Entries removed while listing: no duplicates, nothing invented.
  rewinddir(d);
  std::multiset<std::string> during;
  int removed = 0;
  for (dirent* e; (e = readdir(d));) {
    during.insert(e->d_name);
    if (removed < 500) {
      unlink((dir + "/entry-with-a-longish-name-" + std::to_string(1999 - removed)).c_str());
      ++removed;
    }
  }
  bool no_dups = std::all_of(during.begin(), during.end(),
                             [&](const std::string& n) { return during.count(n) == 1; });
  Check(no_dups && during.size() >= kFiles + 2 - 500, "removing while listing: no duplicates");
  WriteFile(dir + "/added-later", "");
  rewinddir(d);
  auto after = List(d);
  Check(std::count(after.begin(), after.end(), "added-later") == 1 &&
            after.size() == kFiles + 2 - 500 + 1,
        "rewinddir shows the directory as it is now");
  // d_ino matches st_ino.
  rewinddir(d);
  bool inos = true;
  int checked = 0;
  for (dirent* e; (e = readdir(d)) && checked < 50;) {
    if (e->d_name[0] == '.') continue;
    inos = inos && e->d_ino == Stat(dir + "/" + e->d_name).st_ino && e->d_type == DT_REG;
    ++checked;
  }
  Check(inos && checked == 50, "d_ino and d_type agree with lstat");
  closedir(d);
}

void TestAttributes() {
  std::string f = P("attrs");
  WriteFile(f, "attributes");
  Check(chmod(f.c_str(), 0604) == 0 && (Stat(f).st_mode & 07777) == 0604, "chmod 0604");
  Check(chmod(f.c_str(), 04755) == 0 && (Stat(f).st_mode & 07777) == 04755, "chmod setuid 04755");
  Check(chown(f.c_str(), 1234, 5678) == 0 && Stat(f).st_uid == 1234 && Stat(f).st_gid == 5678,
        "chown 1234:5678");
  timespec ts[2] = {{1000000000, 123456789}, {1200000000, 987654321}};
  Check(utimensat(AT_FDCWD, f.c_str(), ts, 0) == 0, "utimensat explicit times");
  struct stat st = Stat(f);
  Check(st.st_atim.tv_sec == 1000000000 && st.st_atim.tv_nsec == 123456789 &&
            st.st_mtim.tv_sec == 1200000000 && st.st_mtim.tv_nsec == 987654321,
        "atime and mtime to the nanosecond");
  timespec omit[2] = {{0, UTIME_OMIT}, {0, UTIME_NOW}};
  time_t now = time(nullptr);
  Check(utimensat(AT_FDCWD, f.c_str(), omit, 0) == 0, "utimensat UTIME_OMIT/UTIME_NOW");
  st = Stat(f);
  Check(st.st_atim.tv_sec == 1000000000 && std::abs(st.st_mtim.tv_sec - now) <= 5,
        "atime kept, mtime now");
  struct stat before = Stat(f);
  timespec pause{0, 20'000'000};
  nanosleep(&pause, nullptr);
  WriteFile(f, "more", O_APPEND);
  st = Stat(f);
  Check(st.st_size == 14 && (st.st_mtim.tv_sec > before.st_mtim.tv_sec ||
                             (st.st_mtim.tv_sec == before.st_mtim.tv_sec &&
                              st.st_mtim.tv_nsec > before.st_mtim.tv_nsec)),
        "a write moves mtime forward");
  Check(chmod(f.c_str(), 0644) == 0, "chmod back");
  struct statvfs sv;
  Check(statvfs(g_dir.c_str(), &sv) == 0 && sv.f_blocks > 0 && sv.f_bsize > 0 && sv.f_frsize > 0 &&
            sv.f_bavail <= sv.f_blocks && sv.f_namemax >= 255,
        "statvfs: sizes and name length");
  int fd = open(f.c_str(), O_RDWR);
  Check(fd >= 0 && write(fd, "x", 1) == 1 && fsync(fd) == 0 && fdatasync(fd) == 0,
        "fsync and fdatasync");
  close(fd);
  Check(access(f.c_str(), R_OK | W_OK) == 0 && access(f.c_str(), F_OK) == 0, "access R_OK|W_OK");
  CheckErrno(access(P("missing").c_str(), F_OK), ENOENT, "access missing");
}

void TestAppend() {
  std::string f = P("append");
  WriteFile(f, "0123456789");
  int a = open(f.c_str(), O_WRONLY | O_APPEND);
  int b = open(f.c_str(), O_WRONLY | O_APPEND);
  bool ok = write(a, "AA", 2) == 2 && write(b, "BB", 2) == 2 && write(a, "CC", 2) == 2;
  Check(ok && ReadFile(f) == "0123456789AABBCC", "O_APPEND writes from two fds land at the end");
  Check(lseek(a, 0, SEEK_SET) == 0 && write(a, "DD", 2) == 2 && ReadFile(f) == "0123456789AABBCCDD",
        "O_APPEND ignores the file position");
  Check(pwrite(a, "EE", 2, 0) == 2 && ReadFile(f) == "0123456789AABBCCDDEE",
        "pwrite on O_APPEND appends (Linux)");
  int rw = open(f.c_str(), O_RDWR);
  Check(pwrite(rw, "xy", 2, 0) == 2 && write(a, "FF", 2) == 2 &&
            ReadFile(f) == "xy23456789AABBCCDDEEFF",
        "positional and append writes mixed");
  struct stat st;
  Check(fstat(a, &st) == 0 && st.st_size == 22, "fstat after appends");
  close(a);
  close(b);
  close(rw);
}

void TestDirect() {
  std::string f = P("direct");
  int fd = open(f.c_str(), O_CREAT | O_RDWR | O_DIRECT, 0644);
  Check(fd >= 0, "open O_DIRECT");
  void* buf = nullptr;
  posix_memalign(&buf, 4096, 1 << 20);
  std::string data = Pattern(1 << 20, 5);
  std::memcpy(buf, data.data(), data.size());
  Check(pwrite(fd, buf, 1 << 20, 0) == 1 << 20, "O_DIRECT write 1 MiB aligned");
  std::memset(buf, 0, 1 << 20);
  Check(pread(fd, buf, 1 << 20, 0) == 1 << 20 && std::memcmp(buf, data.data(), 1 << 20) == 0,
        "O_DIRECT read it back");
  Check(ReadFile(f) == data, "a buffered read sees the direct write");
  int cached = open(f.c_str(), O_RDWR);
  char c4[4];
  Check(pread(cached, c4, 4, 8192) == 4, "cache a page through a buffered fd");
  std::memcpy(buf, "DIRECT!!", 8);
  Check(pwrite(fd, buf, 4096, 8192) == 4096, "O_DIRECT overwrite of that page");
  Check(pread(cached, c4, 4, 8192) == 4 && std::memcmp(c4, "DIRE", 4) == 0,
        "the buffered fd sees the direct write at once");
  Check(pwrite(cached, "buffered", 8, 8192) == 8, "buffered write");
  Check(pread(fd, buf, 4096, 8192) == 4096 && std::memcmp(buf, "buffered", 8) == 0,
        "a direct read sees the buffered write");
  close(cached);
  close(fd);
  std::free(buf);
}

void TestMmap() {
  std::string f = P("mapped");
  std::string data = Pattern(3 * 4096 + 100, 9);
  WriteFile(f, data);
  int fd = open(f.c_str(), O_RDWR);
  size_t len = data.size();
  auto* p = static_cast<char*>(mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
  Check(p != MAP_FAILED, "mmap MAP_SHARED read/write");
  if (p == MAP_FAILED) return;
  Check(std::memcmp(p, data.data(), len) == 0, "a mapping reads the file");
  std::memcpy(p + 5000, "via mmap", 8);
  std::string back(8, '\0');
  Check(pread(fd, back.data(), 8, 5000) == 8 && back == "via mmap",
        "read() sees a store through the mapping");
  Check(pwrite(fd, "via write", 9, 9000) == 9 && std::memcmp(p + 9000, "via write", 9) == 0,
        "the mapping sees a write()");
  Check(msync(p, len, MS_SYNC) == 0, "msync");
  munmap(p, len);
  close(fd);
  data.replace(5000, 8, "via mmap");
  data.replace(9000, 9, "via write");
  Check(ReadFile(f) == data, "after close, the file holds both");
  fd = open(f.c_str(), O_RDWR);
  auto* q = static_cast<char*>(mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0));
  std::memcpy(q, "private", 7);
  munmap(q, len);
  close(fd);
  Check(ReadFile(f) == data, "MAP_PRIVATE stores stay private");
}

void TestOpenUnlinked() {
  std::string f = P("unlinked");
  WriteFile(f, "still here");
  int fd = open(f.c_str(), O_RDWR);
  Check(unlink(f.c_str()) == 0 && Stat(f).st_ino == 0, "unlink an open file: the name goes");
  char buf[32] = {};
  Check(pread(fd, buf, sizeof(buf), 0) == 10 && std::string(buf) == "still here",
        "its descriptor still reads");
  Check(pwrite(fd, "!", 1, 10) == 1 && fsync(fd) == 0, "and writes");
  struct stat st;
  Check(fstat(fd, &st) == 0 && st.st_size == 11, "fstat of the unlinked file");
  close(fd);
  WriteFile(P("target"), "old target");
  WriteFile(P("source"), "new content");
  int t = open(P("target").c_str(), O_RDONLY);
  Check(rename(P("source").c_str(), P("target").c_str()) == 0, "rename over an open file");
  std::memset(buf, 0, sizeof(buf));
  Check(pread(t, buf, sizeof(buf), 0) == 10 && std::string(buf) == "old target",
        "the replaced file's descriptor still reads its data");
  close(t);
  Check(ReadFile(P("target")) == "new content", "the name has the new file");
  // No hidden names left once everything is closed. close() returns after FUSE's
  // FLUSH; the RELEASE that removes the hidden name follows asynchronously (as the
  // Linux NFS client's silly-rename cleanup does), so the name may outlive close()
  // briefly: wait for it, with a deadline no loaded machine comes near.
  auto hidden_left = [] {
    DIR* d = opendir(g_dir.c_str());
    bool found = false;
    for (dirent* e; (e = readdir(d));) found = found || std::strncmp(e->d_name, ".nfsx", 5) == 0;
    closedir(d);
    return found;
  };
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (hidden_left() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  Check(!hidden_left(), "no hidden .nfsx files left after the last close");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: posix_suite DIR\n");
    return 2;
  }
  g_dir = argv[1];
  std::vector<std::pair<const char*, std::function<void()>>> tests = {
      {"create/read/write", TestCreateReadWrite},
      {"large sequential", TestLargeSequential},
      {"truncate", TestTruncate},
      {"rename", TestRename},
      {"link/symlink", TestLinks},
      {"directories", TestDirectories},
      {"large directory", TestLargeDirectory},
      {"attributes", TestAttributes},
      {"O_APPEND", TestAppend},
      {"O_DIRECT", TestDirect},
      {"mmap", TestMmap},
      {"unlinked while open", TestOpenUnlinked},
  };
  for (auto& [name, fn] : tests) {
    std::printf("== %s\n", name);
    fn();
  }
  std::printf("posix_suite: %d passed, %d failed\n", g_passed, g_failed);
  return g_failed ? 1 : 0;
}
