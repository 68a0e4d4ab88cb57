#!/usr/bin/env bash
# The nfsx mount command line: errors are one line and a non-zero exit status (bad
# URL, unknown option, missing mountpoint, server down, export refused, path not on
# the server), ro mounts, mountstat, umount of a busy or foreign mount point, and a
# foreground mount stopped by SIGTERM.
TEST_NAME=fuse_mount_cli
source "$(dirname "$0")/lib.sh"
need_fuse
start_server nfsx srv
mkdir -p "$WORK/mnt"

# expect_mount_error WHAT PATTERN ARGS...: nfsx mount ARGS fails with one line matching PATTERN.
expect_mount_error() {
	local what=$1 pattern=$2 out rc=0
	shift 2
	out=$("$NFSX" mount "$@" 2>&1) || rc=$?
	((rc != 0)) || fail "$what: nfsx mount succeeded"
	[[ $(wc -l <<<"$out") == 1 ]] || fail "$what: more than one line: $out"
	grep -Eq -- "$pattern" <<<"$out" || fail "$what: '$out' does not say '$pattern'"
	! grep -q " $WORK/mnt " /proc/self/mountinfo || fail "$what: something got mounted"
	pass "$what: exit $rc, \"$out\""
}

expect_mount_error "bad URL" "^nfsx mount: bad URL" "http://127.0.0.1/x" "$WORK/mnt"
expect_mount_error "unknown option" "unknown mount option 'nonsense'" "$(url)" "$WORK/mnt" -o nonsense
expect_mount_error "missing mountpoint" "mountpoint .*No such file or directory" "$(url)" "$WORK/nowhere"
# A port nothing listens on: take one from the kernel and close it again.
dead=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
expect_mount_error "server down" "cannot reach .*Connection refused" \
	"nfs://127.0.0.1$EXPORT_DIR?version=3&nfsport=$dead&mountport=$dead" "$WORK/mnt"
expect_mount_error "export refused" "refused to mount /not/exported" \
	"nfs://127.0.0.1/not/exported?$URL_QUERY" "$WORK/mnt"
expect_mount_error "path not on the server" "/no/such/dir on 127.0.0.1: No such file.* \\(at /no\\)" \
	"$(url /no/such/dir)" "$WORK/mnt"

# Read-only.
echo hello >"$EXPORT_DIR/file"
mount_nfsx "$WORK/mnt" "$(url)" -o ro
[[ $(cat "$WORK/mnt/file") == hello ]] || fail "ro mount cannot read"
out=$(touch "$WORK/mnt/new" 2>&1) && fail "ro mount: touch succeeded"
grep -q "Read-only file system" <<<"$out" || fail "ro mount: $out"
pass "ro mount reads, and writes fail with EROFS"
"$NFSX" mountstat "$WORK/mnt" >"$WORK/mountstat.out"
grep -q "^nfsx mount of 127.0.0.1:$EXPORT_DIR" "$WORK/mountstat.out" &&
	grep -q "^Client rpc stats:" "$WORK/mountstat.out" || fail "mountstat: $(cat "$WORK/mountstat.out")"
pass "nfsx mountstat prints the table"

# umount refuses a busy mount, then succeeds.
(cd "$WORK/mnt" && sleep 3) &
busy=$!
sleep 0.5
out=$("$NFSX" umount "$WORK/mnt" 2>&1) && fail "umount of a busy mount succeeded"
grep -qi "busy" <<<"$out" || fail "busy umount: $out"
pass "umount of a busy mount fails: $out"
wait "$busy" # only this one: the server runs in the background too
unmount_nfsx "$WORK/mnt"
pass "umount once idle"
out=$("$NFSX" umount "$WORK" 2>&1) && fail "umount of a plain directory succeeded"
grep -q "not a mount point" <<<"$out" || fail "umount of a plain directory: $out"
out=$("$NFSX" mountstat /proc 2>&1) && fail "mountstat of /proc succeeded"
grep -q "not an nfsx mount (proc)" <<<"$out" || fail "mountstat of /proc: $out"
pass "umount and mountstat refuse what is not an nfsx mount"

