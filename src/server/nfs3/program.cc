#include "base/logging.h"
#include "server/nfs3/procedures.h"

namespace nfsx::server::nfs3proc {
namespace {

// Decodes ARGS, runs the procedure, encodes RES. Arguments that do not decode
// are GARBAGE_ARGS (the dispatcher's business, not the procedure's).
template <class Args, class Res>
rpc::ProcFn Adapt(Core& core, Res (*fn)(Core&, const Args&, const Ctx&)) {
  return [&core, fn](rpc::CallContext& ctx, xdr::XdrDecoder& d, xdr::XdrEncoder& e) {
    Args args;
    d(args);
    if (!d.ok()) return rpc::accept_stat::GARBAGE_ARGS;
    Res res = fn(core, args, ctx);
    if (ctx.would_block) return rpc::accept_stat::SUCCESS;  // run again off the loop
    e(res);
    return rpc::accept_stat::SUCCESS;
  };
}

// WRITE3args: file handle, offset, count, then stable_how.
bool StableWrite(std::span<const std::byte> args) {
  xdr::XdrDecoder d(args);
  nfs_fh3 fh;
  uint64_t offset;
  uint32_t count, stable;
  d(fh);
  d(offset);
  d(count);
  d(stable);
  return d.ok() && stable != static_cast<uint32_t>(UNSTABLE);
}

// What a reply holds besides its data or entries: RPC header, status, attributes.
constexpr size_t kReplyHeaderBound = 512;

// The most a reply may take: the count its call asks for (READ's count, READDIR's
// count, READDIRPLUS's maxcount), as far as the server's cap for it lets one be filled.
template <class Args, uint32_t Args::*kCount, uint32_t CoreOptions::*kCap>
rpc::ReplyBoundFn CountedReplyBound(const Core& core) {
  return [&core](std::span<const std::byte> args) -> size_t {
    Args a;
    xdr::XdrDecoder d(args);
    d(a);
    if (!d.ok()) return 0;
    return std::min(a.*kCount, core.options().*kCap) + kReplyHeaderBound;
  };
}

}  // namespace

rpc::Program MakeNfs3Program(Core& core) {
  using rpc::kProcMayBlock;
  using rpc::kProcNonIdempotent;
  // Procedures that may wait on the disk (fsync of data or of a directory under
  // the `sync` export option, directory scans) run on worker threads; the rest run
  // inline, READ as long as its data is in the page cache (see Read).
  constexpr uint32_t kModifies = kProcNonIdempotent | kProcMayBlock;
  rpc::Program p{"nfs", NFS_PROGRAM, NFS_V3, {}, {}};
  auto& v = p.procs;
  v.emplace_back("null", [](rpc::CallContext&, xdr::XdrDecoder&, xdr::XdrEncoder&) {
    return rpc::accept_stat::SUCCESS;
  });
  v.emplace_back("getattr", Adapt(core, &Getattr));
  v.emplace_back("setattr", Adapt(core, &Setattr), kModifies);
  v.emplace_back("lookup", Adapt(core, &Lookup));
  v.emplace_back("access", Adapt(core, &Access));
  v.emplace_back("readlink", Adapt(core, &Readlink));
  v.emplace_back("read", Adapt(core, &Read)).reply_bound =
      CountedReplyBound<READ3args, &READ3args::count, &CoreOptions::rtmax>(core);
  // UNSTABLE writes only reach the page cache and run inline; stable ones sync.
  v.emplace_back("write", Adapt(core, &Write), rpc::kProcRewritesData, &StableWrite);
  v.emplace_back("create", Adapt(core, &Create), kModifies);
  v.emplace_back("mkdir", Adapt(core, &Mkdir), kModifies);
  v.emplace_back("symlink", Adapt(core, &Symlink), kModifies);
  v.emplace_back("mknod", Adapt(core, &Mknod), kModifies);
  v.emplace_back("remove", Adapt(core, &Remove), kModifies);
  v.emplace_back("rmdir", Adapt(core, &Rmdir), kModifies);
  v.emplace_back("rename", Adapt(core, &Rename), kModifies);
  v.emplace_back("link", Adapt(core, &Link), kModifies);
  // A directory scan reads the directory and (PLUS) stats every entry: many chances
  // to wait on the disk, none of which says so in advance.
  v.emplace_back("readdir", Adapt(core, &Readdir), kProcMayBlock).reply_bound =
      CountedReplyBound<READDIR3args, &READDIR3args::count, &CoreOptions::dtmax>(core);
  v.emplace_back("readdirplus", Adapt(core, &Readdirplus), kProcMayBlock).reply_bound =
      CountedReplyBound<READDIRPLUS3args, &READDIRPLUS3args::maxcount, &CoreOptions::dtmax>(core);
  v.emplace_back("fsstat", Adapt(core, &Fsstat));
  v.emplace_back("fsinfo", Adapt(core, &Fsinfo));
  v.emplace_back("pathconf", Adapt(core, &Pathconf));
  v.emplace_back("commit", Adapt(core, &Commit), kProcMayBlock);
  p.blocks_for_peer = [&core](const rpc::Peer& peer) { return core.NeedsNameLookup(peer); };
  return p;
}

}  // namespace nfsx::server::nfs3proc
