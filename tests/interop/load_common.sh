# load_common.sh - the nfsx-libnfs-load scenarios, shared by the test against nfsx
# (libnfs_load.sh) and against NFS-Ganesha (libnfs_load_ganesha.sh). Sourced after lib.sh.
#
# The caller sets LOAD_URL (the directory the files go in, as a libnfs URL) and LOAD_DIR
# (the same directory on the local disk, for the tampering checks).

[[ -x $NFSX_LIBNFS_LOAD ]] || fail "set NFSX_LIBNFS_LOAD to the nfsx-libnfs-load binary"

# json_field FILE NAME: a top-level number or boolean of the driver's JSON report.
json_field() { grep -Eo "^  \"$2\": [^,]*" "$1" | awk '{print $2}'; }

# load NAME ARGS...: runs the driver, which must succeed with every block verified; prints
# its total lines. Leaves the JSON in $WORK/NAME.json.
load() {
	local name=$1 rc=0
	shift
	"$NFSX_LIBNFS_LOAD" "$LOAD_URL" --json "$WORK/$name.json" "$@" >"$WORK/$name.out" 2>&1 || rc=$?
	grep -E '^== phase|^ all ' "$WORK/$name.out" | sed "s/^/[$TEST_NAME]   /"
	if ((rc != 0)); then
		cat "$WORK/$name.out" >&2
		fail "nfsx-libnfs-load $*: exit status $rc"
	fi
	expect_eq "$(json_field "$WORK/$name.json" ok)" true "$name: JSON says ok"
	expect_eq "$(json_field "$WORK/$name.json" mismatches)" 0 "$name: mismatches"
}

# load_must_fail NAME PATTERN ARGS...: the driver must exit 1 and report PATTERN.
load_must_fail() {
	local name=$1 pattern=$2 rc=0
	shift 2
	"$NFSX_LIBNFS_LOAD" "$LOAD_URL" --json "$WORK/$name.json" "$@" >"$WORK/$name.out" 2>&1 || rc=$?
	expect_eq "$rc" 1 "$name: exit status of a run that must find damage"
	grep -Eq -- "$pattern" "$WORK/$name.out" ||
		{ cat "$WORK/$name.out" >&2; fail "$name: no '$pattern' in the report"; }
	pass "$name: reported '$(grep -Eo -- "$pattern" "$WORK/$name.out" | head -n 1)'"
}

# run_load_scenarios: what both servers must pass. About 15 s on 2 cores.
run_load_scenarios() {
	local jobs=4 depth=16

	note "4 KiB blocks: sequential write with COMMIT, then verify every block"
	load seq4k --jobs $jobs --depth $depth --bs 4k --size 8m --create --fsync --mode write,verify \
		--state "$WORK/seq4k.state"
	expect_eq "$(json_field "$WORK/seq4k.json" writes)" $((jobs * 2048)) "seq4k: blocks written"
	expect_eq "$(json_field "$WORK/seq4k.json" reads_verified)" $((jobs * 2048)) \
		"seq4k: blocks read and verified"
	for j in 0 1 2 3; do
		expect_eq "$(stat -c %s "$LOAD_DIR/job-$j.dat")" 8388608 "size of job-$j.dat on disk"
	done

	note "4 KiB blocks: random writes (leaving holes), then verify, through a state file"
	load rand4k --jobs $jobs --depth $depth --bs 4k --size 8m --create --seconds 2 \
		--mode randwrite --state "$WORK/rand4k.state"
	load rand4k-read --jobs $jobs --depth $depth --bs 4k --size 8m --seconds 2 \
		--mode randread,verify --state "$WORK/rand4k.state"
	expect_eq "$(json_field "$WORK/rand4k-read.json" writes)" 0 "rand4k-read: no writes"

	note "1 MiB blocks: sequential write + verify, then random write, random read, verify"
	load seq1m --jobs $jobs --depth 4 --bs 1m --size 32m --create --fsync --mode write,verify
	expect_eq "$(json_field "$WORK/seq1m.json" reads_verified)" $((jobs * 32)) \
		"seq1m: blocks read and verified"
	load rand1m --jobs $jobs --depth 4 --bs 1m --size 32m --seconds 1.5 --fsync \
		--mode randwrite,randread,verify

	note "one shared file: 4 connections, random 70/30 read/write mix, then verify"
	load shared --jobs $jobs --depth $depth --bs 4k --size 8m --create --shared --seconds 2 \
		--mixed 0.7 --mode randrw,verify

}

# run_damage_scenario: right after run_load_scenarios' seq4k files are rewritten by
# seq4k again, damage them on the local disk behind the server and require the driver to
# find exactly that damage. Proves the verifier can fail; needs a server that does not cache
# data or attributes (nfsx), so it is not run against Ganesha.
run_damage_scenario() {
	local jobs=4 depth=16
	note "the verifier must catch damage done behind the server's back"
	load seq4k-again --jobs $jobs --depth $depth --bs 4k --size 8m --create --mode write \
		--state "$WORK/seq4k.state"
	# Block 7 of job-1.dat becomes a copy of block 3; one byte of block 20 of job-2.dat
	# flips; job-3.dat loses its second half.
	dd if="$LOAD_DIR/job-1.dat" of="$LOAD_DIR/job-1.dat" bs=4096 skip=3 seek=7 count=1 \
		conv=notrunc status=none
	printf '\xff' | dd of="$LOAD_DIR/job-2.dat" bs=1 seek=$((20 * 4096 + 1000)) conv=notrunc \
		status=none
	truncate -s 4M "$LOAD_DIR/job-3.dat"
	load_must_fail damaged "job-1.dat offset 28672: block of another offset" \
		--jobs $jobs --depth $depth --bs 4k --size 8m --mode verify --state "$WORK/seq4k.state"
	local out=$WORK/damaged.out
	grep -q "job-2.dat offset 81920: checksum mismatch" "$out" ||
		fail "damaged: the flipped byte in block 20 of job-2.dat was not reported"
	pass "damaged: flipped byte reported at job-2.dat offset 81920"
	grep -q "job-3.dat: size is 4194304 bytes, but the writes end at 8388608" "$out" ||
		fail "damaged: the truncation of job-3.dat was not reported"
	pass "damaged: size of the truncated job-3.dat reported"
	# 1 + 1 + 1024 blocks past the new end of job-3.dat + 1 size finding.
	expect_eq "$(json_field "$WORK/damaged.json" mismatches)" 1027 "damaged: mismatches counted"
	expect_eq "$(json_field "$WORK/damaged.json" reads_verified)" $((jobs * 2048)) \
		"damaged: blocks read"
}
