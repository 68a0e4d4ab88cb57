#!/usr/bin/env bash
# nfsx cp of single files: 32 MiB of random bytes local->nfs, nfs->local, nfs->nfs on one
# server and across two, compared by sha256; --stats counts; modes and -p; no output on a
# stderr that is not a terminal.
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh"
need stat head

head -c 32M /dev/urandom >"$WORK/big.src"
want=$(sha "$WORK/big.src")
serve one
ONE=$EXPORT
one() { EXPORT=$ONE QUERY=$QUERY_ONE u "$@"; }
QUERY_ONE=$QUERY

# 1. local -> nfs, with --stats: 32 full-sized WRITEs (1 MiB each, the server's wtpref),
# at least one COMMIT, and nothing but the table on stderr (stderr is not a terminal).
out "cp local -> nfs (32 MiB)" "$NFSX" cp --stats "$WORK/big.src" "$(one big.bin)"
expect_eq "$(stat -c %s "$ONE/big.bin")" 33554432 "size on disk after cp local -> nfs"
expect_eq "$(sha "$ONE/big.bin")" "$want" "sha256 on disk after cp local -> nfs"
grep -qx 'Client nfs v3:' "$WORK/err" || fail "--stats printed no 'Client nfs v3:' table: $(cat "$WORK/err")"
pass "--stats prints the nfsstat -c table"
expect_eq "$(nfsstat_count write "$WORK/err")" 32 "WRITE calls for 32 MiB"
expect_eq "$(nfsstat_count read "$WORK/err")" 0 "READ calls while writing a new file"
(($(nfsstat_count commit "$WORK/err") >= 1)) || fail "no COMMIT after cp: $(cat "$WORK/err")"
pass "at least one COMMIT"
expect_eq "$(grep -v -e '^Client' -e '^[a-z]' -e '^[0-9]' -e '^$' "$WORK/err" | wc -l)" 0 \
	"lines on stderr besides the table (no progress bar without a terminal)"

# 2. nfs -> local, and into a local directory under the same name.
out "cp nfs -> local" "$NFSX" cp "$(one big.bin)" "$WORK/big.back"
expect_eq "$(sha "$WORK/big.back")" "$want" "sha256 after cp nfs -> local"
expect_eq "$(wc -c <"$WORK/err")" 0 "bytes on stderr (not a terminal: no progress bar)"
mkdir "$WORK/into"
out "cp nfs -> local directory" "$NFSX" cp "$(one big.bin)" "$WORK/into"
expect_eq "$(sha "$WORK/into/big.bin")" "$want" "sha256 of the copy inside a directory"

# 3. nfs -> nfs on one server: READs and WRITEs over one client.
out "cp nfs -> nfs, one server" "$NFSX" cp --stats "$(one big.bin)" "$(one big2.bin)"
expect_eq "$(sha "$ONE/big2.bin")" "$want" "sha256 after cp nfs -> nfs"
expect_eq "$(nfsstat_count write "$WORK/err")" 32 "WRITE calls of the nfs -> nfs copy"
(($(nfsstat_count read "$WORK/err") >= 32)) || fail "fewer than 32 READs: $(cat "$WORK/err")"
pass "at least 32 READs for 32 MiB read"

# 4. nfs -> nfs across two servers: --stats sums both clients.
serve two
TWO=$EXPORT
out "cp nfs -> nfs, two servers" "$NFSX" cp --stats "$(one big.bin)" "$(u big3.bin)"
expect_eq "$(sha "$TWO/big3.bin")" "$want" "sha256 after cp across servers"
expect_eq "$(nfsstat_count write "$WORK/err")" 32 "WRITE calls across servers"

# 5. Several sources into an NFS directory; an empty file; a file overwritten by a shorter one.
mkdir "$ONE/dir"
chmod 0777 "$ONE/dir"
printf 'small' >"$WORK/small"
: >"$WORK/empty"
out "cp two files into an nfs directory" "$NFSX" cp "$WORK/small" "$WORK/empty" "$(one dir)"
expect_eq "$(cat "$ONE/dir/small")" small "content of small"
expect_eq "$(stat -c %s "$ONE/dir/empty")" 0 "size of the empty copy"
out "cp a short file over a long one" "$NFSX" cp "$WORK/small" "$(one big2.bin)"
expect_eq "$(cat "$ONE/big2.bin")" small "overwritten file holds only the new bytes"

# 6. Modes: the source's less the umask; a read-only source is written, then made read-only;
# -p keeps mode and times.
printf 'mode' >"$WORK/m666"
chmod 0666 "$WORK/m666"
out "cp of a 0666 file" "$NFSX" cp "$WORK/m666" "$(one m666)"
expect_eq "$(stat -c %a "$ONE/m666")" 644 "mode of the copy (umask 022)"
printf 'read only' >"$WORK/ro"
chmod 0444 "$WORK/ro"
out "cp of a read-only file" "$NFSX" cp "$WORK/ro" "$(one ro)"
expect_eq "$(cat "$ONE/ro")" "read only" "content of the read-only copy"
expect_eq "$(stat -c %a "$ONE/ro")" 444 "mode of the read-only copy"
printf 'preserved' >"$WORK/p"
chmod 0600 "$WORK/p"
touch -d '2019-07-08 09:10:11.987654321' "$WORK/p"
out "cp -p" "$NFSX" cp -p "$WORK/p" "$(one p)"
expect_eq "$(stat -c '%a %y' "$ONE/p")" "600 2019-07-08 09:10:11.987654321 +0000" "mode and mtime after cp -p"
out "cp -p back" "$NFSX" cp -p "$(one p)" "$WORK/p.back"
expect_eq "$(stat -c '%a %y' "$WORK/p.back")" "600 2019-07-08 09:10:11.987654321 +0000" \
	"mode and mtime after cp -p nfs -> local"

# 7. On a terminal, a short copy draws nothing either (the bar waits a second).
if command -v script >/dev/null; then
	script -qec "'$NFSX' cp '$WORK/small' '$(one tty.txt)'" /dev/null >"$WORK/tty.out" ||
		fail "cp on a terminal failed: $(cat "$WORK/tty.out")"
	expect_eq "$(wc -c <"$WORK/tty.out") $(cat "$ONE/tty.txt")" "0 small" \
		"bytes a short copy writes to a terminal, and the copy"
else
	note "script(1) is not installed: the terminal check is left out"
fi

stop_nfsx
