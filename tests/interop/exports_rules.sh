#!/usr/bin/env bash
# `nfsx serve --exports FILE` as libnfs-utils see it: ro, client networks, secure (source
# port below 1024), root squashing, and the defaults of a line without options.
#
# libnfs binds a reserved source port (512-1023) whenever it can, that is as root. An
# unprivileged connection is made by running the same client as uid 65534 (setpriv), which
# the server log confirms (it names the source port of every MNT).
# shellcheck source=tests/interop/lib.sh
source "$(dirname "$0")/lib.sh"
need nfs-ls nfs-cp nfs-cat

E=$WORK/exports
for d in ro dflt restricted secure squash open; do make_export "$E/$d"; done
echo "read-only content" >"$E/ro/present.txt"
echo "payload" >"$WORK/payload.txt"
chmod 644 "$WORK/payload.txt"
cat >"$WORK/exports.conf" <<EOF
# Written by tests/interop/exports_rules.sh
$E/ro          127.0.0.1(ro,insecure)
$E/dflt        127.0.0.1
$E/restricted  192.0.2.0/24(rw,insecure,no_root_squash)
$E/secure      127.0.0.1(rw,secure,no_root_squash)
$E/squash      127.0.0.1(rw,insecure)
$E/open        127.0.0.1(rw,insecure,no_root_squash)
EOF
start_nfsx nfsx --exports "$WORK/exports.conf"
LOG=$WORK/nfsx.log

# As uid/gid 65534 with no groups: libnfs cannot bind a reserved port and uses an ordinary one.
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@"; }
ROOT=0
((EUID == 0)) && command -v setpriv >/dev/null && ROOT=1

# mount_port_of EXPORT: the source port of the last MNT of EXPORT in the server log.
mount_port_of() {
	grep -E "MNT $1/? from 127\.0\.0\.1:[0-9]+" "$LOG" | grep -v ": refused" | tail -n 1 |
		sed -E 's/.* from 127\.0\.0\.1:([0-9]+).*/\1/' || true
}

note "ro: readable, not writable"
run "nfs-ls of the ro export" nfs-ls "$(url "$E/ro")"
expect_eq "$(awk '{print $NF}' "$WORK/last.out")" present.txt "ro export listing"
expect_eq "$(nfs-cat "$(url "$E/ro/present.txt")")" "read-only content" "nfs-cat in the ro export"
expect_fail "nfs-cp into the ro export" "NFS3ERR_ROFS" \
	nfs-cp "$WORK/payload.txt" "$(url "$E/ro/new.txt")"
[[ ! -e $E/ro/new.txt ]] || fail "nfs-cp into the ro export left $E/ro/new.txt"
pass "no file created in the ro export"
if [[ -x $NFSX_LIBNFS_LOAD ]]; then
	expect_fail "nfsx-libnfs-load writing into the ro export" "NFS3ERR_ROFS" \
		"$NFSX_LIBNFS_LOAD" "$(url "$E/ro")" --mode write --create --size 64k
fi

note "a line without options: ro (as on Linux)"
expect_fail "nfs-cp into an export without options" "NFS3ERR_ROFS" \
	nfs-cp "$WORK/payload.txt" "$(url "$E/dflt/new.txt")"

note "an export for 192.0.2.0/24 only"
expect_fail "nfs-ls from 127.0.0.1 of the 192.0.2.0/24 export" "MNT3ERR_ACCES" \
	nfs-ls "$(url "$E/restricted")"
expect_fail "nfs-cp from 127.0.0.1 into the 192.0.2.0/24 export" "MNT3ERR_ACCES" \
	nfs-cp "$WORK/payload.txt" "$(url "$E/restricted/new.txt")"
[[ ! -e $E/restricted/new.txt ]] || fail "a refused client created a file"
pass "no file created in the refused export"

note "secure: only clients on reserved source ports"
if ((ROOT)); then
	run "nfs-ls as root of the secure export" nfs-ls "$(url "$E/secure")"
	port=$(mount_port_of "$E/secure")
	((port > 0 && port < 1024)) || fail "root's MNT came from port '$port', expected < 1024"
	pass "root's MNT came from reserved port $port"
	run "nfs-cp as root into the secure export" nfs-cp "$WORK/payload.txt" "$(url "$E/secure/new.txt")"
	expect_eq "$(cat "$E/secure/new.txt")" payload "content written into the secure export"
	expect_eq "$(stat -c %u:%g "$E/secure/new.txt")" 0:0 "owner with no_root_squash"
	expect_fail "nfs-ls as uid 65534 of the secure export" "MNT3ERR_ACCES" \
		as_nobody nfs-ls "$(url "$E/secure")"
	port=$(grep -E "MNT $E/secure/? from 127\.0\.0\.1:[0-9]+: refused" "$LOG" | tail -n 1 |
		sed -E 's/.* from 127\.0\.0\.1:([0-9]+).*/\1/' || true)
	((port >= 1024)) || fail "the refused MNT came from port '$port', expected >= 1024"
	pass "the refused MNT came from unreserved port $port"
	# The same unprivileged client is welcome on an insecure export: the port made the difference.
	run "nfs-ls as uid 65534 of an insecure export" as_nobody nfs-ls "$(url "$E/open")"
	port=$(mount_port_of "$E/open")
	((port >= 1024)) || fail "uid 65534's MNT came from port '$port', expected >= 1024"
	pass "uid 65534's MNT of the insecure export came from port $port and was accepted"
	expect_fail "nfs-ls as uid 65534 of an export with default options (secure)" \
		"MNT3ERR_ACCES" as_nobody nfs-ls "$(url "$E/dflt")"
else
	note "not root: libnfs uses an unreserved port, so only the refusal can be checked"
	expect_fail "nfs-ls (unreserved port) of the secure export" "MNT3ERR_ACCES" \
		nfs-ls "$(url "$E/secure")"
	run "nfs-ls (unreserved port) of an insecure export" nfs-ls "$(url "$E/open")"
fi

note "root_squash (the default) against no_root_squash"
run "nfs-cp as root into the root_squash export" \
	nfs-cp "$WORK/payload.txt" "$(url "$E/squash/new.txt")"
if ((EUID == 0)); then
	expect_eq "$(stat -c %u:%g "$E/squash/new.txt")" 65534:65534 "owner with root_squash"
	run "nfs-cp as root into the no_root_squash export" \
		nfs-cp "$WORK/payload.txt" "$(url "$E/open/new.txt")"
	expect_eq "$(stat -c %u:%g "$E/open/new.txt")" 0:0 "owner with no_root_squash"
fi
expect_eq "$(cat "$E/squash/new.txt")" payload "content written into the root_squash export"

stop_nfsx
