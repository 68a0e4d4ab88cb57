// The NFSv3 procedures (RFC 1813 §3.3), one per file, and the program table.
//
// Each has the pure shape `RES Proc(Core&, const ARGS&, const rpc::CallContext&)`:
// NFS errors are replies (with their wcc data), never failures.
#pragma once

#include "proto/nfs3_types.h"
#include "rpc/program.h"
#include "proto/nfsstat.h"
#include "server/core.h"

namespace nfsx::server::nfs3proc {

using namespace nfsx::nfs3;
using Ctx = rpc::CallContext;

GETATTR3res Getattr(Core& core, const GETATTR3args& args, const Ctx& ctx);
SETATTR3res Setattr(Core& core, const SETATTR3args& args, const Ctx& ctx);
LOOKUP3res Lookup(Core& core, const LOOKUP3args& args, const Ctx& ctx);
ACCESS3res Access(Core& core, const ACCESS3args& args, const Ctx& ctx);
READLINK3res Readlink(Core& core, const READLINK3args& args, const Ctx& ctx);
READ3res Read(Core& core, const READ3args& args, const Ctx& ctx);
WRITE3res Write(Core& core, const WRITE3args& args, const Ctx& ctx);
CREATE3res Create(Core& core, const CREATE3args& args, const Ctx& ctx);
MKDIR3res Mkdir(Core& core, const MKDIR3args& args, const Ctx& ctx);
SYMLINK3res Symlink(Core& core, const SYMLINK3args& args, const Ctx& ctx);
MKNOD3res Mknod(Core& core, const MKNOD3args& args, const Ctx& ctx);
REMOVE3res Remove(Core& core, const REMOVE3args& args, const Ctx& ctx);
RMDIR3res Rmdir(Core& core, const RMDIR3args& args, const Ctx& ctx);
RENAME3res Rename(Core& core, const RENAME3args& args, const Ctx& ctx);
LINK3res Link(Core& core, const LINK3args& args, const Ctx& ctx);
READDIR3res Readdir(Core& core, const READDIR3args& args, const Ctx& ctx);
READDIRPLUS3res Readdirplus(Core& core, const READDIRPLUS3args& args, const Ctx& ctx);
FSSTAT3res Fsstat(Core& core, const FSSTAT3args& args, const Ctx& ctx);
FSINFO3res Fsinfo(Core& core, const FSINFO3args& args, const Ctx& ctx);
PATHCONF3res Pathconf(Core& core, const PATHCONF3args& args, const Ctx& ctx);
COMMIT3res Commit(Core& core, const COMMIT3args& args, const Ctx& ctx);

// The NFS program (100003 v3) over `core`, which must outlive it.
rpc::Program MakeNfs3Program(Core& core);

}  // namespace nfsx::server::nfs3proc
