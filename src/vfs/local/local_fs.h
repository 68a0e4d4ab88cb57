// LocalFs: a Filesystem over a local directory tree (Linux only).
//
// Every Node holds an O_PATH descriptor of its file. Names are resolved one
// component at a time with *at() calls relative to the directory's descriptor
// and never follow symlinks, so neither the server nor a client can be led out
// of the exported tree by a symlink. Mount points inside the export are not
// crossed (Lookup gives EXDEV).
//
// Handles are the kernel's own (name_to_handle_at / open_by_handle_at), so
// they survive restarts of the server: persistent() is true. Decoding them
// needs CAP_DAC_READ_SEARCH. A handle of a file outside the exported directory
// but on the same filesystem would decode too (like knfsd's no_subtree_check):
// the server must only accept handles it issued, which its MAC ensures.
//
// A removed file stays reachable through a Node or a handle while anything
// holds it open; LocalFs reports such files as ESTALE (st_nlink == 0), as the
// VFS contract asks.
#pragma once

#include <memory>
#include <string>

#include "vfs/vfs.h"

namespace nfsx::vfs {

// Opens `root` (an absolute or relative directory path; symlinks in this path
// are followed, once, here) as a filesystem. Fails with:
//  - the errno of open() if `root` is not an accessible directory;
//  - EOPNOTSUPP if the filesystem cannot produce file handles;
//  - EOVERFLOW if its handles do not fit in kMaxBackendHandle;
//  - EPERM if open_by_handle_at() is refused (missing CAP_DAC_READ_SEARCH);
//  - the errno of opening /proc/self/fd/N if /proc is not mounted.
// The process umask is left alone: new objects get exactly the mode asked for.
Result<std::unique_ptr<Filesystem>> MakeLocalFs(const std::string& root);

}  // namespace nfsx::vfs
