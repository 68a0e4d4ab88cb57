#include "fuse/dir_listing.h"

#include "proto/nfsstat.h"

namespace nfsx::fuse {

using namespace nfs3;

Result<std::vector<DirItem>> ListDirectory(client::ClientCore& core, const client::InodePtr& dir) {
  std::vector<DirItem> out;
  uint64_t dotdot = dir->fileid();
  uint64_t cookie = 0;
  cookieverf3 verf{};
  for (int restarts = 0;;) {
    READDIRPLUS3args a{dir->fh(), cookie, verf, 64 * 1024, 256 * 1024};
    int64_t sent_ns = client::SteadyNowNs();
    auto r = core.channel().CallSync<READDIRPLUS3res>(nfsproc3::READDIRPLUS, a);
    if (!r) return std::unexpected(r.error());
    if (r->status == NFS3ERR_BAD_COOKIE && restarts++ < 3) {
      // The directory changed under our cookie: start over.
      out.clear();
      cookie = 0;
      verf = {};
      continue;
    }
    if (r->status != NFS3_OK) return Fail(ErrnoFromNfsStat(r->status));
    for (auto& e : r->resok.entries) {
      if (e.name.value == "." || e.name.value == "..") {
        if (e.name.value == "..") dotdot = e.fileid;
        continue;
      }
      DirItem item;
      item.name = std::move(e.name.value);
      item.fileid = e.fileid;
      if (e.name_attributes) {
        item.type = static_cast<FileType>(e.name_attributes->type);
        item.type_known = true;
        if (e.name_handle) item.ino = core.Intern(*e.name_handle, *e.name_attributes, sent_ns);
      }
      out.push_back(std::move(item));
    }
    cookie = r->resok.entries.empty() ? cookie : r->resok.entries.back().cookie;
    verf = r->resok.cookieverf;
    if (r->resok.eof) break;
    if (r->resok.entries.empty()) return Fail(EIO);  // no progress and no end: a broken server
  }
  std::vector<DirItem> all;
  all.reserve(out.size() + 2);
  all.push_back({".", dir->fileid(), FileType::kDirectory, true, dir});
  all.push_back({"..", dotdot, FileType::kDirectory, true, nullptr});
  for (auto& item : out) all.push_back(std::move(item));
  return all;
}

}  // namespace nfsx::fuse
