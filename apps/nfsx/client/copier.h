// The copy logic of `cp`, once for every pairing of local and NFS trees: regular files
// streamed through one 1 MiB buffer, directories recursively, symlinks as symlinks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "apps/nfsx/client/progress.h"
#include "apps/nfsx/client/report.h"
#include "apps/nfsx/client/tree.h"

namespace nfsx::app::cli {

struct CopyOptions {
  bool recursive = false;  // -r: directories and their contents; symlinks copied as links
  bool preserve = false;   // -p: mode, owner (where permitted) and times
  uint32_t umask = 022;    // applied to modes of new files, as open(2) does locally
};

class Copier {
 public:
  // Large enough that each NFS READ and WRITE is a full-sized one.
  static constexpr size_t kBufferBytes = size_t{1} << 20;

  Copier(const CopyOptions& options, Reporter* reporter)
      : options_(options), reporter_(reporter), buffer_(kBufferBytes) {}

  void set_progress(ProgressBar* progress) { progress_ = progress; }

  // Bytes of the regular files Copy(src, ...) would read: the progress bar's 100%.
  uint64_t CountBytes(const Location& src);

  // Copies `src` to exactly `dst` (not into it). Each failure is reported; a failure in a
  // tree does not stop the copy of the rest.
  void Copy(const Location& src, const Location& dst);

 private:
  void CopyNode(const Location& src, const Stat& st, const Location& dst, bool dst_may_exist);
  void CopyFile(const Location& src, const Stat& st, const Location& dst,
                const std::optional<Stat>& existing);
  void CopyDir(const Location& src, const Stat& st, const Location& dst,
               const std::optional<Stat>& existing);
  void CopySymlink(const Location& src, const Location& dst, const std::optional<Stat>& existing);
  // Mode (`final_mode`), and with -p owner and times, once the content is in place.
  void FinishAttrs(const Location& dst, const Stat& st, uint32_t final_mode, uint32_t mode_now);
  uint64_t CountBytes(const Location& src, const Stat& st);
  uint32_t FinalMode(const Stat& st) const;

  template <class... Args>
  void Error(Args&&... args);

  CopyOptions options_;
  Reporter* reporter_;
  ProgressBar* progress_ = nullptr;
  std::vector<std::byte> buffer_;
  // Directories this copy created (tree identity, fsid, fileid): met again as a source,
  // they mean the copy is running into itself ("cp -r a a/b").
  std::set<std::tuple<std::string, uint64_t, uint64_t>> created_dirs_;
};

}  // namespace nfsx::app::cli
