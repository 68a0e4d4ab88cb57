// XDR descriptions of the NFSv3 types (RFC 1813 §2.5 and §3.3). Included by nfs3_types.h.
#pragma once

namespace nfsx::nfs3 {

template <class X>
void Xdr(X& x, specdata3& v) {
  x(v.specdata1);
  x(v.specdata2);
}
template <class X>
void Xdr(X& x, nfstime3& v) {
  x(v.seconds);
  x(v.nseconds);
}
template <class X>
void Xdr(X& x, fattr3& v) {
  x(v.type);
  x(v.mode);
  x(v.nlink);
  x(v.uid);
  x(v.gid);
  x(v.size);
  x(v.used);
  x(v.rdev);
  x(v.fsid);
  x(v.fileid);
  x(v.atime);
  x(v.mtime);
  x(v.ctime);
}
template <class X>
void Xdr(X& x, wcc_attr& v) {
  x(v.size);
  x(v.mtime);
  x(v.ctime);
}
template <class X>
void Xdr(X& x, wcc_data& v) {
  x(v.before);
  x(v.after);
}
template <class X>
void Xdr(X& x, set_time& v) {
  x(v.set_it);
  if (v.set_it == SET_TO_CLIENT_TIME) {
    x(v.time);
  } else if (v.set_it != DONT_CHANGE && v.set_it != SET_TO_SERVER_TIME) {
    x.Fail();
  }
}
template <class X>
void Xdr(X& x, sattr3& v) {
  x(v.mode);
  x(v.uid);
  x(v.gid);
  x(v.size);
  x(v.atime);
  x(v.mtime);
}
template <class X>
void Xdr(X& x, diropargs3& v) {
  x(v.dir);
  x(v.name);
}
template <class X>
void Xdr(X&, Empty&) {}

template <class X, class Ok, class Failure>
void Xdr(X& x, Result3<Ok, Failure>& v) {
  x(v.status);
  if (v.status == NFS3_OK) {
    x(v.resok);
  } else {
    x(v.resfail);
  }
}

template <class X>
void Xdr(X& x, GETATTR3args& v) {
  x(v.object);
}
template <class X>
void Xdr(X& x, GETATTR3resok& v) {
  x(v.obj_attributes);
}
template <class X>
void Xdr(X& x, SETATTR3args& v) {
  x(v.object);
  x(v.new_attributes);
  x(v.guard);
}
template <class X>
void Xdr(X& x, SETATTR3resok& v) {
  x(v.obj_wcc);
}
template <class X>
void Xdr(X& x, LOOKUP3args& v) {
  x(v.what);
}
template <class X>
void Xdr(X& x, LOOKUP3resok& v) {
  x(v.object);
  x(v.obj_attributes);
  x(v.dir_attributes);
}
template <class X>
void Xdr(X& x, LOOKUP3resfail& v) {
  x(v.dir_attributes);
}
template <class X>
void Xdr(X& x, ACCESS3args& v) {
  x(v.object);
  x(v.access);
}
template <class X>
void Xdr(X& x, ACCESS3resok& v) {
  x(v.obj_attributes);
  x(v.access);
}
template <class X>
void Xdr(X& x, PostOpAttrOnly& v) {
  x(v.obj_attributes);
}
template <class X>
void Xdr(X& x, READLINK3args& v) {
  x(v.symlink);
}
template <class X>
void Xdr(X& x, READLINK3resok& v) {
  x(v.symlink_attributes);
  x(v.data);
}
template <class X>
void Xdr(X& x, READ3args& v) {
  x(v.file);
  x(v.offset);
  x(v.count);
}
template <class X>
void Xdr(X& x, READ3resok& v) {
  x(v.file_attributes);
  x(v.count);
  x(v.eof);
  x(v.data);
}
template <class X>
void Xdr(X& x, WRITE3args& v) {
  x(v.file);
  x(v.offset);
  x(v.count);
  x(v.stable);
  x(v.data);
}
template <class X>
void Xdr(X& x, WRITE3resok& v) {
  x(v.file_wcc);
  x(v.count);
  x(v.committed);
  x(v.verf);
}
template <class X>
void Xdr(X& x, WccOnly& v) {
  x(v.wcc);
}
template <class X>
void Xdr(X& x, createhow3& v) {
  x(v.mode);
  switch (v.mode) {
    case UNCHECKED:
    case GUARDED:
      x(v.obj_attributes);
      break;
    case EXCLUSIVE:
      x(v.verf);
      break;
    default:
      x.Fail();
  }
}
template <class X>
void Xdr(X& x, CREATE3args& v) {
  x(v.where);
  x(v.how);
}
template <class X>
void Xdr(X& x, CREATE3resok& v) {
  x(v.obj);
  x(v.obj_attributes);
  x(v.dir_wcc);
}
template <class X>
void Xdr(X& x, MKDIR3args& v) {
  x(v.where);
  x(v.attributes);
}
template <class X>
void Xdr(X& x, SYMLINK3args& v) {
  x(v.where);
  x(v.symlink_attributes);
  x(v.symlink_data);
}
template <class X>
void Xdr(X& x, MKNOD3args& v) {
  x(v.where);
  x(v.type);
  switch (v.type) {
    case NF3CHR:
    case NF3BLK:
      x(v.attributes);
      x(v.spec);
      break;
    case NF3SOCK:
    case NF3FIFO:
      x(v.attributes);
      break;
    default:
      break;  // void arm: the server answers NFS3ERR_BADTYPE
  }
}
template <class X>
void Xdr(X& x, REMOVE3args& v) {
  x(v.object);
}
template <class X>
void Xdr(X& x, RENAME3args& v) {
  x(v.from);
  x(v.to);
}
template <class X>
void Xdr(X& x, RENAME3wcc& v) {
  x(v.fromdir_wcc);
  x(v.todir_wcc);
}
template <class X>
void Xdr(X& x, LINK3args& v) {
  x(v.file);
  x(v.link);
}
template <class X>
void Xdr(X& x, LINK3wcc& v) {
  x(v.file_attributes);
  x(v.linkdir_wcc);
}
template <class X>
void Xdr(X& x, READDIR3args& v) {
  x(v.dir);
  x(v.cookie);
  x(v.cookieverf);
  x(v.count);
}
template <class X>
void Xdr(X& x, entry3& v) {
  x(v.fileid);
  x(v.name);
  x(v.cookie);
}
template <class X>
void Xdr(X& x, entryplus3& v) {
  x(v.fileid);
  x(v.name);
  x(v.cookie);
  x(v.name_attributes);
  x(v.name_handle);
}

// Directory listings are XDR linked lists: "value follows" before each entry.
template <class X, class Entry>
void XdrEntryList(X& x, std::vector<Entry>& entries) {
  if constexpr (X::kDecoding) {
    entries.clear();
    for (;;) {
      bool follows = false;
      x(follows);
      if (!follows || !x.ok()) break;
      if (entries.size() >= kMaxDirEntries) return x.Fail();
      entries.emplace_back();
      x(entries.back());
    }
  } else {
    for (auto& e : entries) {
      x(true);
      x(e);
    }
    x(false);
  }
}

template <class X>
void Xdr(X& x, READDIR3resok& v) {
  x(v.dir_attributes);
  x(v.cookieverf);
  XdrEntryList(x, v.entries);
  x(v.eof);
}
template <class X>
void Xdr(X& x, READDIRPLUS3args& v) {
  x(v.dir);
  x(v.cookie);
  x(v.cookieverf);
  x(v.dircount);
  x(v.maxcount);
}
template <class X>
void Xdr(X& x, READDIRPLUS3resok& v) {
  x(v.dir_attributes);
  x(v.cookieverf);
  XdrEntryList(x, v.entries);
  x(v.eof);
}
template <class X>
void Xdr(X& x, FSSTAT3args& v) {
  x(v.fsroot);
}
template <class X>
void Xdr(X& x, FSSTAT3resok& v) {
  x(v.obj_attributes);
  x(v.tbytes);
  x(v.fbytes);
  x(v.abytes);
  x(v.tfiles);
  x(v.ffiles);
  x(v.afiles);
  x(v.invarsec);
}
template <class X>
void Xdr(X& x, FSINFO3args& v) {
  x(v.fsroot);
}
template <class X>
void Xdr(X& x, FSINFO3resok& v) {
  x(v.obj_attributes);
  x(v.rtmax);
  x(v.rtpref);
  x(v.rtmult);
  x(v.wtmax);
  x(v.wtpref);
  x(v.wtmult);
  x(v.dtpref);
  x(v.maxfilesize);
  x(v.time_delta);
  x(v.properties);
}
template <class X>
void Xdr(X& x, PATHCONF3args& v) {
  x(v.object);
}
template <class X>
void Xdr(X& x, PATHCONF3resok& v) {
  x(v.obj_attributes);
  x(v.linkmax);
  x(v.name_max);
  x(v.no_trunc);
  x(v.chown_restricted);
  x(v.case_insensitive);
  x(v.case_preserving);
}
template <class X>
void Xdr(X& x, COMMIT3args& v) {
  x(v.file);
  x(v.offset);
  x(v.count);
}
template <class X>
void Xdr(X& x, COMMIT3resok& v) {
  x(v.file_wcc);
  x(v.verf);
}

}  // namespace nfsx::nfs3
