#include "apps/nfsx/client/copier.h"

#include <fmt/format.h>

#include <cstring>

namespace nfsx::app::cli {

template <class... Args>
void Copier::Error(Args&&... args) {
  if (progress_) progress_->Finish();  // the message gets a line of its own
  reporter_->Error(std::forward<Args>(args)...);
}

uint32_t Copier::FinalMode(const Stat& st) const {
  // Like cp: the source's permissions less the umask, or all of its bits with -p.
  return options_.preserve ? st.mode & 07777 : st.mode & 0777 & ~options_.umask;
}

uint64_t Copier::CountBytes(const Location& src) {
  auto st = src.tree->GetAttr(src.path, !options_.recursive);
  return st ? CountBytes(src, *st) : 0;
}

uint64_t Copier::CountBytes(const Location& src, const Stat& st) {
  if (st.type == FileType::kRegular) return st.size;
  if (st.type != FileType::kDirectory || !options_.recursive) return 0;
  auto entries = src.tree->List(src.path);
  if (!entries) return 0;
  uint64_t total = 0;
  for (const TreeEntry& e : *entries) {
    Location child = src.Child(e.name);
    if (e.attr) {
      total += CountBytes(child, *e.attr);
    } else if (auto child_st = src.tree->GetAttr(child.path, false)) {
      total += CountBytes(child, *child_st);
    }
  }
  return total;
}

void Copier::Copy(const Location& src, const Location& dst) {
  // Without -r a symlink given by name is copied as the file it points to, as cp does.
  auto st = src.tree->GetAttr(src.path, !options_.recursive);
  if (!st) return Error(src.display, st.error().code);
  CopyNode(src, *st, dst, true);
}

void Copier::CopyNode(const Location& src, const Stat& st, const Location& dst,
                      bool dst_may_exist) {
  std::optional<Stat> existing;
  if (dst_may_exist) {
    // A symlink replaces what is there; anything else writes through a symlink, as cp does.
    auto e = dst.tree->GetAttr(dst.path, st.type != FileType::kSymlink);
    if (e) {
      existing = *e;
    } else if (e.error().code != ENOENT) {
      return Error(dst.display, e.error().code);
    }
  }
  bool same_namespace = src.tree->identity() == dst.tree->identity();
  if (existing && same_namespace && existing->fsid == st.fsid && existing->fileid == st.fileid) {
    return Error(fmt::format("'{}' and '{}' are the same file", src.display, dst.display));
  }
  switch (st.type) {
    case FileType::kRegular:
      return CopyFile(src, st, dst, existing);
    case FileType::kDirectory:
      if (!options_.recursive) return Error(src.display, "-r not specified; omitting directory");
      if (created_dirs_.contains({src.tree->identity(), st.fsid, st.fileid})) {
        return Error(src.display, "cannot copy a directory into itself");
      }
      return CopyDir(src, st, dst, existing);
    case FileType::kSymlink:
      return CopySymlink(src, dst, existing);
    default:
      return Error(src.display, "not a regular file, directory or symlink; not copied");
  }
}

void Copier::CopyFile(const Location& src, const Stat& st, const Location& dst,
                      const std::optional<Stat>& existing) {
  if (existing && existing->type == FileType::kDirectory) {
    return Error(dst.display, "cannot overwrite directory with non-directory");
  }
  auto in = src.tree->OpenRead(src.path);
  if (!in) return Error(src.display, in.error().code);
  uint32_t final_mode = FinalMode(st);
  // Writable by us whatever the final mode: over NFS the server checks each WRITE against
  // the file's mode, so a read-only copy gets its mode only once it is written.
  uint32_t create_mode = (final_mode & 0777) | 0200;
  auto out = dst.tree->OpenWrite(dst.path, create_mode);
  if (!out) return Error(dst.display, out.error().code);
  bool ok = true;
  for (;;) {
    auto n = (*in)->Read(buffer_);
    if (!n) {
      Error(src.display, n.error().code);
      ok = false;
      break;
    }
    if (*n == 0) break;
    if (auto w = (*out)->Write(std::span(buffer_).first(*n)); !w) {
      Error(dst.display, w.error().code);
      ok = false;
      break;
    }
    if (progress_) progress_->Add(*n);
  }
  // Even after a failure: the library commits what was written, and says if that failed.
  if (auto closed = (*out)->Close(); !closed) {
    Error(dst.display, closed.error().code);
    ok = false;
  }
  if (!ok) return;
  // An existing file keeps its mode unless -p, as with cp.
  if (existing && !options_.preserve) return;
  FinishAttrs(dst, st, final_mode, existing ? existing->mode : create_mode);
}

void Copier::CopyDir(const Location& src, const Stat& st, const Location& dst,
                     const std::optional<Stat>& existing) {
  if (existing && existing->type != FileType::kDirectory) {
    return Error(dst.display, "cannot overwrite non-directory with directory");
  }
  uint32_t final_mode = FinalMode(st);
  uint32_t mode_now = existing ? existing->mode : (final_mode & 0777) | 0700;
  if (!existing) {
    // Writable and searchable by us until its contents are in.
    if (auto made = dst.tree->Mkdir(dst.path, mode_now); !made) {
      return Error(dst.display, made.error().code);
    }
  }
  if (src.tree->identity() == dst.tree->identity()) {
    if (auto made = dst.tree->GetAttr(dst.path, true)) {
      created_dirs_.insert({dst.tree->identity(), made->fsid, made->fileid});
    }
  }
  auto entries = src.tree->List(src.path);
  if (!entries) {
    Error(src.display, entries.error().code);
  } else {
    for (const TreeEntry& e : *entries) {
      Location child = src.Child(e.name);
      std::optional<Stat> child_st = e.attr;
      if (!child_st) {
        auto got = src.tree->GetAttr(child.path, false);
        if (!got) {
          Error(child.display, got.error().code);
          continue;
        }
        child_st = *got;
      }
      // In a directory we just made nothing exists yet: no need to look.
      CopyNode(child, *child_st, dst.Child(e.name), existing.has_value());
    }
  }
  if (existing && !options_.preserve) return;
  FinishAttrs(dst, st, final_mode, mode_now);
}

void Copier::CopySymlink(const Location& src, const Location& dst,
                         const std::optional<Stat>& existing) {
  auto target = src.tree->Readlink(src.path);
  if (!target) return Error(src.display, target.error().code);
  if (existing) {
    if (existing->type == FileType::kDirectory) {
      return Error(dst.display, "cannot overwrite directory with non-directory");
    }
    if (auto removed = dst.tree->Unlink(dst.path); !removed) {
      return Error(dst.display, removed.error().code);
    }
  }
  // No -p for the link itself: setting attributes by path would follow it.
  if (auto made = dst.tree->Symlink(*target, dst.path); !made) {
    Error(dst.display, made.error().code);
  }
}

void Copier::FinishAttrs(const Location& dst, const Stat& st, uint32_t final_mode,
                         uint32_t mode_now) {
  if (options_.preserve) {
    // Owner first: chown clears set-id bits. Only root may give files away, so a refusal
    // is expected and, as with cp -p, not an error.
    if (auto owned = dst.tree->SetOwner(dst.path, st.uid, st.gid);
        !owned && owned.error().code != EPERM && owned.error().code != EINVAL) {
      Error(dst.display,
            fmt::format("cannot preserve ownership: {}", std::strerror(owned.error().code)));
    }
  }
  if (final_mode != mode_now || options_.preserve) {
    if (auto moded = dst.tree->SetMode(dst.path, final_mode); !moded) {
      Error(dst.display,
            fmt::format("cannot set permissions: {}", std::strerror(moded.error().code)));
    }
  }
  if (options_.preserve) {
    if (auto timed = dst.tree->SetTimes(dst.path, st.atime, st.mtime); !timed) {
      Error(dst.display,
            fmt::format("cannot preserve times: {}", std::strerror(timed.error().code)));
    }
  }
}

}  // namespace nfsx::app::cli
