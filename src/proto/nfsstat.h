// The one place where errno values and NFSv3 status codes meet.
#pragma once

#include "proto/mount3_types.h"
#include "proto/nfs3_types.h"

namespace nfsx {

// Server side: the status to answer for a failed local operation.
nfs3::nfsstat3 NfsStatFromErrno(int err);
mount3::mountstat3 MountStatFromErrno(int err);
// Client side: the errno an application sees, as the Linux client maps it.
int ErrnoFromNfsStat(nfs3::nfsstat3 status);
const char* NfsStatName(nfs3::nfsstat3 status);

}  // namespace nfsx
