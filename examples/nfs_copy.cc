// Copies a local file to an NFS server and reads it back, with the blocking API
// for the copy and the async API for the read-back. Prints what went over the wire.
//
//   nfs_copy_example LOCAL_FILE nfs://server/export/path?version=3&mountport=20048
#include <fcntl.h>
#include <nfsx/client.h>
#include <unistd.h>

#include <cstdio>
#include <future>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s LOCAL_FILE NFS_URL\n", argv[0]);
    return 2;
  }
  std::string error;
  // Mount the export; the rest of the URL's path is the file to write.
  auto client = nfsx::Client::Connect(argv[2], &error);
  if (!client) {
    std::fprintf(stderr, "connect: %s\n", error.c_str());
    return 1;
  }
  const std::string& path = (*client)->path_in_export();
  int in = open(argv[1], O_RDONLY);
  if (in < 0) {
    std::perror(argv[1]);
    return 1;
  }
  auto out = (*client)->Open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
  if (!out) {
    std::fprintf(stderr, "open %s: %s\n", path.c_str(), nfsx::ErrorString(out.error()).c_str());
    return 1;
  }
  std::vector<std::byte> buf(1 << 20);
  uint64_t total = 0;
  for (ssize_t n; (n = read(in, buf.data(), buf.size())) > 0; total += static_cast<uint64_t>(n)) {
    auto w = (*out)->Write(std::span(buf.data(), static_cast<size_t>(n)));
    if (!w) {
      std::fprintf(stderr, "write: %s\n", nfsx::ErrorString(w.error()).c_str());
      return 1;
    }
  }
  close(in);
  // Close flushes and commits: when it succeeds the data is on the server's disk.
  if (auto c = (*out)->Close(); !c) {
    std::fprintf(stderr, "close: %s\n", nfsx::ErrorString(c.error()).c_str());
    return 1;
  }
  // Read the first block back asynchronously.
  auto reader = (*client)->Open(path, O_RDONLY);
  if (!reader) return 1;
  std::promise<nfsx::Result<size_t>> got;
  (*reader)->PreadAsync(std::span(buf.data(), buf.size()), 0,
                        [&](nfsx::Result<size_t> r) { got.set_value(r); });
  auto n = got.get_future().get();
  if (!n) return 1;
  std::printf("copied %llu bytes; read back %zu\n%s", static_cast<unsigned long long>(total), *n,
              nfsx::FormatNfsstat((*client)->stats()).c_str());
  return 0;
}
