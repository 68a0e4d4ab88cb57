#!/usr/bin/env bash
# make interop: the Linux kernel NFS client (a stock Debian 12 kernel in a qemu
# guest) against `nfsx serve`, running tests/kvm/job.sh in the mount.
#
# Needs the kvm-client runner (KVM_CLIENT, default ../shared/tools/kvm-client/run.sh
# beside this checkout); it builds a guest image on first use (a few minutes).
set -euo pipefail
BUILD=${1:-build}
cd "$(dirname "$0")/../.."
RUNNER=${KVM_CLIENT:-../shared/tools/kvm-client/run.sh}
if [[ ! -x $RUNNER ]]; then
  echo "interop: the kvm-client runner is not at $RUNNER (set KVM_CLIENT)" >&2
  exit 77
fi
work=$(mktemp -d /tmp/nfsx-kvm-XXXXXX)
trap 'kill "$server" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
mkdir -p "$work/export" && chown 65534:65534 "$work/export" && chmod 1777 "$work/export"
"$BUILD/apps/nfsx/nfsx" serve "$work/export" --port 0 --mount-port 0 --state-dir "$work/state" \
  --ports-file "$work/ports" >"$work/serve.log" 2>&1 &
server=$!
for _ in $(seq 100); do [[ -s $work/ports ]] && break; sleep 0.1; done
read -r nfs_port mount_port _ <"$work/ports"
status=0
"$RUNNER" --nfs-port "$nfs_port" --mount-port "$mount_port" --export "$work/export" \
  --out "$work/out" tests/kvm/job.sh || status=$?
kill -USR1 "$server"; sleep 0.5
echo "===== server statistics ====="
sed -n '/^connections/,$p' "$work/serve.log" | tail -30
exit $status
