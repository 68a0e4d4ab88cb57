#!/usr/bin/env bash
# nfsx mkdir [-p], mv and rm [-r] [-f] against `nfsx serve`, checked on the exported disk.
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh"
need stat

serve nfsx
mkdir -p "$EXPORT/tree/a/b" "$EXPORT/tree/c"
for f in tree/top tree/a/one tree/a/b/two tree/c/three; do echo "$f" >"$EXPORT/$f"; done
ln -s a/one "$EXPORT/tree/link"
echo moved >"$EXPORT/f1"
mkdir -p "$EXPORT/src/deep" "$EXPORT/dst"
echo deep >"$EXPORT/src/deep/file"
squash_owner "$EXPORT"/*

# mkdir
out "mkdir" "$NFSX" mkdir "$(u newdir)"
expect_eq "$(stat -c '%F %a' "$EXPORT/newdir")" "directory 755" "new directory (umask 022)"
out "mkdir of two directories" "$NFSX" mkdir "$(u m1)" "$(u m2)"
[[ -d $EXPORT/m1 && -d $EXPORT/m2 ]] || fail "mkdir of two directories: not both made"
pass "mkdir of two directories made both"
fails "mkdir of an existing directory" 1 "nfsx mkdir: $(u newdir): File exists" \
	"$NFSX" mkdir "$(u newdir)"
fails "mkdir without its parent" 1 "nfsx mkdir: $(u no/such/dir): No such file or directory" \
	"$NFSX" mkdir "$(u no/such/dir)"
out "mkdir -p" "$NFSX" mkdir -p "$(u p/q/r)"
expect_eq "$(stat -c '%F %a' "$EXPORT/p" "$EXPORT/p/q" "$EXPORT/p/q/r" | tr '\n' ' ')" \
	"directory 755 directory 755 directory 755 " "directories made by mkdir -p"
out "mkdir -p of existing directories" "$NFSX" mkdir -p "$(u p/q/r)" "$(u p)" "$(u)"
expect_eq "$(cat "$WORK/err")" "" "stderr of mkdir -p of existing directories"
fails "mkdir -p through a file" 1 "nfsx mkdir: $(u f1/x): Not a directory" \
	"$NFSX" mkdir -p "$(u f1/x)"

# mv
ino=$(stat -c %i "$EXPORT/f1")
out "mv to a new name" "$NFSX" mv "$(u f1)" "$(u f2)"
[[ ! -e $EXPORT/f1 ]] || fail "mv: the old name is still there"
expect_eq "$(cat "$EXPORT/f2") $(stat -c %i "$EXPORT/f2")" "moved $ino" "content and inode after mv"
out "mv into a directory" "$NFSX" mv "$(u f2)" "$(u newdir)"
expect_eq "$(cat "$EXPORT/newdir/f2")" moved "file moved into the directory"
out "mv between distant directories" "$NFSX" mv "$(u src/deep/file)" "$(u dst/renamed)"
expect_eq "$(cat "$EXPORT/dst/renamed")" deep "file moved from src/deep to dst"
[[ ! -e $EXPORT/src/deep/file ]] || fail "mv between directories left the source"
out "mv of a directory" "$NFSX" mv "$(u p)" "$(u p2)"
[[ -d $EXPORT/p2/q/r && ! -e $EXPORT/p ]] || fail "mv of a directory: p2/q/r missing or p left"
pass "mv of a directory renamed the whole subtree"
out "mv of two files into a directory" "$NFSX" mv "$(u m1)" "$(u m2)" "$(u dst)"
[[ -d $EXPORT/dst/m1 && -d $EXPORT/dst/m2 ]] || fail "mv of two: not both in dst"
pass "mv of two into a directory"
fails "mv of a missing file" 1 \
	"nfsx mv: cannot move '$(u missing)' to '$(u x)': No such file or directory" \
	"$NFSX" mv "$(u missing)" "$(u x)"

# rm
out "rm of a file" "$NFSX" rm "$(u tree/top)"
[[ ! -e $EXPORT/tree/top ]] || fail "rm left the file"
pass "rm removed the file"
fails "rm of a directory without -r" 1 "nfsx rm: $(u tree/c): Is a directory" \
	"$NFSX" rm "$(u tree/c)"
[[ -d $EXPORT/tree/c ]] || fail "rm without -r removed a directory"
out "rm of a symlink" "$NFSX" rm "$(u tree/link)"
[[ ! -L $EXPORT/tree/link && -f $EXPORT/tree/a/one ]] || fail "rm of a symlink: link left or target gone"
pass "rm of a symlink removed the link, not its target"
out "rm -r" "$NFSX" rm -r "$(u tree)"
[[ ! -e $EXPORT/tree ]] || fail "rm -r left $(find "$EXPORT/tree" | head -3)"
pass "rm -r removed the tree"
fails "rm of a missing file" 1 "nfsx rm: $(u tree): No such file or directory" \
	"$NFSX" rm "$(u tree)"
fails "rm -f of a missing file" 0 "" "$NFSX" rm -f "$(u tree)" "$(u nothing/here)"
mkdir "$EXPORT/keep"
fails "rm -r of the export root" 1 "nfsx rm: $(u): is the root of an export" \
	"$NFSX" rm -r "$(u)"
dots="nfs://127.0.0.1$EXPORT/keep/..?$QUERY"
fails "rm -r of .." 1 "nfsx rm: $dots: refusing to remove '.' or '..'" "$NFSX" rm -r "$dots"
[[ -d $EXPORT/keep ]] || fail "rm -r of the export root removed something"
pass "rm -r of the export root removed nothing"

stop_nfsx
