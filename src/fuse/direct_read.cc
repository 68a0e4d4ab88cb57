#include "fuse/direct_read.h"

#include <condition_variable>
#include <cstring>
#include <mutex>
#include <vector>

#include "proto/nfsstat.h"

namespace nfsx::fuse {

using namespace nfs3;

Result<size_t> DirectRead(client::ClientCore& core, const client::InodePtr& ino, uint64_t offset,
                          std::span<std::byte> out) {
  // Our own unsent writes must be visible to a direct read.
  if (ino->dirty_bytes.load() > 0) {
    if (auto f = core.Flush(ino, false); !f) return std::unexpected(f.error());
  }
  if (out.empty()) return 0;
  struct Chunk {
    uint64_t offset;
    uint32_t count;
    size_t got = 0;
    bool eof = false;
  };
  std::vector<Chunk> chunks;
  for (uint64_t done = 0; done < out.size(); done += core.rsize()) {
    chunks.push_back({offset + done,
                      static_cast<uint32_t>(std::min<uint64_t>(core.rsize(), out.size() - done))});
  }
  struct Wait {
    std::mutex mu;
    std::condition_variable cv;
    size_t pending = 0;
    int error = 0;
  } wait;
  wait.pending = chunks.size();
  for (Chunk& c : chunks) {
    std::byte* dst = out.data() + (c.offset - offset);
    core.channel().Call<READ3res>(
        nfsproc3::READ, READ3args{ino->fh(), c.offset, c.count},
        [&core, &wait, &c, dst](Result<READ3res> r) {
          int err = !r ? r.error().code : r->status != NFS3_OK ? ErrnoFromNfsStat(r->status) : 0;
          if (!err) {
            // The data points into the reply buffer: copy it while the reply lives.
            auto data = r->resok.data.bytes;
            c.got = std::min<size_t>(data.size(), c.count);
            c.eof = r->resok.eof;
            std::memcpy(dst, data.data(), c.got);
            core.channel().AddReadBytes(c.got);
          }
          std::lock_guard lock(wait.mu);
          if (err && !wait.error) wait.error = err;
          if (--wait.pending == 0) wait.cv.notify_all();
        });
  }
  std::unique_lock lock(wait.mu);
  wait.cv.wait(lock, [&] { return wait.pending == 0; });
  if (wait.error) return Fail(wait.error);
  // The file ends at the first short or end-of-file chunk.
  size_t total = 0;
  for (const Chunk& c : chunks) {
    total += c.got;
    if (c.got < c.count || c.eof) break;
  }
  return total;
}

}  // namespace nfsx::fuse
