// Who a caller is on an export, and what they may do to a file.
//
// The one place where AUTH_SYS credentials meet file modes. Both the ACCESS
// procedure and the real operations ask the same functions, so what ACCESS
// promises is what the operation allows.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "rpc/message.h"
#include "vfs/vfs.h"

namespace nfsx::server {

struct ExportOptions;

// The caller after squashing.
struct Identity {
  uint32_t uid = 65534;
  uint32_t gid = 65534;
  uint32_t ngroups = 0;
  std::array<uint32_t, rpc::kMaxAuthSysGroups> groups{};

  bool is_root() const { return uid == 0; }
  bool InGroup(uint32_t g) const;
};

// AUTH_NONE and squashed callers become anonuid/anongid.
Identity IdentityFor(const rpc::Credential& cred, const ExportOptions& options);

enum Permission : uint32_t { kRead = 4, kWrite = 2, kExec = 1 };

// POSIX permission check of `want` (a mask of Permission) against attr's mode.
// Root may read and write anything and execute anything with some x bit set
// (or any directory).
bool Permits(const Identity& who, const vfs::Attr& attr, uint32_t want);

// NFS servers let a file's owner read and write it whatever its mode: a client
// that opened a file before chmod 0444 may still write through that open file,
// and only the client knows about the open (knfsd's OWNER_OVERRIDE).
bool PermitsData(const Identity& who, const vfs::Attr& attr, uint32_t want);

// Removing `victim` from `dir`: write+search on dir, and the sticky-bit rule.
bool MayUnlink(const Identity& who, const vfs::Attr& dir, const vfs::Attr& victim);

// The ACCESS3 bits granted, out of `requested`.
uint32_t AccessBits(const Identity& who, const vfs::Attr& attr, uint32_t requested,
                    bool read_only_export);

// The mode a regular file gets when `who` writes or truncates it: without its setuid
// bit, and without its setgid bit when group-executable, unless `who` is root. This is
// what Linux does for a local file (file_remove_privs), and knfsd for a client; the
// backends write as the server's own user, so the server must do it. nullopt: no change.
std::optional<uint32_t> ModeAfterDataChange(const Identity& who, const vfs::Attr& attr);

// The setgid bit as Linux lets a caller set it (the backends act as the server's
// own user, root, so the kernel would let everything through):
// - chmod: cleared unless `who` is root or in the file's group after the change
//   (setattr_prepare), so nobody makes a file setgid to a group they are not in;
// - a new file: cleared on a group-executable non-directory unless `who` is root or
//   in its group (inode_init_owner: the group a setgid directory passes on).
void LimitSetgidOfChmod(const Identity& who, const vfs::Attr& attr, vfs::SetAttr* change);
uint32_t NewFileMode(const Identity& who, uint32_t mode, uint32_t gid);

// errno for a SETATTR the caller may not perform, or 0.
int CheckSetAttr(const Identity& who, const vfs::Attr& attr, const vfs::SetAttr& change);

}  // namespace nfsx::server
