#!/usr/bin/env bash
# Ordinary programs on the mount, as a new user would run them: tar, rsync, git, sqlite3
# and fio's verifying writers. Every result is compared byte for byte with a copy on the
# local filesystem, and again through a fresh mount after the first one is gone.
#   real_programs.sh nfsx|ganesha
KIND=${1:?usage: real_programs.sh nfsx|ganesha}
TEST_NAME=fuse_real_programs_$KIND
source "$(dirname "$0")/lib.sh"
need_fuse
for tool in tar rsync git sqlite3 fio; do
	command -v "$tool" >/dev/null || skip "$tool is not installed (scripts/install-deps.sh installs it)"
done
start_server "$KIND" srv
M=$WORK/m
mount_nfsx "$M" "$(url)"

# same_tree A B: contents, types, modes, link targets, hard links and mtimes (seconds,
# which is what tar keeps) of two trees are the same.
tree_listing() { (cd "$1" && find . -mindepth 1 -printf '%P %y %m %s %n %l\n' | sort); }
tree_mtimes() { (cd "$1" && find . -mindepth 1 ! -type l -printf '%P %TY%Tm%Td%TH%TM %TS\n' | sed 's/\.[0-9]*$//' | sort); }
same_tree() {
	diff -r --no-dereference "$1" "$2" >"$WORK/diff.out" 2>&1 || fail "$3: contents differ: $(head -5 "$WORK/diff.out")"
	diff <(tree_listing "$1") <(tree_listing "$2") >"$WORK/diff.out" || fail "$3: metadata differs: $(head -5 "$WORK/diff.out")"
	diff <(tree_mtimes "$1") <(tree_mtimes "$2") >"$WORK/diff.out" || fail "$3: mtimes differ: $(head -5 "$WORK/diff.out")"
}

# A source tree with the shapes real trees have: many small files, a few large ones,
# empty files, symlinks, a hard link, odd modes and a deep path.
T=$WORK/tree
mkdir -p "$T"
cp -r "$SOURCE_DIR/src" "$SOURCE_DIR/include" "$SOURCE_DIR/tests" "$T/"
mkdir -p "$T/big" "$T/many" "$T/a/b/c/d/e/f/g/h"
head -c $((24 << 20)) /dev/urandom >"$T/big/random.bin"
head -c $((3 << 20)) /dev/zero >"$T/big/zeros.bin"
for i in $(seq 1500); do echo "file $i" >"$T/many/f$i"; done
: >"$T/empty"
ln -s ../big/random.bin "$T/many/link-to-random"
ln -s /nonexistent/target "$T/dangling"
ln "$T/big/zeros.bin" "$T/big/zeros.hardlink"
echo secret >"$T/private" && chmod 600 "$T/private"
printf '#!/bin/sh\necho ran\n' >"$T/a/b/c/d/e/f/g/h/script" && chmod 755 "$T/a/b/c/d/e/f/g/h/script"
note "tree: $(find "$T" | wc -l) entries, $(du -sh "$T" | cut -f1)"

# tar: unpack into the mount, then pack from the mount and unpack locally.
tar -C "$T" -cf "$WORK/tree.tar" .
mkdir "$M/untarred"
tar -C "$M/untarred" -xpf "$WORK/tree.tar" || fail "tar -x into the mount"
same_tree "$T" "$M/untarred" "tar -x into the mount"
pass "tar -x into the mount: same contents, modes, links and mtimes"
mkdir "$WORK/back"
tar -C "$M/untarred" -cf - . | tar -C "$WORK/back" -xpf - || fail "tar -c from the mount"
same_tree "$T" "$WORK/back" "tar -c from the mount"
pass "tar -c from the mount unpacks to the same tree"
[[ $("$M/untarred/a/b/c/d/e/f/g/h/script") == ran ]] || fail "a script on the mount does not run"
pass "a script on the mount runs"

# rsync: a copy, then an update of a few files, then a checksum pass that finds nothing.
rsync -aH "$T/" "$M/rsynced/" || fail "rsync into the mount"
for f in many/f7 many/f700 big/random.bin; do echo changed >>"$T/$f"; done
rm "$T/many/f1000"
rsync -aH --delete "$T/" "$M/rsynced/" || fail "rsync update"
left=$(rsync -aHn --checksum --delete --itemize-changes "$T/" "$M/rsynced/")
if [[ $KIND == ganesha ]]; then
	# NFS-Ganesha 4.3 (VFS) answers NFS3_OK to a SETATTR of a symlink's times and
	# leaves them unchanged (its own attributes, and a fresh mount, show the old ones).
	# The mount reports what the server has, so only symlink times differ there.
	left=$(grep -v '^\.L\.\.t\.\.\.\.\.\. ' <<<"$left" || true)
