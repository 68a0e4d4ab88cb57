// nfsx::Result<T>: a value, or an errno-style error.
//
// Errors carry POSIX errno values (ENOENT, EACCES, ESTALE...), mapped from NFS
// status codes the way the Linux client maps them, so callers can treat the
// library like the local filesystem.
#pragma once

#include <cerrno>
#include <expected>

#include "nfsx/error.h"

namespace nfsx {

template <class T>
using Result = std::expected<T, Error>;

// The error branch of a Result, for `return Fail(ENOENT);`.
inline std::unexpected<Error> Fail(int code) { return std::unexpected<Error>(Error{code}); }

// Errno of the last failed libc call, as a Result error.
inline std::unexpected<Error> FailErrno() { return Fail(errno != 0 ? errno : EIO); }

}  // namespace nfsx
