// RFC 1813 §3.3.18 FSSTAT, §3.3.19 FSINFO, §3.3.20 PATHCONF.
#include "server/nfs3/procedures.h"

namespace nfsx::server::nfs3proc {

FSSTAT3res Fsstat(Core& core, const FSSTAT3args& args, const Ctx& ctx) {
  FSSTAT3res res;
  auto r = core.Resolve(args.fsroot, ctx);
  if (!r) {
    res.status = r.error();
    return res;
  }
  res.resfail.obj_attributes = core.PostOpAttr(*r->file);
  auto st = r->file->exp().fs->StatFs(r->file->node());
  if (!st) {
    res.status = StatusOf(st.error());
    return res;
  }
  auto& ok = res.resok;
  ok.obj_attributes = res.resfail.obj_attributes;
  ok.tbytes = st->total_bytes;
  ok.fbytes = st->free_bytes;
  ok.abytes = st->avail_bytes;
  ok.tfiles = st->total_files;
  ok.ffiles = st->free_files;
  ok.afiles = st->avail_files;
  ok.invarsec = 0;  // may change at any time
  return res;
}

FSINFO3res Fsinfo(Core& core, const FSINFO3args& args, const Ctx& ctx) {
  FSINFO3res res;
  auto r = core.Resolve(args.fsroot, ctx);
  if (!r) {
    res.status = r.error();
    return res;
  }
  const CoreOptions& o = core.options();
  auto& ok = res.resok;
  ok.obj_attributes = core.PostOpAttr(*r->file);
  ok.rtmax = ok.rtpref = o.rtmax;
  ok.wtmax = ok.wtpref = o.wtmax;
  ok.rtmult = ok.wtmult = 4096;
  ok.dtpref = o.dtpref;
  ok.maxfilesize = (uint64_t{1} << 63) - 1;
  ok.time_delta = {0, 1};  // nanosecond timestamps
  ok.properties = FSF3_LINK | FSF3_SYMLINK | FSF3_HOMOGENEOUS | FSF3_CANSETTIME;
  return res;
}

PATHCONF3res Pathconf(Core& core, const PATHCONF3args& args, const Ctx& ctx) {
  PATHCONF3res res;
  auto r = core.Resolve(args.object, ctx);
  if (!r) {
    res.status = r.error();
    return res;
  }
  auto& ok = res.resok;
  ok.obj_attributes = core.PostOpAttr(*r->file);
  ok.linkmax = 65000;  // ext4's EXT4_LINK_MAX
  ok.name_max = 255;
  ok.no_trunc = true;
  ok.chown_restricted = true;
  ok.case_insensitive = false;
  ok.case_preserving = true;
  return res;
}

}  // namespace nfsx::server::nfs3proc
