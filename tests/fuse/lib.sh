# lib.sh - shared by the FUSE mount tests (sourced, not run). Each test gets its own
# work directory, its own server on ports the kernel picks and its own mounts, so tests
# can run in parallel.
#
# Environment (ctest sets these; see tests/fuse/tests.cmake):
#   NFSX              the nfsx binary
#   NFSX_FUSE_BIN     directory with the test programs (posix_suite, fsx)
#   NFSX_KEEP_WORK=1  keep the work directory (logs) after the test
#   NFSX_FSX_OPS      operations per fsx run (default 50000)
#
# Exit status: 0 passed, 1 failed, 77 skipped (ctest's SKIP_RETURN_CODE; the frame is
# tests/common.sh). A test skips, saying why, where FUSE cannot be used (no /dev/fuse,
# no privilege to mount) or where a peer cannot run; it never passes without having run.

# Exports live on tmpfs when there is one: the tests are about the client and the mount,
# and a server's fsync on a slow disk would only make them slower.
WORK_BASE=${NFSX_TEST_TMP:-$([[ -d /dev/shm && -w /dev/shm ]] && echo /dev/shm || echo "${TMPDIR:-/tmp}")}
NFSX_FUSE_BIN=${NFSX_FUSE_BIN:-$(dirname "${NFSX:?set NFSX to the nfsx binary}")}
source "$(dirname "${BASH_SOURCE[0]}")/../common.sh"
MOUNTS=()  # mountpoints to take down at exit
NFSX_SERVE_ARGS=()

before_cleanup() {
	local m
	for m in "${MOUNTS[@]}"; do
		[[ -n $m ]] || continue
		fusermount3 -u "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
	done
}

# need_fuse: skip unless this machine can mount FUSE file systems at all.
need_fuse() {
	[[ -e /dev/fuse ]] || skip "/dev/fuse is absent: no FUSE in this kernel or container"
	if ((EUID != 0)); then
		command -v fusermount3 >/dev/null || skip "not root and fusermount3 is not installed"
		[[ -r /dev/fuse && -w /dev/fuse ]] || skip "not root and /dev/fuse is not accessible"
	fi
	return 0
}

# start_server KIND NAME: an NFS server exporting a fresh directory, root not squashed.
# KIND is nfsx or ganesha. Sets EXPORT_DIR (on the server's side) and URL (the export
# root; append a path and options).
start_server() {
	local kind=$1 name=$2
	EXPORT_DIR=$WORK/$name.export
	mkdir -p "$EXPORT_DIR"
	chmod 1777 "$EXPORT_DIR"
	case $kind in
		nfsx) start_nfsx "$name" ;;
		ganesha) start_ganesha "$name" ;;
		*) fail "unknown server kind $kind" ;;
	esac
}

# NFSX_SERVE_ARGS: more options for nfsx serve (an array, set before start_server).
# start_nfsx NAME [NFS_PORT MOUNT_PORT]: ports 0 (the default) let the kernel pick; a
# restart passes the ports of the first start. Sets NFSX_PID, NFS_PORT and MOUNT_PORT.
start_nfsx() {
	local name=$1 ports=$WORK/$1.ports
	local backend=localfs
	((EUID == 0)) || backend=memfs  # localfs opens files by handle: root only
	echo "$EXPORT_DIR 127.0.0.1(rw,no_root_squash,insecure)" >"$WORK/$name.exports"
	rm -f "$ports"
	"$NFSX" serve --exports "$WORK/$name.exports" --backend "$backend" --port "${2:-0}" \
		--mount-port "${3:-0}" --state-dir "$WORK/$name.state" --ports-file "$ports" \
		"${NFSX_SERVE_ARGS[@]}" >>"$WORK/$name.log" 2>&1 &
	NFSX_PID=$!
	SERVERS+=("nfsx $NFSX_PID")
	for _ in $(seq 200); do
		if [[ -s $ports ]]; then
			read -r NFS_PORT MOUNT_PORT _ <"$ports"
			URL_BASE="nfs://127.0.0.1$EXPORT_DIR"
			URL_QUERY="version=3&nfsport=$NFS_PORT&mountport=$MOUNT_PORT"
			note "nfsx serve ($backend) on nfs $NFS_PORT, mount $MOUNT_PORT (pid $NFSX_PID)"
			return 0
		fi
		kill -0 "$NFSX_PID" 2>/dev/null || fail "nfsx serve exited at start"
		sleep 0.05
	done
	fail "nfsx serve did not start within 10 s"
}

