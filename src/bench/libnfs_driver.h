// Debian's libnfs (4.0) as a bench driver: an NFS client independent of nfsx.
//
// libnfs has no counters of its own, so the driver counts what it asks libnfs to send,
// knowing what libnfs 4.0 sends for each call (lib/nfs_v3.c): a pread/pwrite is one
// READ/WRITE per rsize/wsize chunk, all in flight at once; an O_APPEND write is a GETATTR
// and then the WRITEs; fsync is one COMMIT, and close of a file that was ever written is one
// more; open is a LOOKUP per path component and an ACCESS (O_CREAT instead: the parent's
// lookup, CREATE and LOOKUP), plus a SETATTR for O_TRUNC; fstat is a GETATTR; unlink the
// parent's lookup and a REMOVE. The parent's lookup is a LOOKUP per directory, or a GETATTR
// when the parent is the mounted directory. Pages of the
// libnfs cache are off (the default). Not counted: libnfs re-sends the rest of a short
// READ/WRITE, which neither nfsx nor Ganesha return for regular files (bench_test checks
// the counts against what the nfsx server saw).
#pragma once

#include <memory>
#include <string>

#include "bench/driver.h"

namespace nfsx::bench {

Result<std::unique_ptr<Driver>> MakeLibnfsDriver(const std::string& url, std::string* error);

}  // namespace nfsx::bench
