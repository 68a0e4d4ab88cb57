#include "server/access.h"

#include <algorithm>

#include "base/set_id_bits.h"
#include "proto/nfs3_types.h"
#include "server/export_config.h"

namespace nfsx::server {

bool Identity::InGroup(uint32_t g) const {
  if (gid == g) return true;
  return std::find(groups.begin(), groups.begin() + ngroups, g) != groups.begin() + ngroups;
}

Identity IdentityFor(const rpc::Credential& cred, const ExportOptions& options) {
  Identity id;
  id.uid = options.anonuid;
  id.gid = options.anongid;
  if (cred.flavor != rpc::auth_flavor::AUTH_SYS || options.squash == Squash::kAll) return id;
  bool squash_root = options.squash == Squash::kRoot;
  id.uid = (squash_root && cred.uid == 0) ? options.anonuid : cred.uid;
  id.gid = (squash_root && cred.gid == 0) ? options.anongid : cred.gid;
  for (uint32_t g : cred.groups()) {
    if (squash_root && g == 0) continue;  // as knfsd: root's group does not survive squashing
    id.groups[id.ngroups++] = g;
  }
  return id;
}

bool Permits(const Identity& who, const vfs::Attr& attr, uint32_t want) {
  if (who.is_root()) {
    if (!(want & kExec)) return true;
    return attr.type == vfs::FileType::kDirectory || (attr.mode & 0111) != 0;
  }
  uint32_t bits;
  if (who.uid == attr.uid) {
    bits = (attr.mode >> 6) & 7;
  } else if (who.InGroup(attr.gid)) {
    bits = (attr.mode >> 3) & 7;
  } else {
    bits = attr.mode & 7;
  }
  return (bits & want) == want;
}

bool PermitsData(const Identity& who, const vfs::Attr& attr, uint32_t want) {
  if (who.uid == attr.uid && !(want & kExec)) return true;
  if (Permits(who, attr, want)) return true;
  // Reading a file one may execute: a client needs READ to run a binary.
  return want == kRead && attr.type == vfs::FileType::kRegular && Permits(who, attr, kExec);
}

std::optional<uint32_t> ModeAfterDataChange(const Identity& who, const vfs::Attr& attr) {
  if (who.is_root() || attr.type != vfs::FileType::kRegular) return std::nullopt;
  uint32_t kill = SetIdBitsClearedByWrite(attr.mode);
  if (!kill) return std::nullopt;
  return attr.mode & ~kill;
}

bool MayUnlink(const Identity& who, const vfs::Attr& dir, const vfs::Attr& victim) {
  if (!Permits(who, dir, kWrite | kExec)) return false;
  if (!(dir.mode & 01000) || who.is_root()) return true;
  return who.uid == dir.uid || who.uid == victim.uid;
}

uint32_t AccessBits(const Identity& who, const vfs::Attr& attr, uint32_t requested,
                    bool read_only_export) {
  using namespace nfs3;
  bool dir = attr.type == vfs::FileType::kDirectory;
  uint32_t granted = 0;
  if (Permits(who, attr, kRead)) granted |= ACCESS3_READ;
  if (Permits(who, attr, kWrite) && !read_only_export) {
    granted |= ACCESS3_MODIFY | ACCESS3_EXTEND;
    if (dir && Permits(who, attr, kExec)) granted |= ACCESS3_DELETE;
  }
  if (Permits(who, attr, kExec)) granted |= dir ? ACCESS3_LOOKUP : ACCESS3_EXECUTE;
  // DELETE on a non-directory concerns its parent, which ACCESS does not name:
  // answer as knfsd does, by the file's own write permission.
  if (!dir && (granted & ACCESS3_MODIFY)) granted |= ACCESS3_DELETE;
  return granted & requested;
}

void LimitSetgidOfChmod(const Identity& who, const vfs::Attr& attr, vfs::SetAttr* change) {
  if (!change->mode || who.is_root()) return;
  if (!who.InGroup(change->gid.value_or(attr.gid))) *change->mode &= ~uint32_t{02000};
}

uint32_t NewFileMode(const Identity& who, uint32_t mode, uint32_t gid) {
  if (who.is_root() || (mode & 02010) != 02010 || who.InGroup(gid)) return mode;
  return mode & ~uint32_t{02000};
}

int CheckSetAttr(const Identity& who, const vfs::Attr& attr, const vfs::SetAttr& change) {
  bool owner = who.uid == attr.uid;
  if (who.is_root()) return 0;
  if (change.uid && *change.uid != attr.uid) return EPERM;  // chown is root's
  if (change.gid && *change.gid != attr.gid && !(owner && who.InGroup(*change.gid))) return EPERM;
  if (change.mode && !owner) return EPERM;
  if (change.size && !PermitsData(who, attr, kWrite)) return EACCES;
  using T = vfs::SetAttr::Time;
  bool set_given = change.atime_how == T::kGiven || change.mtime_how == T::kGiven;
  bool set_now = change.atime_how == T::kServerNow || change.mtime_how == T::kServerNow;
  if (set_given && !owner) return EPERM;
  if (set_now && !owner && !Permits(who, attr, kWrite)) return EACCES;
  return 0;
}

}  // namespace nfsx::server
