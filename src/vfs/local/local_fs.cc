#include "vfs/local/local_fs.h"

namespace nfsx::vfs {

Result<std::unique_ptr<Filesystem>> MakeLocalFs(const std::string&) { return Fail(ENOSYS); }

}  // namespace nfsx::vfs