# allow_other: every request reaches the server as the mount's one identity, so the
# kernel must check other users against the mode bits (default_permissions).
if ((EUID == 0)) && command -v setpriv >/dev/null; then
	echo secret >"$EXPORT_DIR/root-only" && chmod 600 "$EXPORT_DIR/root-only"
	echo open >"$EXPORT_DIR/world-readable" && chmod 644 "$EXPORT_DIR/world-readable"
	mkdir -m 755 "$EXPORT_DIR/root-dir"
	chmod 711 "$WORK"  # mktemp made it 0700: other users could not reach the mount
	mount_nfsx "$WORK/shared" "$(url)" -o allow_other
	as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
	[[ $(as_nobody cat "$WORK/shared/world-readable") == open ]] || fail "allow_other: another user cannot read a 0644 file"
	out=$(as_nobody cat "$WORK/shared/root-only" 2>&1) && fail "allow_other: another user read a 0600 root file: $out"
	grep -q "Permission denied" <<<"$out" || fail "allow_other: reading a 0600 root file: $out"
	out=$(as_nobody touch "$WORK/shared/root-dir/new" 2>&1) && fail "allow_other: another user created a file in a 0755 root directory"
	pass "allow_other: other users get what the mode bits give them, and no more"
	# Each request carries its caller's identity, as with the kernel NFS client.
	as_nobody touch "$WORK/shared/by-nobody" || fail "allow_other: nobody cannot create in a 1777 directory"
	[[ $(stat -c %u:%g "$EXPORT_DIR/by-nobody") == 65534:65534 ]] ||
		fail "a file nobody created belongs on the server to $(stat -c %u:%g "$EXPORT_DIR/by-nobody")"
	echo g >"$EXPORT_DIR/group-file" && chown 0:4242 "$EXPORT_DIR/group-file" && chmod 660 "$EXPORT_DIR/group-file"
	setpriv --reuid=65534 --regid=65534 --groups=4242 sh -c "echo more >>'$WORK/shared/group-file'" ||
		fail "a member of the file's supplementary group cannot write it"
	as_nobody sh -c "echo more >>'$WORK/shared/group-file'" 2>/dev/null && fail "a non-member wrote a 0660 file"
	[[ $(cat "$EXPORT_DIR/group-file") == $'g\nmore' ]] || fail "group-file: $(cat "$EXPORT_DIR/group-file")"
	# A user's write to a setuid file: the write succeeds and the bit goes (as on a local
	# file); the kernel's chmod that would clear it is not the user's to make.
	echo a >"$WORK/shared/suid-file" && chmod 04777 "$WORK/shared/suid-file"
	as_nobody sh -c "echo b >>'$WORK/shared/suid-file'; stat -c %a '$WORK/shared/suid-file'" >"$WORK/suid.out" ||
		fail "a user's write to a 04777 file failed"
	[[ $(cat "$WORK/suid.out") == 777 && $(stat -c %a "$EXPORT_DIR/suid-file") == 777 ]] ||
		fail "after a user's write: mode $(cat "$WORK/suid.out") on the mount, $(stat -c %a "$EXPORT_DIR/suid-file") on the server (expected 777)"
	unmount_nfsx "$WORK/shared"
	pass "callers' identities reach the server: owner of new files, supplementary groups, setuid cleared by a user's write"
	mount_nfsx "$WORK/shared" "$(url)" -o allow_other,uid=0,gid=0
	# (touch would then fail to set the times: the new file is root's, not the caller's)
	as_nobody sh -c ": >'$WORK/shared/by-nobody-as-root'" || fail "uid=0 mount: nobody cannot create in a 1777 directory"
	[[ $(stat -c %u "$EXPORT_DIR/by-nobody-as-root") == 0 ]] || fail "uid=0 mount: the file is not root's"
	unmount_nfsx "$WORK/shared"
	pass "with uid=/gid= every request carries that one identity"
fi

# Foreground: serves until SIGTERM, then unmounts and exits 0. Started as `nohup` would
# start it (SIGHUP ignored), it keeps SIGHUP ignored, as with libfuse's own handlers.
(
	trap '' HUP
	exec "$NFSX" mount -f "$(url)" "$WORK/mnt" >"$WORK/fg.log" 2>&1
) &
fg=$!
MOUNTS+=("$WORK/mnt")  # a failure below unmounts it, which ends the daemon
for _ in $(seq 100); do grep -q " $WORK/mnt " /proc/self/mountinfo && break; sleep 0.05; done
grep -q " $WORK/mnt " /proc/self/mountinfo || fail "foreground mount did not appear"
sig_ignored() { (((0x$(awk '/^SigIgn:/ { print $2 }' "/proc/$1/status") >> ($2 - 1)) & 1)); }
sig_ignored "$fg" 1 || fail "the mount started with SIGHUP ignored catches it"
kill -HUP "$fg"
echo via-fg >"$WORK/mnt/fg-file"
grep -q " $WORK/mnt " /proc/self/mountinfo || fail "an ignored SIGHUP ended the mount"
pass "foreground mount: SIGHUP stays ignored when it was"
kill -TERM "$fg"
rc=0
wait "$fg" || rc=$?
((rc == 0)) || fail "foreground mount exited $rc at SIGTERM: $(tail -3 "$WORK/fg.log")"
! grep -q " $WORK/mnt " /proc/self/mountinfo || fail "still mounted after SIGTERM"
MOUNTS=("${MOUNTS[@]/"$WORK/mnt"/}")
[[ $(cat "$EXPORT_DIR/fg-file") == via-fg ]] || fail "data written before SIGTERM is missing"
pass "foreground mount: SIGTERM unmounts, flushes and exits 0"