start_ganesha() {
	local name=$1 out rc=0
	"$SOURCE_DIR/tests/peers/ganesha.sh" check >"$WORK/ganesha-check.log" 2>&1 || rc=$?
	((rc == 0)) || { ((rc == 77)) && skip "$(cat "$WORK/ganesha-check.log")"; fail "ganesha.sh check failed"; }
	out=$("$SOURCE_DIR/tests/peers/ganesha.sh" start "$EXPORT_DIR" "$WORK/$name.state") ||
		fail "cannot start NFS-Ganesha"
	local pid nfs mnt
	read -r pid nfs mnt <<<"$out"
	SERVERS+=("ganesha $pid")
	URL_BASE="nfs://127.0.0.1/vfs"
	URL_QUERY="version=3&nfsport=$nfs&mountport=$mnt"
	note "NFS-Ganesha on nfs $nfs, mount $mnt (pid $pid)"
}

# url [PATH] [OPTIONS]: the URL of the last server started, PATH below its export.
url() { echo "$URL_BASE${1:-}?$URL_QUERY${2:+&$2}"; }

# mount_nfsx MOUNTPOINT URL [nfsx mount options...]: mounts in the background; skips
# if the mount fails for lack of privilege, fails on any other error.
mount_nfsx() {
	local mnt=$1 u=$2 out rc=0
	shift 2
	mkdir -p "$mnt"
	out=$("$NFSX" mount "$u" "$mnt" --log-file "$WORK/mount-$(basename "$mnt").log" "$@" 2>&1) ||
		rc=$?
	if ((rc != 0)); then
		if grep -Eq "cannot mount FUSE file system.*(Operation not permitted|Permission denied|No such device|fuse: device not found|fusermount)" <<<"$out"; then
			skip "FUSE mounts are not allowed here: $out"
		fi
		fail "nfsx mount $u $mnt: $out"
	fi
	MOUNTS+=("$mnt")
	grep -q " $(realpath "$mnt") .* fuse.nfsx " /proc/self/mountinfo || fail "$mnt is not mounted"
}

# unmount_nfsx MOUNTPOINT: nfsx umount (flush, commit, unmount, wait for the daemon).
unmount_nfsx() {
	"$NFSX" umount "$1" || fail "nfsx umount $1"
	MOUNTS=("${MOUNTS[@]/"$1"/}")
	! grep -q " $(realpath "$1") " /proc/self/mountinfo || fail "$1 still mounted after nfsx umount"
}

# freeze PID...: SIGSTOP, returning once every thread of each process has stopped. A
# multithreaded process stops only when the one thread the signal went to takes it
# and stops the others: under load its other threads go on for milliseconds after
# kill returns (a server stopped that way was seen answering a WRITE 3 ms later).
# Not for a process that may be blocked in a FUSE request of a dead server: it stops
# only once the request ends.
freeze() {
	kill -STOP "$@" || return 1
	local pid status line stopped
	for pid in "$@"; do
		for _ in $(seq 2000); do
			stopped=1
			for status in /proc/"$pid"/task/*/status; do
				while read -r line; do
					if [[ $line == State:* ]]; then
						[[ ${line:7:1} == [TtZX] ]] || stopped=0
						break
					fi
				done <"$status" 2>/dev/null
			done
			((stopped)) && break
			sleep 0.01
		done
		((stopped)) || fail "pid $pid did not stop within 20 s of SIGSTOP"
	done
}

# daemon_pid MOUNTPOINT: the pid of the process serving a mount.
daemon_pid() { getfattr --only-values -n user.nfsx.pid "$1" 2>/dev/null || python3 -c "import os,sys; print(os.getxattr(sys.argv[1], 'user.nfsx.pid').decode())" "$1"; }
