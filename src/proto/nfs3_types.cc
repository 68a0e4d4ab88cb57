#include "proto/nfs3_types.h"

namespace nfsx::nfs3 {

const char* ProcName(uint32_t proc) {
  static constexpr const char* kNames[kNumProcs] = {
      "null",    "getattr", "setattr", "lookup", "access", "readlink",    "read",   "write",
      "create",  "mkdir",   "symlink", "mknod",  "remove", "rmdir",       "rename", "link",
      "readdir", "readdirplus", "fsstat", "fsinfo", "pathconf", "commit"};
  return proc < kNumProcs ? kNames[proc] : "unknown";
}

size_t Entry3Size(const entry3& e) {
  // value-follows + fileid + name + cookie
  return 4 + 8 + 4 + e.name.value.size() + xdr::Pad4(e.name.value.size()) + 8;
}

size_t EntryPlus3Size(const entryplus3& e) {
  size_t n = 4 + 8 + 4 + e.name.value.size() + xdr::Pad4(e.name.value.size()) + 8;
  n += 4 + (e.name_attributes ? kFattr3Size : 0);
  n += 4 + (e.name_handle ? 4 + e.name_handle->size + xdr::Pad4(e.name_handle->size) : 0);
  return n;
}

}  // namespace nfsx::nfs3
