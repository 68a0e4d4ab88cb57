#!/usr/bin/env bash
# libnfs-utils (nfs-ls, nfs-cp, nfs-cat: Debian's independent user-space client) against
# `nfsx serve` on a fresh export: listing, a 64 MiB copy in and out, a small cat, a 3000-entry
# directory (READDIRPLUS over many pages), and the errors for missing paths.
# shellcheck source=tests/interop/lib.sh
source "$(dirname "$0")/lib.sh"
need nfs-ls nfs-cp nfs-cat sha256sum

EXPORT=$WORK/export
make_export "$EXPORT"
printf 'hello from nfsx\nsecond line\n' >"$EXPORT/hello.txt"
mkdir "$EXPORT/many"
# Names of varying length so that READDIRPLUS pages break at different places.
xs=xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
for i in $(seq 0 2999); do
	printf -v n %04d "$i"
	echo "entry-$n${xs:0:i % 37}"
done >"$WORK/many.names"
(cd "$EXPORT/many" && xargs touch <"$WORK/many.names")
head -c 64M /dev/urandom >"$WORK/big.src"

start_nfsx nfsx "$EXPORT"

# 1. The export's root lists exactly what is on disk.
run "nfs-ls of the export root" nfs-ls "$(url "$EXPORT")"
expect_eq "$(awk '{print $NF}' "$WORK/last.out" | sort | tr '\n' ' ')" "hello.txt many " \
	"names listed in the export root"
expect_eq "$(awk '$NF == "hello.txt" {print $5}' "$WORK/last.out")" \
	"$(stat -c %s "$EXPORT/hello.txt")" "size of hello.txt in the listing"

# 2. 64 MiB in and back out: the original, the file on disk and the copy back are identical.
run "nfs-cp 64 MiB into the export" nfs-cp "$WORK/big.src" "$(url "$EXPORT/big.bin")"
run "nfs-cp 64 MiB back out" nfs-cp "$(url "$EXPORT/big.bin")" "$WORK/big.back"
want=$(sha "$WORK/big.src")
expect_eq "$(stat -c %s "$EXPORT/big.bin")" 67108864 "size on disk after nfs-cp in"
expect_eq "$(sha "$EXPORT/big.bin")" "$want" "sha256 of the file on disk"
expect_eq "$(sha "$WORK/big.back")" "$want" "sha256 of the copy back"
run "nfs-ls after the copy" nfs-ls "$(url "$EXPORT")"
expect_eq "$(awk '$NF == "big.bin" {print $5}' "$WORK/last.out")" 67108864 \
	"size of big.bin in the listing"

# 3. nfs-cat of a small file is its content, byte for byte.
nfs-cat "$(url "$EXPORT/hello.txt")" >"$WORK/hello.cat" || fail "nfs-cat hello.txt failed"
expect_eq "$(sha "$WORK/hello.cat")" "$(sha "$EXPORT/hello.txt")" "nfs-cat hello.txt content"

# 4. 3000 entries: every name once, nothing else (READDIRPLUS cookies across pages).
run "nfs-ls of a 3000-entry directory" nfs-ls "$(url "$EXPORT/many")"
awk '{print $NF}' "$WORK/last.out" | sort >"$WORK/many.listed"
sort "$WORK/many.names" >"$WORK/many.want"
expect_eq "$(wc -l <"$WORK/many.listed")" 3000 "entries listed"
expect_eq "$(sort -u "$WORK/many.listed" | wc -l)" 3000 "distinct entries listed"
cmp -s "$WORK/many.listed" "$WORK/many.want" ||
	fail "listed names differ from the names on disk: $(diff "$WORK/many.want" "$WORK/many.listed" | head -5)"
pass "listed names equal the 3000 names on disk"

# 5. Missing paths fail, with the right NFS error.
expect_fail "nfs-ls of a missing directory" "MNT3ERR_NOENT" nfs-ls "$(url "$EXPORT/missing")"
expect_fail "nfs-cat of a missing file" "NFS3ERR_NOENT" nfs-cat "$(url "$EXPORT/missing.txt")"
mkdir "$WORK/elsewhere"
expect_fail "nfs-ls of a directory outside the export" "MNT3ERR_(NOENT|ACCES)" \
	nfs-ls "$(url "$WORK/elsewhere")"

stop_nfsx
