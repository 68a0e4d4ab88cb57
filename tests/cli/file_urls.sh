#!/usr/bin/env bash
# file_urls.sh nfsx|ganesha - every command given the URL of a file below the export,
# existing or not, as libnfs resolves it: the client mounts the longest prefix the
# server accepts. NFS-Ganesha refuses MNT of a path that is not an export with
# MNT3ERR_ACCES; the client used to stop there ("refused to mount /vfs/new.bin").
KIND=${1:?usage: file_urls.sh nfsx|ganesha}
source "$(dirname "${BASH_SOURCE[0]}")/../fuse/lib.sh"
start_server "$KIND" urls

head -c 300000 /dev/urandom >"$WORK/local.bin"
echo "already here" >"$EXPORT_DIR/there.txt"
mkdir -p "$EXPORT_DIR/sub"

# check WHAT CMD...: CMD must succeed.
check() {
	local what=$1 rc=0
	shift
	"$@" >"$WORK/out" 2>"$WORK/err" || rc=$?
	((rc == 0)) || fail "$what: exit status $rc: $(cat "$WORK/err")"
	pass "$what"
}

check "cp to a new file's URL" "$NFSX" cp "$WORK/local.bin" "$(url /new.bin)"
cmp -s "$WORK/local.bin" "$EXPORT_DIR/new.bin" || fail "the copy differs"
check "cp to a new file in a subdirectory" "$NFSX" cp "$WORK/local.bin" "$(url /sub/deep.bin)"
cmp -s "$WORK/local.bin" "$EXPORT_DIR/sub/deep.bin" || fail "the copy in sub differs"
check "cp over an existing file's URL" "$NFSX" cp "$WORK/local.bin" "$(url /there.txt)"
cmp -s "$WORK/local.bin" "$EXPORT_DIR/there.txt" || fail "the overwritten file differs"
check "cp from a file's URL" "$NFSX" cp "$(url /new.bin)" "$WORK/back.bin"
cmp -s "$WORK/local.bin" "$WORK/back.bin" || fail "the copy back differs"
check "cat of a file's URL" "$NFSX" cat "$(url /sub/deep.bin)"
cmp -s "$WORK/local.bin" "$WORK/out" || fail "cat printed something else"
check "stat of a file's URL" "$NFSX" stat "$(url /new.bin)"
grep -q "300000" "$WORK/out" || fail "stat does not show the size: $(cat "$WORK/out")"
check "ls of a file's URL" "$NFSX" ls "$(url /new.bin)"
check "mkdir of a new directory's URL" "$NFSX" mkdir "$(url /made)"
[[ -d $EXPORT_DIR/made ]] || fail "mkdir made nothing"
check "mv of a file's URL" "$NFSX" mv "$(url /new.bin)" "$(url /moved.bin)"
[[ -f $EXPORT_DIR/moved.bin && ! -e $EXPORT_DIR/new.bin ]] || fail "mv did not move"
check "rm of a file's URL" "$NFSX" rm "$(url /moved.bin)"
[[ ! -e $EXPORT_DIR/moved.bin ]] || fail "rm left the file"

# A file that is not there: the export mounts, and the error is about the file.
rc=0
"$NFSX" cat "$(url /missing.txt)" >"$WORK/out" 2>"$WORK/err" || rc=$?
((rc != 0)) || fail "cat of a missing file succeeded"
grep -q "refused to mount" "$WORK/err" && fail "a missing file was reported as a refused mount: $(cat "$WORK/err")"
grep -qi "no such file" "$WORK/err" || fail "cat of a missing file: $(cat "$WORK/err")"
pass "cat of a missing file: $(cat "$WORK/err")"
