// Result<T>: the value-or-error type of everything below the protocol layer.
//
// Errors are plain errno values: the storage backends speak POSIX, and the one
// place that turns them into NFS status codes is proto/nfsstat.cc.
#pragma once

#include <cerrno>
#include <expected>

namespace nfsx {

struct Error {
  int code = EIO;  // an errno value, never 0
};

template <class T>
using Result = std::expected<T, Error>;

// The error branch of a Result, for `return Fail(ENOENT);`.
inline std::unexpected<Error> Fail(int code) { return std::unexpected<Error>(Error{code}); }

// Errno of the last failed libc call, as a Result error.
inline std::unexpected<Error> FailErrno() { return Fail(errno != 0 ? errno : EIO); }

}  // namespace nfsx
