#!/usr/bin/env bash
# nfsx ls, cat and stat against `nfsx serve`: a 1500-entry directory listed exactly, the
# fields of ls -l, ls -a and -R, cat byte for byte, stat's fields against the file on disk.
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh"
need stat cmp

serve nfsx
# Names of varying length, so that READDIRPLUS replies end at different places.
mkdir "$EXPORT/many"
xs=xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
for i in $(seq 0 1499); do
	printf -v n %04d "$i"
	echo "f$n${xs:0:i % 43}"
done >"$WORK/many.names"
(cd "$EXPORT/many" && xargs touch <"$WORK/many.names")
touch "$EXPORT/many/.hidden"

mkdir -p "$EXPORT/fields/d"
printf 'abc' >"$EXPORT/fields/meta"
chmod 0640 "$EXPORT/fields/meta"
chmod 0750 "$EXPORT/fields/d"
chown 1234:5678 "$EXPORT/fields/meta"
ln -s meta "$EXPORT/fields/ln"
touch -d '2021-03-04 05:06:07.123456789' "$EXPORT/fields/meta"
touch -a -d '2020-01-02 03:04:05.000000042' "$EXPORT/fields/meta"

mkdir -p "$EXPORT/r/s/t"
touch "$EXPORT/r/x" "$EXPORT/r/s/y" "$EXPORT/r/s/t/z"

printf 'hello from nfsx\nsecond line\n' >"$EXPORT/hello.txt"
head -c 3000001 /dev/urandom >"$EXPORT/random.bin"
ln -s hello.txt "$EXPORT/hello.link"

# 1. 1500 entries: exactly the names on disk, sorted, the dot file only with -a.
out "ls of a 1500-entry directory" "$NFSX" ls "$(u many)"
expect_eq "$(wc -l <"$WORK/out")" 1500 "entries listed"
LC_ALL=C sort "$WORK/many.names" >"$WORK/many.want"
cmp -s "$WORK/out" "$WORK/many.want" ||
	fail "listing differs from the names on disk (or is not sorted): $(diff "$WORK/many.want" "$WORK/out" | head -5)"
pass "listing is the 1500 names on disk, sorted"
out "ls -a" "$NFSX" ls -a "$(u many)"
expect_eq "$(wc -l <"$WORK/out")" 1503 "entries listed with -a (., .., .hidden and 1500)"
expect_eq "$(head -n 3 "$WORK/out" | tr '\n' ' ')" ". .. .hidden " "first names with -a"

# 2. ls -l: every field of each line.
out "ls -l" "$NFSX" ls -l "$(u fields)"
expect_eq "$(wc -l <"$WORK/out")" 3 "lines of ls -l"
dsize=$(stat -c %s "$EXPORT/fields/d")
dlinks=$(stat -c %h "$EXPORT/fields/d")
read -r -a f < <(grep ' d$' "$WORK/out")
expect_eq "${f[*]:0:5} ${f[7]}" "drwxr-x--- $dlinks 0 0 $dsize d" "ls -l fields of the directory"
read -r -a f < <(grep '^-' "$WORK/out")
expect_eq "${f[*]}" "-rw-r----- 1 1234 5678 3 2021-03-04 05:06 meta" "ls -l fields of the file"
read -r -a f < <(grep ' ln -> meta$' "$WORK/out")
expect_eq "${f[0]} ${f[1]} ${f[4]} ${f[*]:7}" "lrwxrwxrwx 1 4 ln -> meta" "ls -l fields of the symlink"
out "ls -l of a file URL" "$NFSX" ls -l "$(u fields/meta)"
expect_eq "$(cat "$WORK/out")" "-rw-r----- 1 1234 5678 3 2021-03-04 05:06 $(u fields/meta)" \
	"ls -l of one file"

# 3. ls -R: each directory under its URL, files and directories sorted.
out "ls -R" "$NFSX" ls -R "$(u r)"
want="$(u r):
s
x

