#include "proto/nfsstat.h"

#include <cerrno>

namespace nfsx {

using namespace nfs3;

nfsstat3 NfsStatFromErrno(int err) {
  switch (err) {
    case 0: return NFS3_OK;
    case EPERM: return NFS3ERR_PERM;
    case ENOENT: return NFS3ERR_NOENT;
    case ENXIO: return NFS3ERR_NXIO;
    case EACCES: return NFS3ERR_ACCES;
    case EEXIST: return NFS3ERR_EXIST;
    case EXDEV: return NFS3ERR_XDEV;
    case ENODEV: return NFS3ERR_NODEV;
    case ENOTDIR: return NFS3ERR_NOTDIR;
    case EISDIR: return NFS3ERR_ISDIR;
    case EINVAL: return NFS3ERR_INVAL;
    case EFBIG: return NFS3ERR_FBIG;
    case ENOSPC: return NFS3ERR_NOSPC;
    case EROFS: return NFS3ERR_ROFS;
    case EMLINK: return NFS3ERR_MLINK;
    case ENAMETOOLONG: return NFS3ERR_NAMETOOLONG;
    case ENOTEMPTY: return NFS3ERR_NOTEMPTY;
    case EDQUOT: return NFS3ERR_DQUOT;
    case ESTALE: return NFS3ERR_STALE;
    case EBADF: return NFS3ERR_BADHANDLE;
    case ENOTSUP: return NFS3ERR_NOTSUPP;
    case ELOOP: return NFS3ERR_INVAL;  // a symlink where a directory was needed
    case EAGAIN: return NFS3ERR_JUKEBOX;
    case EOVERFLOW: return NFS3ERR_FBIG;
    case ETXTBSY: return NFS3ERR_ACCES;
    default: return NFS3ERR_IO;
  }
}

mount3::mountstat3 MountStatFromErrno(int err) {
  switch (err) {
    case 0: return mount3::MNT3_OK;
    case EPERM: return mount3::MNT3ERR_PERM;
    case ENOENT: return mount3::MNT3ERR_NOENT;
    case EACCES: return mount3::MNT3ERR_ACCES;
    case ENOTDIR: return mount3::MNT3ERR_NOTDIR;
    case EINVAL: return mount3::MNT3ERR_INVAL;
    case ENAMETOOLONG: return mount3::MNT3ERR_NAMETOOLONG;
    default: return mount3::MNT3ERR_IO;
  }
}

int ErrnoFromNfsStat(nfsstat3 status) {
  // As Linux's nfs_stat_to_errno, except that the protocol-only codes, which
  // Linux maps to kernel-internal errnos (EBADHANDLE=521...), become the
  // nearest errno an application can understand.
  switch (status) {
    case NFS3_OK: return 0;
    case NFS3ERR_PERM: return EPERM;
    case NFS3ERR_NOENT: return ENOENT;
    case NFS3ERR_IO: return EIO;
    case NFS3ERR_NXIO: return ENXIO;
    case NFS3ERR_ACCES: return EACCES;
    case NFS3ERR_EXIST: return EEXIST;
    case NFS3ERR_XDEV: return EXDEV;
    case NFS3ERR_NODEV: return ENODEV;
    case NFS3ERR_NOTDIR: return ENOTDIR;
    case NFS3ERR_ISDIR: return EISDIR;
    case NFS3ERR_INVAL: return EINVAL;
    case NFS3ERR_FBIG: return EFBIG;
    case NFS3ERR_NOSPC: return ENOSPC;
    case NFS3ERR_ROFS: return EROFS;
    case NFS3ERR_MLINK: return EMLINK;
    case NFS3ERR_NAMETOOLONG: return ENAMETOOLONG;
    case NFS3ERR_NOTEMPTY: return ENOTEMPTY;
    case NFS3ERR_DQUOT: return EDQUOT;
    case NFS3ERR_STALE: return ESTALE;
    case NFS3ERR_REMOTE: return EREMOTE;
    case NFS3ERR_BADHANDLE: return ESTALE;
    case NFS3ERR_NOT_SYNC: return EIO;
    case NFS3ERR_BAD_COOKIE: return EIO;
    case NFS3ERR_NOTSUPP: return ENOTSUP;
    case NFS3ERR_TOOSMALL: return EIO;
    case NFS3ERR_SERVERFAULT: return EREMOTEIO;
    case NFS3ERR_BADTYPE: return EINVAL;
    case NFS3ERR_JUKEBOX: return EAGAIN;
  }
  return EIO;
}

const char* NfsStatName(nfsstat3 status) {
  switch (status) {
#define NFSX_CASE(s) \
  case s:            \
    return #s;
    NFSX_CASE(NFS3_OK)
    NFSX_CASE(NFS3ERR_PERM)
    NFSX_CASE(NFS3ERR_NOENT)
    NFSX_CASE(NFS3ERR_IO)
    NFSX_CASE(NFS3ERR_NXIO)
    NFSX_CASE(NFS3ERR_ACCES)
    NFSX_CASE(NFS3ERR_EXIST)
    NFSX_CASE(NFS3ERR_XDEV)
    NFSX_CASE(NFS3ERR_NODEV)
    NFSX_CASE(NFS3ERR_NOTDIR)
    NFSX_CASE(NFS3ERR_ISDIR)
    NFSX_CASE(NFS3ERR_INVAL)
    NFSX_CASE(NFS3ERR_FBIG)
    NFSX_CASE(NFS3ERR_NOSPC)
    NFSX_CASE(NFS3ERR_ROFS)
    NFSX_CASE(NFS3ERR_MLINK)
    NFSX_CASE(NFS3ERR_NAMETOOLONG)
    NFSX_CASE(NFS3ERR_NOTEMPTY)
    NFSX_CASE(NFS3ERR_DQUOT)
    NFSX_CASE(NFS3ERR_STALE)
    NFSX_CASE(NFS3ERR_REMOTE)
    NFSX_CASE(NFS3ERR_BADHANDLE)
    NFSX_CASE(NFS3ERR_NOT_SYNC)
    NFSX_CASE(NFS3ERR_BAD_COOKIE)
    NFSX_CASE(NFS3ERR_NOTSUPP)
    NFSX_CASE(NFS3ERR_TOOSMALL)
    NFSX_CASE(NFS3ERR_SERVERFAULT)
    NFSX_CASE(NFS3ERR_BADTYPE)
    NFSX_CASE(NFS3ERR_JUKEBOX)
#undef NFSX_CASE
  }
  return "NFS3ERR_UNKNOWN";
}

}  // namespace nfsx
