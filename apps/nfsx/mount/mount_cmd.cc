// Registers `nfsx mount`, `nfsx umount` and `nfsx mountstat`.
#include <memory>

#include "apps/nfsx/commands.h"
#include "apps/nfsx/mount/mount_commands.h"

namespace nfsx::app {

Runner AddMount(CLI::App& app) {
  auto m = std::make_shared<mount::MountArgs>();
  CLI::App* mnt = app.add_subcommand("mount", "Mount an NFSv3 export with FUSE");
  mnt->add_option("url", m->url,
                  "nfs://host[:port]/export[/path][?version=3&nfsport=N&mountport=N&...]")
      ->required();
  mnt->add_option("mountpoint", m->mountpoint, "An existing directory")->required();
  mnt->add_option("-o", m->options,
                  "Comma-separated options: ro, rw, actimeo=N, acregmin=N, acregmax=N, "
                  "acdirmin=N, acdirmax=N, noac, nocto, nconnect=N, rsize=N, wsize=N, "
                  "direct_io, uid=N, gid=N, allow_other, default_permissions, "
                  "writeback_cache, nosplice, max_threads=N, max_names=N, debug (docs/fuse.md)")
      ->allow_extra_args(false);
  mnt->add_flag("-f,--foreground", m->foreground,
                "Stay in the foreground (default: detach once mounted)");
  mnt->add_option("--log-file", m->log_file,
                  "Where a background mount writes its log (default: nowhere)");
  mnt->footer(
      "Mounts in the background and returns once the file system is mounted; errors\n"
      "(bad URL, server unreachable, export refused, missing mountpoint) are one line\n"
      "and a non-zero exit status. Unmount with `nfsx umount MOUNTPOINT` or\n"
      "`fusermount3 -u MOUNTPOINT`: both write back and commit all data first.");

  auto umount_path = std::make_shared<std::string>();
  auto force = std::make_shared<bool>(false);
  CLI::App* um = app.add_subcommand("umount", "Flush, commit and unmount an nfsx mount");
  um->add_option("mountpoint", *umount_path, "Where it is mounted")->required();
  um->add_flag("--force", *force,
               "Do not wait for dirty data to reach the server: detach at once (data not yet "
               "written is lost)");

  auto stat_path = std::make_shared<std::string>();
  CLI::App* st = app.add_subcommand("mountstat",
                                    "Print the NFS calls an nfsx mount has sent, like nfsstat -c");
  st->add_option("mountpoint", *stat_path, "Where it is mounted")->required();

  return [=] {
    if (mnt->parsed()) return mount::RunMount(*m);
    if (um->parsed()) return mount::RunUmount(*umount_path, *force);
    if (st->parsed()) return mount::RunMountstat(*stat_path);
    return -1;
  };
}

}  // namespace nfsx::app
