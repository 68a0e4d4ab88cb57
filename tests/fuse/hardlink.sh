#!/usr/bin/env bash
# The hard-link check that fuse-nfs fails: after link(), both names must show the same
# st_ino and a link count of 2, at once, after a listing, and through another mount.
#   hardlink.sh nfsx|ganesha
KIND=${1:?usage: hardlink.sh nfsx|ganesha}
TEST_NAME=fuse_hardlink_$KIND
source "$(dirname "$0")/lib.sh"
need_fuse
start_server "$KIND" srv
mount_nfsx "$WORK/a" "$(url)"
cd "$WORK/a"
echo data >old
stat -c %h old >/dev/null  # the kernel caches the old name's attributes first
ln old new
read -r ino1 n1 < <(stat -c '%i %h' old)
read -r ino2 n2 < <(stat -c '%i %h' new)
[[ $ino1 == "$ino2" ]] || fail "names of one file have different inode numbers: $ino1 $ino2"
pass "old and new: same st_ino ($ino1)"
[[ $n1 == 2 && $n2 == 2 ]] || fail "link counts after link(): old $n1, new $n2 (expected 2 2)"
pass "old and new: nlink 2 and 2"
ls -li >/dev/null
[[ $(stat -c '%i %h' old) == "$ino1 2" && $(stat -c '%i %h' new) == "$ino1 2" ]] ||
	fail "after ls -l: $(stat -c '%n %i %h' old new)"
pass "same after a listing (readdirplus)"
echo more >>new
[[ $(cat old) == $'data\nmore' ]] || fail "a write through new is not seen through old"
pass "a write through one name shows through the other"
[[ $(stat -c %i old) != "$(stat -c %i .)" ]] || fail "st_ino of the file equals the directory's"
mount_nfsx "$WORK/b" "$(url)"
[[ $(stat -c '%i %h' "$WORK/b/old") == "$ino1 2" && $(stat -c '%i %h' "$WORK/b/new") == "$ino1 2" ]] ||
	fail "second mount: $(stat -c '%n %i %h' "$WORK/b/old" "$WORK/b/new")"
pass "a second mount shows the same inode number (the server's fileid) and nlink 2"
rm old
[[ $(stat -c %h new) == 1 ]] || fail "nlink after removing old: $(stat -c %h new)"
pass "after rm old: new has nlink 1"
cd /
unmount_nfsx "$WORK/a"
unmount_nfsx "$WORK/b"
