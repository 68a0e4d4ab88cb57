#!/usr/bin/env bash
# The example program against a real `nfsx serve`: the copy must be byte-exact.
set -euo pipefail
NFSX=$1 EXAMPLE=$2
work=$(mktemp -d)
trap 'kill $server 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
mkdir -p "$work/export" && chmod 1777 "$work/export"
"$NFSX" serve "$work/export" --port 0 --mount-port 0 --state-dir "$work/state" \
  --ports-file "$work/ports" >"$work/log" 2>&1 &
server=$!
for _ in $(seq 100); do [[ -s $work/ports ]] && break; sleep 0.1; done
[[ -s $work/ports ]] || { cat "$work/log"; exit 77; }
read -r nfs mnt _ <"$work/ports"
head -c 5000000 /dev/urandom >"$work/src"
"$EXAMPLE" "$work/src" "nfs://127.0.0.1$work/export/copy.bin?version=3&nfsport=$nfs&mountport=$mnt"
cmp "$work/src" "$work/export/copy.bin"
echo "example copy is byte-exact"
