// RFC 1813 §3.3.6 READ.
#include "base/buffer_pool.h"
#include "server/nfs3/procedures.h"

namespace nfsx::server::nfs3proc {

READ3res Read(Core& core, const READ3args& args, const Ctx& ctx) {
  READ3res res;
  auto r = core.Resolve(args.file, ctx);
  if (!r) {
    res.status = r.error();
    return res;
  }
  const FileStatePtr& file = r->file;
  auto attr = core.Attr(*file);
  if (!attr) {
    res.status = StatusOf(attr.error());
    return res;
  }
  // The attributes from before the read serve as post_op_attr: a READ changes
  // nothing a client caches (we open with O_NOATIME), and it saves a stat.
  res.resfail.obj_attributes = core.ToFattr3(*attr, file->exp());
  if (attr->type != vfs::FileType::kRegular) {
    res.status = attr->type == vfs::FileType::kDirectory ? NFS3ERR_ISDIR : NFS3ERR_INVAL;
    return res;
  }
  if (!PermitsData(r->caller.who, *attr, kRead)) {
    res.status = NFS3ERR_ACCES;
    return res;
  }
  uint64_t want = std::min<uint64_t>(args.count, core.options().rtmax);
  if (args.offset < attr->size) want = std::min<uint64_t>(want, attr->size - args.offset);
  size_t got = 0;
  if (args.offset < attr->size && want > 0) {
    auto open = core.open_files().Get(file, false);
    if (!open) {
      res.status = StatusOf(open.error());
      return res;
    }
    // Warm memory from the pool: a fresh 1 MiB buffer costs 256 page faults to fill.
    auto buf = std::make_shared<PooledBytes>(want);
    buf->Resize(want);
    std::span<std::byte> into = buf->writable();
    // On an event loop only cached data is read; the rest waits on a worker.
    auto n = ctx.on_event_loop ? (*open)->ReadIfCached(args.offset, into)
                               : (*open)->Read(args.offset, into);
    if (!n && n.error().code == EAGAIN && ctx.on_event_loop) {
      ctx.would_block = true;
      return res;
    }
    if (!n) {
      res.status = StatusOf(n.error());
      return res;
    }
    got = *n;
    res.resok.data = xdr::Opaque{std::span<const std::byte>(buf->data(), got), buf};
  }
  res.resok.file_attributes = res.resfail.obj_attributes;
  res.resok.count = static_cast<uint32_t>(got);
  res.resok.eof = args.offset + got >= attr->size;
  return res;
}

}  // namespace nfsx::server::nfs3proc
