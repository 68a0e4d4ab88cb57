// The invariant the XDR fuzzers check: whatever our decoder accepts, our encoder writes
// back in the same number of bytes, and that encoding decodes to a value that encodes
// to the very same bytes. (The first encoding need not equal the input: the decoder
// ignores the contents of padding bytes, which the encoder always writes as zeros.)
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <vector>

#include "base/out_buffer.h"
#include "proto/mount3_types.h"
#include "proto/nfs3_types.h"
#include "xdr/xdr.h"

namespace nfsx::fuzz {

using Bytes = std::span<const std::byte>;

// A violated invariant is a crash as far as libFuzzer is concerned.
[[noreturn]] inline void Violation(const char* what, const char* type) {
  std::fprintf(stderr, "invariant violated for %s: %s\n", type, what);
  std::abort();
}

template <class T>
std::vector<std::byte> EncodeToVector(const T& value) {
  OutBuffer out;
  xdr::Encode(&out, value);
  return out.Flatten();
}

template <class T>
void CheckRoundTrip(Bytes in, const char* type) {
  T value{};
  xdr::XdrDecoder d(in);
  d(value);
  if (!d.ok()) return;
  const size_t consumed = in.size() - d.remaining();

  std::vector<std::byte> once = EncodeToVector(value);
  if (once.size() != consumed) Violation("re-encoding has a different size", type);

  T again{};
  xdr::XdrDecoder d2(once);
  d2(again);
  if (!d2.ok()) Violation("our own encoding does not decode", type);
  if (d2.remaining() != 0) Violation("our own encoding decodes with bytes left over", type);
  if (EncodeToVector(again) != once) Violation("second encoding differs from the first", type);
}

inline void Void(Bytes, const char*) {}

using Check = void (*)(Bytes, const char*);
struct ProcCodecs {
  const char* name;
  Check args;
  Check res;
};

// Indexed by nfsproc3.
inline constexpr ProcCodecs kNfs3Procs[nfs3::kNumProcs] = {
    {"NULL", Void, Void},
    {"GETATTR", CheckRoundTrip<nfs3::GETATTR3args>, CheckRoundTrip<nfs3::GETATTR3res>},
    {"SETATTR", CheckRoundTrip<nfs3::SETATTR3args>, CheckRoundTrip<nfs3::SETATTR3res>},
    {"LOOKUP", CheckRoundTrip<nfs3::LOOKUP3args>, CheckRoundTrip<nfs3::LOOKUP3res>},
    {"ACCESS", CheckRoundTrip<nfs3::ACCESS3args>, CheckRoundTrip<nfs3::ACCESS3res>},
    {"READLINK", CheckRoundTrip<nfs3::READLINK3args>, CheckRoundTrip<nfs3::READLINK3res>},
    {"READ", CheckRoundTrip<nfs3::READ3args>, CheckRoundTrip<nfs3::READ3res>},
    {"WRITE", CheckRoundTrip<nfs3::WRITE3args>, CheckRoundTrip<nfs3::WRITE3res>},
    {"CREATE", CheckRoundTrip<nfs3::CREATE3args>, CheckRoundTrip<nfs3::CREATE3res>},
    {"MKDIR", CheckRoundTrip<nfs3::MKDIR3args>, CheckRoundTrip<nfs3::MKDIR3res>},
    {"SYMLINK", CheckRoundTrip<nfs3::SYMLINK3args>, CheckRoundTrip<nfs3::SYMLINK3res>},
    {"MKNOD", CheckRoundTrip<nfs3::MKNOD3args>, CheckRoundTrip<nfs3::MKNOD3res>},
    {"REMOVE", CheckRoundTrip<nfs3::REMOVE3args>, CheckRoundTrip<nfs3::REMOVE3res>},
    {"RMDIR", CheckRoundTrip<nfs3::RMDIR3args>, CheckRoundTrip<nfs3::RMDIR3res>},
    {"RENAME", CheckRoundTrip<nfs3::RENAME3args>, CheckRoundTrip<nfs3::RENAME3res>},
    {"LINK", CheckRoundTrip<nfs3::LINK3args>, CheckRoundTrip<nfs3::LINK3res>},
    {"READDIR", CheckRoundTrip<nfs3::READDIR3args>, CheckRoundTrip<nfs3::READDIR3res>},
    {"READDIRPLUS", CheckRoundTrip<nfs3::READDIRPLUS3args>, CheckRoundTrip<nfs3::READDIRPLUS3res>},
    {"FSSTAT", CheckRoundTrip<nfs3::FSSTAT3args>, CheckRoundTrip<nfs3::FSSTAT3res>},
    {"FSINFO", CheckRoundTrip<nfs3::FSINFO3args>, CheckRoundTrip<nfs3::FSINFO3res>},
    {"PATHCONF", CheckRoundTrip<nfs3::PATHCONF3args>, CheckRoundTrip<nfs3::PATHCONF3res>},
    {"COMMIT", CheckRoundTrip<nfs3::COMMIT3args>, CheckRoundTrip<nfs3::COMMIT3res>},
};

// Indexed by mountproc3.
inline constexpr ProcCodecs kMount3Procs[] = {
    {"MOUNT NULL", Void, Void},
    {"MNT", CheckRoundTrip<mount3::dirpath>, CheckRoundTrip<mount3::mountres3>},
    {"DUMP", Void, CheckRoundTrip<mount3::mountlist>},
    {"UMNT", CheckRoundTrip<mount3::dirpath>, Void},
    {"UMNTALL", Void, Void},
    {"EXPORT", Void, CheckRoundTrip<mount3::exports>},
};
inline constexpr uint32_t kNumMountProcs = std::size(kMount3Procs);

// The codecs for a program/version/procedure we serve, or null.
inline const ProcCodecs* FindProc(uint32_t prog, uint32_t vers, uint32_t proc) {
  if (prog == nfs3::NFS_PROGRAM && vers == nfs3::NFS_V3 && proc < nfs3::kNumProcs) {
    return &kNfs3Procs[proc];
  }
  if (prog == mount3::MOUNT_PROGRAM && vers == mount3::MOUNT_V3 && proc < kNumMountProcs) {
    return &kMount3Procs[proc];
  }
  return nullptr;
}

}  // namespace nfsx::fuzz
