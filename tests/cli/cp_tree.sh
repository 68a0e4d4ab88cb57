#!/usr/bin/env bash
# nfsx cp -r of a tree (nested directories, files, symlinks, an empty directory) local->nfs,
# nfs->local and nfs->nfs, compared with diff -r; one connection for the whole tree.
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh"
need find readlink

T=$WORK/tree
mkdir -p "$T/sub/deeper" "$T/emptydir" "$T/flat"
printf 'a\n' >"$T/a.txt"
: >"$T/empty"
head -c 1048579 /dev/urandom >"$T/bin"
printf 'b\n' >"$T/sub/b.txt"
head -c 3000000 /dev/urandom >"$T/sub/deeper/c.bin"
for i in $(seq 1 40); do echo "$i" >"$T/flat/file$i"; done
ln -s sub/b.txt "$T/link"
ln -s ../a.txt "$T/sub/up"
ln -s /nonexistent/target "$T/dangling"
chmod 0700 "$T/sub/deeper"
chmod 0600 "$T/sub/b.txt"
touch -d '2018-01-02 03:04:05.5' "$T/sub/b.txt" "$T/sub"

serve nfsx

# same_tree A B WHAT: identical contents, symlinks compared as links, modes equal.
same_tree() {
	diff -r --no-dereference "$1" "$2" >"$WORK/diff.out" 2>&1 ||
		fail "$3: trees differ: $(head -n 5 "$WORK/diff.out")"
	(cd "$1" && find . -printf '%P %y %m\n' | LC_ALL=C sort) >"$WORK/modes.a"
	(cd "$2" && find . -printf '%P %y %m\n' | LC_ALL=C sort) >"$WORK/modes.b"
	diff "$WORK/modes.a" "$WORK/modes.b" >"$WORK/diff.out" ||
		fail "$3: types or modes differ: $(head -n 5 "$WORK/diff.out")"
	expect_eq "$(readlink "$2/link") $(readlink "$2/sub/up") $(readlink "$2/dangling")" \
		"sub/b.txt ../a.txt /nonexistent/target" "$3: symlink targets"
	pass "$3: same files, bytes, types and modes ($(wc -l <"$WORK/modes.a") entries)"
}

# 1. local -> nfs: the whole tree over one MOUNT and one NFS connection.
before=$(accepted_connections nfsx)
out "cp -r local -> nfs" "$NFSX" cp -r "$T" "$(u tree)"
after=$(accepted_connections nfsx)
same_tree "$T" "$EXPORT/tree" "cp -r local -> nfs"
expect_eq "$((after - before))" 2 "connections for a 47-entry tree (MOUNT + NFS)"
expect_eq "$(wc -c <"$WORK/err")" 0 "bytes on stderr"

# 2. nfs -> local.
out "cp -r nfs -> local" "$NFSX" cp -r "$(u tree)" "$WORK/back"
same_tree "$T" "$WORK/back" "cp -r nfs -> local"

# 3. nfs -> nfs, into an existing directory (which gets tree/ inside it).
mkdir "$EXPORT/existing"
chmod 0777 "$EXPORT/existing"
out "cp -r nfs -> nfs into a directory" "$NFSX" cp -r "$(u tree)" "$(u existing)"
same_tree "$T" "$EXPORT/existing/tree" "cp -r nfs -> nfs"

# 4. -p keeps modification times of files and directories.
out "cp -rp local -> nfs" "$NFSX" cp -r -p "$T" "$(u tree-p)"
same_tree "$T" "$EXPORT/tree-p" "cp -rp"
(cd "$T" && find . ! -type l -printf '%P %T@\n' | LC_ALL=C sort) >"$WORK/times.a"
(cd "$EXPORT/tree-p" && find . ! -type l -printf '%P %T@\n' | LC_ALL=C sort) >"$WORK/times.b"
diff "$WORK/times.a" "$WORK/times.b" >"$WORK/diff.out" ||
	fail "cp -rp: times differ: $(head -n 5 "$WORK/diff.out")"
pass "cp -rp: modification times of every file and directory kept"

# 5. Without -r a directory is skipped with an error, the other sources are copied.
fails "cp of a directory without -r" 1 "nfsx cp: $T: -r not specified; omitting directory" \
	"$NFSX" cp "$T" "$T/a.txt" "$(u existing)"
expect_eq "$(cat "$EXPORT/existing/a.txt")" a "the file after the skipped directory was copied"

stop_nfsx
