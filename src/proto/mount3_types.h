// MOUNT protocol version 3 (RFC 1813 Appendix I).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "proto/nfs3_types.h"

namespace nfsx::mount3 {

inline constexpr uint32_t MOUNT_PROGRAM = 100005;
inline constexpr uint32_t MOUNT_V3 = 3;
inline constexpr uint32_t MNTPATHLEN = 1024;
inline constexpr uint32_t MNTNAMLEN = 255;
inline constexpr uint32_t kMaxListEntries = 1u << 16;

enum class mountproc3 : uint32_t { NULLPROC = 0, MNT = 1, DUMP = 2, UMNT = 3, UMNTALL = 4, EXPORT = 5 };

enum class mountstat3 : uint32_t {
  MNT3_OK = 0,
  MNT3ERR_PERM = 1,
  MNT3ERR_NOENT = 2,
  MNT3ERR_IO = 5,
  MNT3ERR_ACCES = 13,
  MNT3ERR_NOTDIR = 20,
  MNT3ERR_INVAL = 22,
  MNT3ERR_NAMETOOLONG = 63,
  MNT3ERR_NOTSUPP = 10004,
  MNT3ERR_SERVERFAULT = 10006,
};
using enum mountstat3;

using dirpath = xdr::BoundedString<MNTPATHLEN>;
using name = xdr::BoundedString<MNTNAMLEN>;

struct mountres3_ok {
  nfs3::nfs_fh3 fhandle;
  std::vector<uint32_t> auth_flavors;
};
struct mountres3 {
  mountstat3 fhs_status = MNT3_OK;
  mountres3_ok mountinfo;
};

struct mountbody {
  name ml_hostname;
  dirpath ml_directory;
};
struct exportnode {
  dirpath ex_dir;
  std::vector<name> ex_groups;
};

template <class X>
void Xdr(X& x, mountres3& v) {
  x(v.fhs_status);
  if (v.fhs_status == MNT3_OK) {
    x(v.mountinfo.fhandle);
    x.Array(v.mountinfo.auth_flavors, 32);
  }
}
template <class X>
void Xdr(X& x, mountbody& v) {
  x(v.ml_hostname);
  x(v.ml_directory);
}

// XDR optional-data lists ("value follows" before each element).
template <class X, class T, class Each>
void XdrList(X& x, std::vector<T>& items, Each each) {
  if constexpr (X::kDecoding) {
    items.clear();
    for (;;) {
      bool follows = false;
      x(follows);
      if (!follows || !x.ok()) break;
      if (items.size() >= kMaxListEntries) return x.Fail();
      items.emplace_back();
      each(items.back());
    }
  } else {
    for (auto& item : items) {
      x(true);
      each(item);
    }
    x(false);
  }
}

template <class X>
void Xdr(X& x, exportnode& v) {
  x(v.ex_dir);
  XdrList(x, v.ex_groups, [&](name& g) { x(g); });
}

struct mountlist {
  std::vector<mountbody> entries;
};
struct exports {
  std::vector<exportnode> entries;
};
template <class X>
void Xdr(X& x, mountlist& v) {
  XdrList(x, v.entries, [&](mountbody& b) { x(b); });
}
template <class X>
void Xdr(X& x, exports& v) {
  XdrList(x, v.entries, [&](exportnode& e) { x(e); });
}

}  // namespace nfsx::mount3
