// Options of `nfsx mount -o a,b=c,...`: the client's own (attribute cache,
// transfer sizes, identity: the URL query names) and the mount's (ro, direct_io,
// allow_other...). See docs/fuse.md for the list and what each one does.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "nfsx/options.h"
#include "nfsx/result.h"

namespace nfsx::fuse {

struct MountOptions {
  bool read_only = false;
  // Every open bypasses the kernel page cache (FOPEN_DIRECT_IO); shared mmap then fails.
  bool direct_io = false;
  bool allow_other = false;
  // Each request reaches the server with its caller's uid, gid and groups, as with the
  // kernel NFS client. Off when the mount is given one identity (uid=, gid=).
  bool caller_identity = true;
  bool default_permissions = false;
  // The kernel's write-back cache: faster small writes, but the kernel then trusts its
  // own file size and never sees another client's (docs/fuse.md).
  bool writeback_cache = false;
  bool splice = true;
  bool debug = false;  // libfuse prints every request
  int max_threads = 32;
  // Names (directory, name) -> node the mount remembers to find the file an unlink or
  // rename replaces; past this many it starts over (NodeTable). Tests set it tiny.
  size_t max_names = size_t{1} << 20;
};

// Applies a comma-separated -o list. Client options (actimeo=, noac, nconnect=,
// rsize=, wsize=, uid=, gid=, ...) go to `client`, after whatever the URL set.
// Unknown names are an error that *error explains.
Result<void> ParseMountOptions(std::string_view list, MountOptions* mount, ClientOptions* client,
                               std::string* error);

}  // namespace nfsx::fuse
