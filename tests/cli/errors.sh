#!/usr/bin/env bash
# Failures of the client commands: one line per failed argument in the form
# "nfsx CMD: WHAT: REASON", exit status 1, and the remaining arguments still done.
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh"

serve nfsx
printf 'one\n' >"$EXPORT/one"
printf 'two\n' >"$EXPORT/two"
mkdir "$EXPORT/dir"
M=$(u missing)

fails "cat of a missing file" 1 "nfsx cat: $M: No such file or directory" "$NFSX" cat "$M"
fails "cat keeps going past a missing file" 1 "nfsx cat: $M: No such file or directory" \
	"$NFSX" cat "$(u one)" "$M" "$(u two)"
expect_eq "$(cat "$WORK/out")" "one
two" "stdout of cat one missing two"
fails "cat of a directory" 1 "nfsx cat: $(u dir): Is a directory" "$NFSX" cat "$(u dir)"
fails "ls of a missing path" 1 "nfsx ls: $M: No such file or directory" "$NFSX" ls "$M"
fails "ls keeps going" 1 "nfsx ls: $M: No such file or directory" "$NFSX" ls "$M" "$(u one)"
expect_eq "$(cat "$WORK/out")" "$(u one)" "stdout of ls missing one"
fails "stat of a missing path" 1 "nfsx stat: $M: No such file or directory" "$NFSX" stat "$M"
fails "stat through a file" 1 "nfsx stat: $(u one/x): Not a directory" "$NFSX" stat "$(u one/x)"
fails "cp of a missing NFS file" 1 "nfsx cp: $M: No such file or directory" \
	"$NFSX" cp "$M" "$WORK/x"
[[ ! -e $WORK/x ]] || fail "cp of a missing file created the target"
fails "cp of a missing local file" 1 "nfsx cp: $WORK/nothing: No such file or directory" \
	"$NFSX" cp "$WORK/nothing" "$(u x)"
fails "cp into a missing NFS directory" 1 "nfsx cp: $(u no/x): No such file or directory" \
	"$NFSX" cp "$EXPORT/one" "$(u no/x)"
fails "cp of several files to a non-directory" 1 "nfsx cp: target '$(u one)' is not a directory" \
	"$NFSX" cp "$EXPORT/one" "$EXPORT/two" "$(u one)"
fails "cp of a file onto itself" 1 "nfsx cp: '$(u one)' and '$(u one)' are the same file" \
	"$NFSX" cp "$(u one)" "$(u one)"
expect_eq "$(cat "$EXPORT/one")" one "the file copied onto itself is intact"

# Not URLs, bad URLs, servers that are not there, paths outside the export.
fails "ls of a local path" 1 "nfsx ls: /tmp: not a valid nfs:// URL" "$NFSX" ls /tmp
fails "unknown URL option" 1 \
	"nfsx ls: $(u one)&bogus=1: unknown URL option 'bogus'" "$NFSX" ls "$(u one)&bogus=1"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
dead="nfs://127.0.0.1$EXPORT/one?version=3&nfsport=$port&mountport=$port"
fails "server not listening" 1 \
	"nfsx cat: $dead: cannot reach MOUNT at 127.0.0.1:$port: Connection refused (ECONNREFUSED)" \
	"$NFSX" cat "$dead"
mkdir -p "$WORK/elsewhere"
outside="nfs://127.0.0.1$WORK/elsewhere?$QUERY"
expect_fail "ls outside the export" "^nfsx ls: nfs://.*: server 127.0.0.1 refused to mount" \
	"$NFSX" ls "$outside"

# --stats is printed after a failure too, and usage errors are CLI11's (status 106 and up).
rc=0
"$NFSX" cat --stats "$M" >"$WORK/out" 2>"$WORK/err" || rc=$?
expect_eq "$rc $(head -n 1 "$WORK/err")" "1 nfsx cat: $M: No such file or directory" \
	"status and first line of a failed cat --stats"
grep -qx 'Client nfs v3:' "$WORK/err" || fail "no nfsstat table after a failed cat --stats"
pass "nfsstat table after a failed cat --stats"
rc=0
"$NFSX" cp "$(u one)" >/dev/null 2>&1 || rc=$?
((rc != 0 && rc != 1)) || fail "cp with one argument: status $rc, expected a usage error"
pass "cp with one argument is a usage error (status $rc)"

stop_nfsx
