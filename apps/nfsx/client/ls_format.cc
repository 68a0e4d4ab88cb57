#include "apps/nfsx/client/ls_format.h"

#include <fmt/format.h>

#include <algorithm>

#include "apps/nfsx/client/stat_format.h"

namespace nfsx::app::cli {
namespace {

bool IsDevice(const Stat& st) {
  return st.type == FileType::kBlockDevice || st.type == FileType::kCharDevice;
}

std::string SizeColumn(const Stat& st) {
  if (IsDevice(st)) return fmt::format("{}, {}", st.rdev_major, st.rdev_minor);
  return fmt::format("{}", st.size);
}

}  // namespace

std::vector<std::string> FormatLongListing(const std::vector<ListedEntry>& entries) {
  size_t nlink_w = 1, uid_w = 1, gid_w = 1, size_w = 1;
  for (const ListedEntry& e : entries) {
    nlink_w = std::max(nlink_w, fmt::formatted_size("{}", e.attr.nlink));
    uid_w = std::max(uid_w, fmt::formatted_size("{}", e.attr.uid));
    gid_w = std::max(gid_w, fmt::formatted_size("{}", e.attr.gid));
    size_w = std::max(size_w, SizeColumn(e.attr).size());
  }
  std::vector<std::string> lines;
  lines.reserve(entries.size());
  for (const ListedEntry& e : entries) {
    std::string line =
        fmt::format("{} {:>{}} {:>{}} {:>{}} {:>{}} {} {}", ModeString(e.attr.type, e.attr.mode),
                    e.attr.nlink, nlink_w, e.attr.uid, uid_w, e.attr.gid, gid_w, SizeColumn(e.attr),
                    size_w, ShortTime(e.attr.mtime), e.name);
    if (e.attr.type == FileType::kSymlink) line += " -> " + e.link_target;
    lines.push_back(std::move(line));
  }
  return lines;
}

std::string FormatStatReport(const std::string& display, const Stat& st,
                             const std::string& link_target) {
  std::string out = fmt::format("  File: {}", display);
  if (st.type == FileType::kSymlink) out += " -> " + link_target;
  out += fmt::format("\n  Size: {:<15} Blocks: {:<10} {}\n", st.size, st.used / 512,
                     TypeName(st.type, st.size));
  out += fmt::format("Device: {:x}h/{}d\tInode: {:<11} Links: {}", st.fsid, st.fsid, st.fileid,
                     st.nlink);
  if (IsDevice(st)) out += fmt::format("\tDevice type: {},{}", st.rdev_major, st.rdev_minor);
  out += fmt::format("\nAccess: ({:04o}/{})  Uid: ({:>5})   Gid: ({:>5})\n", st.mode,
                     ModeString(st.type, st.mode), st.uid, st.gid);
  out += fmt::format("Access: {}\nModify: {}\nChange: {}\n", FullTime(st.atime), FullTime(st.mtime),
                     FullTime(st.ctime));
  return out;
}

}  // namespace nfsx::app::cli