nfs://127.0.0.1$EXPORT/r/s?$QUERY:
t
y

nfs://127.0.0.1$EXPORT/r/s/t?$QUERY:
z"
expect_eq "$(cat "$WORK/out")" "$want" "ls -R output"
out "ls of a file and a directory" "$NFSX" ls "$(u hello.txt)" "$(u r/s)"
expect_eq "$(cat "$WORK/out")" "$(u hello.txt)

$(u r/s):
t
y" "ls of a file and a directory (files first, then headed directories)"

# 4. cat: exact bytes, several files in order, through a symlink.
"$NFSX" cat "$(u hello.txt)" >"$WORK/hello.cat" || fail "cat hello.txt failed"
cmp "$WORK/hello.cat" "$EXPORT/hello.txt" || fail "cat hello.txt: bytes differ"
pass "cat hello.txt: bytes equal the file on disk"
"$NFSX" cat "$(u random.bin)" >"$WORK/random.cat" || fail "cat random.bin failed"
expect_eq "$(sha "$WORK/random.cat")" "$(sha "$EXPORT/random.bin")" "cat of 3000001 random bytes"
"$NFSX" cat "$(u hello.txt)" "$(u random.bin)" "$(u hello.link)" >"$WORK/three.cat" ||
	fail "cat of three files failed"
cat "$EXPORT/hello.txt" "$EXPORT/random.bin" "$EXPORT/hello.txt" >"$WORK/three.want"
expect_eq "$(sha "$WORK/three.cat")" "$(sha "$WORK/three.want")" "cat of three files, in order"

# 5. stat: stat(1)'s fields, against the file on disk.
meta=$EXPORT/fields/meta
out "stat of a file" "$NFSX" stat "$(u fields/meta)"
expect_eq "$(sed -n 1p "$WORK/out")" "  File: $(u fields/meta)" "stat File line"
read -r -a f < <(sed -n 2p "$WORK/out")
expect_eq "${f[*]}" "Size: 3 Blocks: $(stat -c %b "$meta") regular file" "stat Size line"
expect_eq "$(sed -n 3p "$WORK/out" | awk '{print $3, $4, $5, $6}')" \
	"Inode: $(stat -c %i "$meta") Links: 1" "stat Inode and Links"
expect_eq "$(sed -n 4p "$WORK/out")" "Access: (0640/-rw-r-----)  Uid: ( 1234)   Gid: ( 5678)" \
	"stat Access/Uid/Gid line"
expect_eq "$(sed -n 5p "$WORK/out")" "Access: 2020-01-02 03:04:05.000000042 +0000" "stat atime"
expect_eq "$(sed -n 6p "$WORK/out")" "Modify: 2021-03-04 05:06:07.123456789 +0000" "stat mtime"
expect_eq "$(sed -n 7p "$WORK/out")" "Change: $(stat -c %z "$meta")" "stat ctime"
expect_eq "$(wc -l <"$WORK/out")" 7 "lines of stat"
out "stat of a symlink and a directory" "$NFSX" stat "$(u fields/ln)" "$(u fields/d)"
expect_eq "$(grep -c '^  File: ' "$WORK/out")" 2 "stat reports"
expect_eq "$(sed -n 1p "$WORK/out")" "  File: $(u fields/ln) -> meta" "stat File line of a symlink"
expect_eq "$(sed -n 2p "$WORK/out" | awk '{print $NF, $(NF-1)}')" "link symbolic" \
	"stat type of a symlink"
expect_eq "$(sed -n 9p "$WORK/out" | awk '{print $NF}')" "directory" "stat type of a directory"
expect_eq "$(sed -n 11p "$WORK/out")" "Access: (0750/drwxr-x---)  Uid: (    0)   Gid: (    0)" \
	"stat Access line of a directory"
out "stat -L follows the symlink" "$NFSX" stat -L "$(u fields/ln)"
expect_eq "$(sed -n 2p "$WORK/out" | awk '{print $2}')" 3 "size seen through the symlink"

stop_nfsx
