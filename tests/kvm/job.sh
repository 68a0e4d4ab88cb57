#!/bin/bash
# Runs inside the qemu guest, in the NFS mount of an nfsx server (cwd = $NFS_MNT).
# Every check prints PASS/FAIL; the exit status is the number of failures.
fail=0
check() { if eval "$2"; then echo "PASS $1"; else echo "FAIL $1"; fail=$((fail + 1)); fi; }
set -x
dd if=/dev/urandom of=/tmp/src.bin bs=1M count=64 status=none
cp /tmp/src.bin big.bin && sync
echo 3 > /proc/sys/vm/drop_caches
check "64 MiB copied in and read back" '[ "$(sha256sum < big.bin)" = "$(sha256sum < /tmp/src.bin)" ]'
cp big.bin /tmp/back.bin
check "copied out" 'cmp -s /tmp/back.bin /tmp/src.bin'
mkdir -p tree/a/b/c tree/x
for i in $(seq 1 50); do echo "file $i" > tree/a/b/c/f$i; done
check "tree built" '[ $(find tree -type f | wc -l) -eq 50 ]'
mkdir big
for i in $(seq 1 2000); do : > big/e$i; done
echo 3 > /proc/sys/vm/drop_caches
check "2000-entry directory listed completely" '[ $(ls big | wc -l) -eq 2000 ]'
check "ls -l of it works" '[ $(ls -l big | grep -c "^-") -eq 2000 ]'
echo hello > r1 && mv r1 r2
check "rename" '[ ! -e r1 ] && [ "$(cat r2)" = hello ]'
echo over > r3 && mv r3 r2
check "rename over an existing file" '[ "$(cat r2)" = over ]'
ln r2 hard
check "hard link shares the inode" '[ $(stat -c %i r2) = $(stat -c %i hard) ] && [ $(stat -c %h r2) = 2 ]'
ln -s r2 sym
echo 3 > /proc/sys/vm/drop_caches
check "symlink" '[ "$(readlink sym)" = r2 ] && [ "$(cat sym)" = over ]'
chmod 600 r2 && touch -d "2020-01-02 03:04:05" r2
check "chmod and utimes" '[ "$(stat -c %a r2)" = 600 ] && [ "$(stat -c %Y r2)" = "$(date -d "2020-01-02 03:04:05" +%s)" ]'
truncate -s 1000000 r2
check "truncate grows" '[ $(stat -c %s r2) = 1000000 ]'
mkfifo fifo
check "mkfifo" '[ -p fifo ]'
check "mkdir of an existing dir fails" '! mkdir tree 2>/dev/null'
check "rmdir of a non-empty dir fails" '! rmdir tree 2>/dev/null'
rm -rf tree big
check "rm -rf" '[ ! -e tree ] && [ ! -e big ]'
( set +x; for i in $(seq 1 2000); do echo "line $i" >> appended; done )
check "2000 appends" '[ $(wc -l < appended) -eq 2000 ] && [ "$(tail -1 appended)" = "line 2000" ]'
df -h . | tail -1
check "statfs" 'stat -f . >/dev/null'
echo "failures: $fail"
exit $fail
