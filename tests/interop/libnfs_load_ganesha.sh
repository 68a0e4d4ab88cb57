#!/usr/bin/env bash
# The same nfsx-libnfs-load scenarios as libnfs_load, against NFS-Ganesha (FSAL_VFS, NFSv3)
# started here: the load driver's own check against an independent server. Skipped (77)
# when Ganesha cannot run on this machine (see tests/peers/ganesha.sh check).
# shellcheck source=tests/interop/lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=tests/interop/load_common.sh
source "$(dirname "$0")/load_common.sh"

GANESHA=$SOURCE_DIR/tests/peers/ganesha.sh
rc=0
why=$("$GANESHA" check 2>&1) || rc=$?
((rc == 77)) && skip "${why#ganesha.sh: SKIP: }"
((rc == 0)) || fail "ganesha.sh check: $why"

EXPORT=$WORK/export
mkdir -p "$EXPORT"
started=$("$GANESHA" start "$EXPORT" "$WORK/ganesha") || fail "cannot start NFS-Ganesha"
read -r GANESHA_PID NFS_PORT MOUNT_PORT <<<"$started"
SERVERS+=("ganesha $GANESHA_PID")
note "NFS-Ganesha serving $EXPORT as /vfs: nfs $NFS_PORT, mount $MOUNT_PORT (pid $GANESHA_PID)"
LOAD_URL=$(url /vfs)
LOAD_DIR=$EXPORT

run_load_scenarios