fi
[[ -z $left ]] || fail "rsync --checksum still finds differences: $(head -5 <<<"$left")"
same_tree "$T" "$M/rsynced" "rsync"
pass "rsync -aH, an update with --delete, and a --checksum pass that finds nothing"

# git: a repository on the mount (many small files, renames, mmap of packs, gc).
export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@t GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@t
git config --global --add safe.directory '*' 2>/dev/null || true
R=$M/repo
git init -q "$R" && cp -r "$SOURCE_DIR/src" "$R/" || fail "git init on the mount"
git -C "$R" add -A && git -C "$R" commit -qm initial || fail "git commit on the mount"
for i in $(seq 20); do
	echo "change $i" >>"$R/src/CMakeLists.txt"
	echo "new $i" >"$R/new$i"
	git -C "$R" add -A && git -C "$R" commit -qm "change $i" || fail "git commit $i"
done
git -C "$R" gc -q || fail "git gc on the mount"
git -C "$R" fsck --full --strict >"$WORK/fsck.out" 2>&1 || fail "git fsck: $(head -5 "$WORK/fsck.out")"
[[ -z $(git -C "$R" status --porcelain) ]] || fail "git status not clean after commit"
git clone -q "$R" "$WORK/clone" || fail "git clone from the mount"
[[ $(git -C "$WORK/clone" rev-list --count HEAD) == 21 ]] || fail "clone has $(git -C "$WORK/clone" rev-list --count HEAD) commits, not 21"
diff -r --exclude=.git "$R" "$WORK/clone" >/dev/null || fail "clone's work tree differs from the repository's"
pass "git: 21 commits, gc, fsck --full --strict, status clean, clone identical"

# sqlite3: rollback journal and WAL (which maps its -shm file shared), integrity checked.
for mode in delete wal; do
	db=$M/db-$mode.sqlite
	{
		echo "PRAGMA journal_mode=$mode;"
		echo "CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT, n INTEGER);"
		for txn in $(seq 0 19); do
			echo "BEGIN;"
			for i in $(seq $((txn * 500 + 1)) $((txn * 500 + 500))); do echo "INSERT INTO t(v,n) VALUES(hex(randomblob(32)),$i);"; done
			echo "COMMIT;"
		done
		echo "DELETE FROM t WHERE n % 7 = 0; UPDATE t SET v = 'u' WHERE n % 11 = 0;"
	} | sqlite3 "$db" >/dev/null || fail "sqlite3 ($mode) on the mount"
	[[ $(sqlite3 "$db" 'PRAGMA integrity_check;') == ok ]] || fail "sqlite3 ($mode): integrity_check"
	got=$(sqlite3 "$db" 'SELECT count(*), sum(n), sum(v = "u") FROM t;')
	[[ $got == "8572|42862858|780" ]] || fail "sqlite3 ($mode): count|sum|updated = $got, expected 8572|42862858|780"
done
pass "sqlite3 (rollback journal and WAL): 10000 inserts in 20 transactions, integrity ok"

# fio: writers whose blocks carry checksums, read back and checked by fio itself.
for engine in "psync" "psync --direct=1" "mmap" "libaio --iodepth=8 --direct=1"; do
	# shellcheck disable=SC2086
	fio --name=verify --filename="$M/fio.dat" --size=16m --bs=4k --rw=randwrite \
		--ioengine=$engine --verify=crc32c --do_verify=1 --verify_fatal=1 --unlink=0 \
		--output="$WORK/fio.out" >/dev/null 2>&1 || fail "fio $engine: $(grep -i -m3 'verify\|err' "$WORK/fio.out")"
	grep -q "err= 0" "$WORK/fio.out" || fail "fio $engine reported an error: $(grep -m3 err= "$WORK/fio.out")"
done
pass "fio randwrite + crc32c verify: psync, O_DIRECT, mmap, libaio"

# Everything again through a fresh mount, after the first one wrote back and went away.
sum_untarred=$(cd "$M/untarred" && find . -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum)
cd /
unmount_nfsx "$M"
M2=$WORK/m2
mount_nfsx "$M2" "$(url)"
same_tree "$WORK/back" "$M2/untarred" "fresh mount"
[[ $(cd "$M2/untarred" && find . -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum) == "$sum_untarred" ]] ||
	fail "fresh mount: checksums differ"
same_tree "$T" "$M2/rsynced" "fresh mount, rsync copy"
git -C "$M2/repo" fsck --full --strict >/dev/null 2>&1 || fail "fresh mount: git fsck"
for mode in delete wal; do
	[[ $(sqlite3 "$M2/db-$mode.sqlite" 'PRAGMA integrity_check; SELECT count(*) FROM t;') == $'ok\n8572' ]] ||
		fail "fresh mount: sqlite3 ($mode)"
done
pass "a fresh mount sees the same trees, repository and databases"
unmount_nfsx "$M2"
