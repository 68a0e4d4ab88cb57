// `nfsx mount URL MOUNTPOINT`.
#include <cstdio>
#include <string>

#include "apps/nfsx/mount/mount_commands.h"

#ifdef NFSX_HAVE_FUSE
#include "fuse/fuse_mount.h"
#endif

namespace nfsx::app::mount {

#ifdef NFSX_HAVE_FUSE

namespace {

int MountAndServe(const MountArgs& a, const std::function<void()>& ready) {
  std::string options;
  for (const std::string& o : a.options) options += (options.empty() ? "" : ",") + o;
  std::string error;
  auto m = fuse::FuseMount::Create(a.url, a.mountpoint, options, &error);
  if (!m) {
    std::fprintf(stderr, "nfsx mount: %s\n", error.c_str());
    return 1;
  }
  if (ready) ready();
  return (*m)->Run();
}

}  // namespace

int RunMount(const MountArgs& a) {
  if (a.foreground) return MountAndServe(a, nullptr);
  return RunDetached([&](const std::function<void()>& ready) { return MountAndServe(a, ready); },
                     a.log_file);
}

#else

int RunMount(const MountArgs&) {
  std::fprintf(stderr, "nfsx mount: this nfsx was built without libfuse3 (libfuse3-dev)\n");
  return 1;
}

#endif

}  // namespace nfsx::app::mount
