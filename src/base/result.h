// Result<T>: the value-or-error type used everywhere below the protocol layer
// and in the public client API (include/nfsx/result.h).
//
// Errors are plain errno values: the storage backends speak POSIX, and the one
// place that turns them into NFS status codes is proto/nfsstat.cc.
#pragma once

#include "nfsx/result.h"
