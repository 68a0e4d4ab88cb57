// NFS version 3 wire types (RFC 1813), spelled as in the RFC so grep works.
//
// Each type has one Xdr() description used for both encoding and decoding
// (see xdr/xdr.h). Results share the shape "status, then resok or resfail".
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "xdr/xdr.h"

namespace nfsx::nfs3 {

inline constexpr uint32_t NFS_PROGRAM = 100003;
inline constexpr uint32_t NFS_V3 = 3;
inline constexpr uint32_t NFS3_FHSIZE = 64;
inline constexpr uint32_t NFS3_COOKIEVERFSIZE = 8;
inline constexpr uint32_t NFS3_CREATEVERFSIZE = 8;
inline constexpr uint32_t NFS3_WRITEVERFSIZE = 8;
inline constexpr uint32_t kMaxNameLen = 4096;   // filename3 decode bound; NAME_MAX (255) is checked by the server
inline constexpr uint32_t kMaxPathLen = 4096;   // nfspath3: our PATH_MAX
// Bounds for lists a reply may carry, against hostile servers.
inline constexpr uint32_t kMaxDirEntries = 1u << 20;

enum class nfsproc3 : uint32_t {
  NULLPROC = 0,
  GETATTR = 1,
  SETATTR = 2,
  LOOKUP = 3,
  ACCESS = 4,
  READLINK = 5,
  READ = 6,
  WRITE = 7,
  CREATE = 8,
  MKDIR = 9,
  SYMLINK = 10,
  MKNOD = 11,
  REMOVE = 12,
  RMDIR = 13,
  RENAME = 14,
  LINK = 15,
  READDIR = 16,
  READDIRPLUS = 17,
  FSSTAT = 18,
  FSINFO = 19,
  PATHCONF = 20,
  COMMIT = 21,
};
inline constexpr int kNumProcs = 22;
const char* ProcName(uint32_t proc);

enum class nfsstat3 : uint32_t {
  NFS3_OK = 0,
  NFS3ERR_PERM = 1,
  NFS3ERR_NOENT = 2,
  NFS3ERR_IO = 5,
  NFS3ERR_NXIO = 6,
  NFS3ERR_ACCES = 13,
  NFS3ERR_EXIST = 17,
  NFS3ERR_XDEV = 18,
  NFS3ERR_NODEV = 19,
  NFS3ERR_NOTDIR = 20,
  NFS3ERR_ISDIR = 21,
  NFS3ERR_INVAL = 22,
  NFS3ERR_FBIG = 27,
  NFS3ERR_NOSPC = 28,
  NFS3ERR_ROFS = 30,
  NFS3ERR_MLINK = 31,
  NFS3ERR_NAMETOOLONG = 63,
  NFS3ERR_NOTEMPTY = 66,
  NFS3ERR_DQUOT = 69,
  NFS3ERR_STALE = 70,
  NFS3ERR_REMOTE = 71,
  NFS3ERR_BADHANDLE = 10001,
  NFS3ERR_NOT_SYNC = 10002,
  NFS3ERR_BAD_COOKIE = 10003,
  NFS3ERR_NOTSUPP = 10004,
  NFS3ERR_TOOSMALL = 10005,
  NFS3ERR_SERVERFAULT = 10006,
  NFS3ERR_BADTYPE = 10007,
  NFS3ERR_JUKEBOX = 10008,
};
using enum nfsstat3;

enum class ftype3 : uint32_t {
  NF3REG = 1,
  NF3DIR = 2,
  NF3BLK = 3,
  NF3CHR = 4,
  NF3LNK = 5,
  NF3SOCK = 6,
  NF3FIFO = 7,
};
using enum ftype3;

enum class stable_how : uint32_t { UNSTABLE = 0, DATA_SYNC = 1, FILE_SYNC = 2 };
using enum stable_how;

enum class createmode3 : uint32_t { UNCHECKED = 0, GUARDED = 1, EXCLUSIVE = 2 };
using enum createmode3;

enum class time_how : uint32_t {
  DONT_CHANGE = 0,
  SET_TO_SERVER_TIME = 1,
  SET_TO_CLIENT_TIME = 2,
};
using enum time_how;

// ACCESS3 bits.
inline constexpr uint32_t ACCESS3_READ = 0x0001;
inline constexpr uint32_t ACCESS3_LOOKUP = 0x0002;
inline constexpr uint32_t ACCESS3_MODIFY = 0x0004;
inline constexpr uint32_t ACCESS3_EXTEND = 0x0008;
inline constexpr uint32_t ACCESS3_DELETE = 0x0010;
inline constexpr uint32_t ACCESS3_EXECUTE = 0x0020;

// FSINFO3 properties.
inline constexpr uint32_t FSF3_LINK = 0x0001;
inline constexpr uint32_t FSF3_SYMLINK = 0x0002;
inline constexpr uint32_t FSF3_HOMOGENEOUS = 0x0008;
inline constexpr uint32_t FSF3_CANSETTIME = 0x0010;

using nfs_fh3 = xdr::BoundedOpaque<NFS3_FHSIZE>;
using filename3 = xdr::BoundedString<kMaxNameLen>;
using nfspath3 = xdr::BoundedString<kMaxPathLen>;
using cookieverf3 = std::array<std::byte, NFS3_COOKIEVERFSIZE>;
using createverf3 = std::array<std::byte, NFS3_CREATEVERFSIZE>;
using writeverf3 = std::array<std::byte, NFS3_WRITEVERFSIZE>;

struct specdata3 {
  uint32_t specdata1 = 0;
  uint32_t specdata2 = 0;
  friend bool operator==(const specdata3&, const specdata3&) = default;
};

struct nfstime3 {
  uint32_t seconds = 0;
  uint32_t nseconds = 0;
  friend auto operator<=>(const nfstime3&, const nfstime3&) = default;
};

struct fattr3 {
  ftype3 type = NF3REG;
  uint32_t mode = 0;
  uint32_t nlink = 0;
  uint32_t uid = 0;
  uint32_t gid = 0;
  uint64_t size = 0;
  uint64_t used = 0;
  specdata3 rdev;
  uint64_t fsid = 0;
  uint64_t fileid = 0;
  nfstime3 atime;
  nfstime3 mtime;
  nfstime3 ctime;
  friend bool operator==(const fattr3&, const fattr3&) = default;
};
inline constexpr size_t kFattr3Size = 84;

using post_op_attr = std::optional<fattr3>;

struct wcc_attr {
  uint64_t size = 0;
  nfstime3 mtime;
  nfstime3 ctime;
  friend bool operator==(const wcc_attr&, const wcc_attr&) = default;
};
using pre_op_attr = std::optional<wcc_attr>;

struct wcc_data {
  pre_op_attr before;
  post_op_attr after;
};

using post_op_fh3 = std::optional<nfs_fh3>;

struct set_time {
  time_how set_it = DONT_CHANGE;
  nfstime3 time;  // SET_TO_CLIENT_TIME only
};

struct sattr3 {
  std::optional<uint32_t> mode;
  std::optional<uint32_t> uid;
  std::optional<uint32_t> gid;
  std::optional<uint64_t> size;
  set_time atime;
  set_time mtime;
};

struct diropargs3 {
  nfs_fh3 dir;
  filename3 name;
};

// Common result shape: status, then resok on NFS3_OK or resfail otherwise.
template <class Ok, class Failure>
struct Result3 {
  nfsstat3 status = NFS3_OK;
  Ok resok;
  Failure resfail;
};
struct Empty {};

// ---- arguments and results per procedure ----

struct GETATTR3args {
  nfs_fh3 object;
};
struct GETATTR3resok {
  fattr3 obj_attributes;
};
using GETATTR3res = Result3<GETATTR3resok, Empty>;

struct SETATTR3args {
  nfs_fh3 object;
  sattr3 new_attributes;
  std::optional<nfstime3> guard;  // sattrguard3: obj_ctime when check is TRUE
};
struct SETATTR3resok {
  wcc_data obj_wcc;
};
using SETATTR3res = Result3<SETATTR3resok, SETATTR3resok>;

struct LOOKUP3args {
  diropargs3 what;
};
struct LOOKUP3resok {
  nfs_fh3 object;
  post_op_attr obj_attributes;
  post_op_attr dir_attributes;
};
struct LOOKUP3resfail {
  post_op_attr dir_attributes;
};
using LOOKUP3res = Result3<LOOKUP3resok, LOOKUP3resfail>;

struct ACCESS3args {
  nfs_fh3 object;
  uint32_t access = 0;
};
struct ACCESS3resok {
  post_op_attr obj_attributes;
  uint32_t access = 0;
};
struct PostOpAttrOnly {
  post_op_attr obj_attributes;
};
using ACCESS3res = Result3<ACCESS3resok, PostOpAttrOnly>;

struct READLINK3args {
  nfs_fh3 symlink;
};
struct READLINK3resok {
  post_op_attr symlink_attributes;
  nfspath3 data;
};
using READLINK3res = Result3<READLINK3resok, PostOpAttrOnly>;

struct READ3args {
  nfs_fh3 file;
  uint64_t offset = 0;
  uint32_t count = 0;
};
struct READ3resok {
  post_op_attr file_attributes;
  uint32_t count = 0;
  bool eof = false;
  xdr::Opaque data;
};
using READ3res = Result3<READ3resok, PostOpAttrOnly>;

struct WRITE3args {
  nfs_fh3 file;
  uint64_t offset = 0;
  uint32_t count = 0;
  stable_how stable = UNSTABLE;
  xdr::Opaque data;
};
struct WRITE3resok {
  wcc_data file_wcc;
  uint32_t count = 0;
  stable_how committed = UNSTABLE;
  writeverf3 verf{};
};
struct WccOnly {
  wcc_data wcc;
};
using WRITE3res = Result3<WRITE3resok, WccOnly>;

struct createhow3 {
  createmode3 mode = UNCHECKED;
  sattr3 obj_attributes;  // UNCHECKED, GUARDED
  createverf3 verf{};     // EXCLUSIVE
};
struct CREATE3args {
  diropargs3 where;
  createhow3 how;
};
struct CREATE3resok {
  post_op_fh3 obj;
  post_op_attr obj_attributes;
  wcc_data dir_wcc;
};
using CREATE3res = Result3<CREATE3resok, WccOnly>;

struct MKDIR3args {
  diropargs3 where;
  sattr3 attributes;
};
using MKDIR3res = CREATE3res;

struct SYMLINK3args {
  diropargs3 where;
  sattr3 symlink_attributes;
  nfspath3 symlink_data;
};
using SYMLINK3res = CREATE3res;

struct MKNOD3args {
  diropargs3 where;
  ftype3 type = NF3FIFO;
  sattr3 attributes;  // CHR, BLK, SOCK, FIFO
  specdata3 spec;     // CHR, BLK
};
using MKNOD3res = CREATE3res;

struct REMOVE3args {
  diropargs3 object;
};
using REMOVE3res = Result3<WccOnly, WccOnly>;
using RMDIR3args = REMOVE3args;
using RMDIR3res = REMOVE3res;

struct RENAME3args {
  diropargs3 from;
  diropargs3 to;
};
struct RENAME3wcc {
  wcc_data fromdir_wcc;
  wcc_data todir_wcc;
};
using RENAME3res = Result3<RENAME3wcc, RENAME3wcc>;

struct LINK3args {
  nfs_fh3 file;
  diropargs3 link;
};
struct LINK3wcc {
  post_op_attr file_attributes;
  wcc_data linkdir_wcc;
};
using LINK3res = Result3<LINK3wcc, LINK3wcc>;

struct READDIR3args {
  nfs_fh3 dir;
  uint64_t cookie = 0;
  cookieverf3 cookieverf{};
  uint32_t count = 0;
};
struct entry3 {
  uint64_t fileid = 0;
  filename3 name;
  uint64_t cookie = 0;
};
struct READDIR3resok {
  post_op_attr dir_attributes;
  cookieverf3 cookieverf{};
  std::vector<entry3> entries;
  bool eof = false;
};
using READDIR3res = Result3<READDIR3resok, PostOpAttrOnly>;

struct READDIRPLUS3args {
  nfs_fh3 dir;
  uint64_t cookie = 0;
  cookieverf3 cookieverf{};
  uint32_t dircount = 0;
  uint32_t maxcount = 0;
};
struct entryplus3 {
  uint64_t fileid = 0;
  filename3 name;
  uint64_t cookie = 0;
  post_op_attr name_attributes;
  post_op_fh3 name_handle;
};
struct READDIRPLUS3resok {
  post_op_attr dir_attributes;
  cookieverf3 cookieverf{};
  std::vector<entryplus3> entries;
  bool eof = false;
};
using READDIRPLUS3res = Result3<READDIRPLUS3resok, PostOpAttrOnly>;

struct FSSTAT3args {
  nfs_fh3 fsroot;
};
struct FSSTAT3resok {
  post_op_attr obj_attributes;
  uint64_t tbytes = 0, fbytes = 0, abytes = 0;
  uint64_t tfiles = 0, ffiles = 0, afiles = 0;
  uint32_t invarsec = 0;
};
using FSSTAT3res = Result3<FSSTAT3resok, PostOpAttrOnly>;

struct FSINFO3args {
  nfs_fh3 fsroot;
};
struct FSINFO3resok {
  post_op_attr obj_attributes;
  uint32_t rtmax = 0, rtpref = 0, rtmult = 0;
  uint32_t wtmax = 0, wtpref = 0, wtmult = 0;
  uint32_t dtpref = 0;
  uint64_t maxfilesize = 0;
  nfstime3 time_delta;
  uint32_t properties = 0;
};
using FSINFO3res = Result3<FSINFO3resok, PostOpAttrOnly>;

struct PATHCONF3args {
  nfs_fh3 object;
};
struct PATHCONF3resok {
  post_op_attr obj_attributes;
  uint32_t linkmax = 0;
  uint32_t name_max = 0;
  bool no_trunc = true;
  bool chown_restricted = true;
  bool case_insensitive = false;
  bool case_preserving = true;
};
using PATHCONF3res = Result3<PATHCONF3resok, PostOpAttrOnly>;

struct COMMIT3args {
  nfs_fh3 file;
  uint64_t offset = 0;
  uint32_t count = 0;
};
struct COMMIT3resok {
  wcc_data file_wcc;
  writeverf3 verf{};
};
using COMMIT3res = Result3<COMMIT3resok, WccOnly>;

// Encoded sizes, for fitting READDIR(PLUS) replies into the client's byte budget.
size_t Entry3Size(const entry3& e);
size_t EntryPlus3Size(const entryplus3& e);

}  // namespace nfsx::nfs3

#include "proto/nfs3_xdr.h"
