#!/usr/bin/env bash
# bench/compare.sh - the seeds' workloads side by side, in one run, on this machine, over one
# export directory:
#
#   servers  nfsx serve vs NFS-Ganesha (VFS export of the same directory), driven by the
#            same clients: the nfsx client library and Debian's libnfs
#   clients  nfsx vs libnfs against the nfsx server; path: on an `nfsx mount` if it works
#   limits   path: on the local filesystem (no NFS), raw loopback TCP round trips (ping)
#
# Usage: bench/compare.sh [--full | --quick | --randread | --scaling] [--repeat N] [--baseline DIR]
#                         [--out DIR] [--keep] [BUILD_DIR]
#   (default)  short sizes, a few minutes on 2 cores
#   --full     the issue's sizes: iozone 128 MiB files (seed 004), 12 x 1 GiB writers
#              (seed 003), 10,000 appends (seed 001); tens of minutes, ~13 GiB of disk
#   --quick    tiny sizes: checks that the script works, the figures mean little
#   --randread only seed 002's case: 4 KiB random reads of one cached file, 1/2/4/8 threads,
#              through the library, through the mount and on the local filesystem (path:);
#              written to DATE-HOST-randread.md
#   --scaling  each server confined to 1 CPU and to 2 CPUs (taskset; the nfsx server then runs
#              one event loop per CPU it may use, Ganesha its default threads), 4 KiB and
#              1 MiB random O_DIRECT reads and writes with 1 to 16 in flight from libnfs (on
#              the other CPU when the server has one): ops/s and the server's CPU time per
#              op, in DATE-HOST-scaling.md
#   --baseline DIR  also run the client side (library and mount) of the nfsx built in DIR, for
#              before/after figures in one run (systems base+nfsx and base-mount)
#   --repeat N run every case N times, round after round, and report medians (noisy machines)
#   --out DIR  where the results go (default bench/results): DATE-HOST.md and DATE-HOST.png
#   --keep     keep the run directory (every JSON, logs, profiles)
#
# Needs: a built nfsx (make build), root for Ganesha's VFS FSAL (else Ganesha is skipped
# with a note), gnuplot for the plot, valgrind (or perf with hardware counters) for the
# profiles of missed targets.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
MODE=default
OUT_DIR=$ROOT/bench/results
KEEP=0
REPEAT=1
BUILD=$ROOT/build
BASE_BUILD=
while (($#)); do
	case $1 in
		--full) MODE=full ;;
		--quick) MODE=quick ;;
		--randread) MODE=randread ;;
		--baseline) BASE_BUILD=$(cd "$2" && pwd); shift ;;
		--out) OUT_DIR=$2; shift ;;
		--keep) KEEP=1 ;;
		--repeat) REPEAT=$2; shift ;;
		--scaling) MODE=scaling ;;
		-h|--help) sed -n '2,34p' "$0"; exit 0 ;;
		-*) echo "compare.sh: unknown option $1" >&2; exit 2 ;;
		*) BUILD=$(cd "$1" && pwd) ;;
	esac
	shift
done
NFSX=$BUILD/apps/nfsx/nfsx
[[ -x $NFSX ]] || { echo "compare.sh: no $NFSX: build first (make build)" >&2; exit 2; }
BASE_NFSX=
if [[ -n $BASE_BUILD ]]; then
	BASE_NFSX=$BASE_BUILD/apps/nfsx/nfsx
	[[ -x $BASE_NFSX ]] || { echo "compare.sh: no $BASE_NFSX" >&2; exit 2; }
fi
GANESHA_SH=$ROOT/tests/peers/ganesha.sh

# Sizes per mode. Each case is `nfsx bench` arguments; the driver and URL are added per system.
case $MODE in
	full)
		IOZ_SIZE=128m IOZ_RECORDS=1k-16m BUF_RECORDS=1k-16m
		TP="--threads 12 --size 1g" APPENDS=10000 RR="--size 256m --seconds 5" PING_OPS=50000 ;;
	quick)
		IOZ_SIZE=1m IOZ_RECORDS=4k,64k,1m BUF_RECORDS=4k,1m
		TP="--threads 2 --size 4m" APPENDS=100 RR="--size 4m --seconds 0.5" PING_OPS=1000 ;;
	randread)
		IOZ_SIZE=- IOZ_RECORDS=- BUF_RECORDS=- TP=- APPENDS=- PING_OPS=-
		RR="--size 64m --seconds 2" ;;
	scaling)
		IOZ_SIZE=- IOZ_RECORDS=- BUF_RECORDS=- TP=- APPENDS=- PING_OPS=-
		RR="--size 64m --seconds 3" ;;
	*)
		IOZ_SIZE=16m IOZ_RECORDS=1k-16m BUF_RECORDS=4k,64k,1m
		TP="--threads 12 --size 16m" APPENDS=1000 RR="--size 64m --seconds 2" PING_OPS=20000 ;;
esac
declare -A CASES=(
	[iozone-direct]="iozone --direct --size $IOZ_SIZE --record $IOZ_RECORDS"
	[iozone]="iozone --size $IOZ_SIZE --record $BUF_RECORDS"
	[throughput]="throughput $TP --record 256k --direct"
	[append]="append --ops $APPENDS --record 256"
	[randread]="randread $RR --threads 1,2,4,8"
	[randread-direct]="randread --direct $RR --threads 1,16"
	[randwrite]="randwrite $RR --threads 1,16"
	[ping]="ping --ops $PING_OPS --depth 16"
)
CASE_ORDER=(iozone-direct iozone throughput append randread randread-direct randwrite ping)
[[ $MODE == randread ]] && CASE_ORDER=(randread)
if [[ $MODE == scaling ]]; then
	CASES[randread-direct]="randread --direct $RR --threads 1,4,16"
	CASES[randwrite]="randwrite $RR --threads 1,4,16"
	CASES[randread-direct-1m]="randread --direct $RR --record 1m --threads 1,4"
	CASES[randwrite-1m]="randwrite $RR --record 1m --threads 1,4"
	CASE_ORDER=(randread-direct randwrite randread-direct-1m randwrite-1m)
fi
# Reduced sizes for the profiles of missed targets (under valgrind everything is ~50x slower).
declare -A PROFILE_CASES=(
	[iozone-direct]="iozone --direct --size 2m --record 4k,1m"
	[iozone]="iozone --size 2m --record 4k,1m"
	[throughput]="throughput --threads 2 --size 4m --record 256k --direct"
	[append]="append --ops 200 --record 256"
	[randread]="randread --size 8m --seconds 3 --threads 4"
	[randread-direct]="randread --direct --size 8m --seconds 3 --threads 16"
	[randwrite]="randwrite --size 8m --seconds 3 --threads 16"
	[ping]="ping --ops 3000 --depth 16"
)

DATE=$(date +%Y-%m-%d)
HOST=$(hostname -s 2>/dev/null || hostname)
RUN=$(mktemp -d "${TMPDIR:-/tmp}/nfsx-compare-XXXXXX")
EXPORT=$RUN/export
mkdir -p "$EXPORT" "$RUN/logs" "$OUT_DIR"
chmod 1777 "$EXPORT"  # the nfsx server squashes root to 65534, Ganesha does not
NOTES=$RUN/notes.txt
: >"$NOTES"
: >"$RUN/systems.tsv"
: >"$RUN/meta.tsv"
note() { echo "$*" >>"$NOTES"; echo "compare.sh: note: $*" >&2; }
meta() { printf '%s\t%s\n' "$1" "$2" >>"$RUN/meta.tsv"; }
START=$(date +%s)

NFSX_PID= GANESHA_PID= MNT= BASE_MNT=
EXTRA_NFSX_PIDS=() EXTRA_GANESHA_PIDS=()
cleanup() {
	set +e
	for p in "${EXTRA_NFSX_PIDS[@]}"; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
	for p in "${EXTRA_GANESHA_PIDS[@]}"; do "$GANESHA_SH" stop "$p"; done
	for m in "$MNT" "$BASE_MNT"; do
		[[ -n $m ]] && mountpoint -q "$m" && { fusermount3 -u "$m" || fusermount3 -uz "$m"; }
	done
	[[ -n $NFSX_PID ]] && kill "$NFSX_PID" 2>/dev/null && wait "$NFSX_PID" 2>/dev/null
	[[ -n $GANESHA_PID ]] && "$GANESHA_SH" stop "$GANESHA_PID"
	if ((KEEP)); then echo "compare.sh: run directory kept: $RUN" >&2; else rm -rf "$RUN"; fi
}
trap cleanup EXIT

# start_nfsx DIR STATE PORTS_FILE [wrapper...]: `nfsx serve` on free ports, with the options in
# the array SERVE_EXTRA if set; sets SERVE_PID.
SERVE_EXTRA=()
start_nfsx() {
	local dir=$1 state=$2 ports=$3
	shift 3
	rm -f "$ports"
	"$@" "$NFSX" serve "$dir" --port 0 --mount-port 0 --state-dir "$state" \
		--ports-file "$ports" "${SERVE_EXTRA[@]}" >"$RUN/logs/$(basename "$ports").log" 2>&1 &
	SERVE_PID=$!
	for _ in $(seq 600); do
		[[ -s $ports ]] && return 0
		kill -0 "$SERVE_PID" 2>/dev/null || break
		sleep 0.1
	done
	echo "compare.sh: nfsx serve did not start; see $RUN/logs" >&2
	kill "$SERVE_PID" 2>/dev/null || true  # not left running if it was only slow
	return 1
}
url_of() { # PORTS_FILE PATH
	local p m
	read -r p m _ <"$1"
	echo "nfs://127.0.0.1$2?version=3&nfsport=$p&mountport=$m"
}

start_nfsx "$EXPORT" "$RUN/state-nfsx" "$RUN/nfsx.ports"
NFSX_PID=$SERVE_PID
URL_NFSX=$(url_of "$RUN/nfsx.ports" "$EXPORT")

URL_GANESHA=
if [[ $MODE == randread || $MODE == scaling ]]; then
	: # randread: the client's cache only, Ganesha adds nothing; scaling starts its own
elif why=$("$GANESHA_SH" check 2>&1); then
	if started=$("$GANESHA_SH" start "$EXPORT" "$RUN/ganesha" 2>"$RUN/logs/ganesha.log"); then
		read -r GANESHA_PID gport gmport <<<"$started"
		URL_GANESHA="nfs://127.0.0.1/vfs?version=3&nfsport=$gport&mountport=$gmport"
	else
		note "NFS-Ganesha did not start ($(tail -1 "$RUN/logs/ganesha.log")): no Ganesha columns"
	fi
else
	note "NFS-Ganesha skipped: ${why##*SKIP: }"
fi

HAVE_LIBNFS=1
if [[ $MODE == randread ]]; then
	HAVE_LIBNFS=0 # libnfs has no cache: it would measure the server
elif ! "$NFSX" bench ping --driver libnfs --ops 10 -q --url "$URL_NFSX" >/dev/null \
	2>"$RUN/logs/libnfs.log"; then
	HAVE_LIBNFS=0
	note "libnfs driver unavailable ($(tail -1 "$RUN/logs/libnfs.log")): no libnfs columns"
fi

# The FUSE mount is optional: used when `nfsx mount` exists and mounts here.
# (`nfsx mount --help` of a build without the mount prints the main help: look for its own.)
if [[ $MODE == scaling ]]; then
	: # servers only: no mount
elif "$NFSX" mount --help 2>/dev/null | grep -qi mountpoint && command -v fusermount3 >/dev/null &&
	[[ -e /dev/fuse ]]; then
	MNT=$RUN/mnt
	mkdir -p "$MNT"
	if ! timeout 60 "$NFSX" mount "$URL_NFSX" "$MNT" >"$RUN/logs/mount.log" 2>&1 ||
		! mountpoint -q "$MNT"; then
		note "nfsx mount failed here ($(tail -1 "$RUN/logs/mount.log")): no nfsx-mount column"
		MNT=
	fi
else
	note "nfsx mount is not in this build (or no /dev/fuse or fusermount3): no nfsx-mount column"
fi
if [[ -n $BASE_NFSX && -n $MNT ]]; then
	BASE_MNT=$RUN/base-mnt
	mkdir -p "$BASE_MNT"
	if ! timeout 60 "$BASE_NFSX" mount "$URL_NFSX" "$BASE_MNT" >"$RUN/logs/base-mount.log" 2>&1 ||
		! mountpoint -q "$BASE_MNT"; then
		note "the baseline's nfsx mount failed ($(tail -1 "$RUN/logs/base-mount.log")): no base-mount column"
		BASE_MNT=
	fi
fi

# system id, description, driver, url, cases[, nfsx binary that runs the bench[, the server's
# pid (its CPU time per op is measured)[, the CPUs the bench runs on (taskset)]]]
SYSTEMS=()
add_system() {
	SYSTEMS+=("$1|$3|$4|$5|${6:-$NFSX}|${7:-}|${8:-}")
	printf '%s\t%s\n' "$1" "$2" >>"$RUN/systems.tsv"
}
ALL="${CASE_ORDER[*]}"
PATHCASES="iozone-direct iozone throughput append randread randread-direct randwrite"
[[ $MODE == randread ]] && PATHCASES=randread
BASE_REV=
if [[ $MODE == scaling ]]; then
	((HAVE_LIBNFS)) || { echo "compare.sh: --scaling needs the libnfs driver" >&2; exit 2; }
	"$GANESHA_SH" check >/dev/null 2>&1 || note "NFS-Ganesha skipped: $("$GANESHA_SH" check 2>&1 | tail -1)"
	LAST_CPU=$(($(nproc) - 1))
	meta fairness "each server is confined to its CPUs with taskset (every thread of it); the nfsx server runs one event loop per CPU it may use (its default), Ganesha its default threads, and \`nfsx-2cpu-1loop\` is the nfsx server on 2 CPUs with one event loop (which of the two a second CPU helps); the client is libnfs for all (one connection per thread), on a CPU of its own when the server has one CPU and sharing both otherwise; the server's CPU time per operation is read from /proc/PID/stat around each point."
	for cpus in 1 2; do
		((cpus <= $(nproc))) || { note "only $(nproc) CPU(s): no $cpus-CPU systems"; continue; }
		set_cpus="0-$((cpus - 1))"
		cpu_words="CPUs $set_cpus"
		((cpus == 1)) && cpu_words="CPU 0"
		# With one CPU for the server, the client gets another; with all of them, it shares.
		client_cpus=
		((cpus < $(nproc))) && client_cpus=$LAST_CPU
		start_nfsx "$EXPORT" "$RUN/state-nfsx-$cpus" "$RUN/nfsx-$cpus.ports" taskset -c "$set_cpus"
		EXTRA_NFSX_PIDS+=("$SERVE_PID")
		add_system "nfsx-${cpus}cpu+libnfs" \
			"nfsx server on $cpu_words (taskset; one event loop per CPU), libnfs client$([[ -n $client_cpus ]] && echo " on CPU $client_cpus")" \
			libnfs "$(url_of "$RUN/nfsx-$cpus.ports" "$EXPORT")" "$ALL" "$NFSX" "$SERVE_PID" "$client_cpus"
		if ((cpus == 2)); then
			SERVE_EXTRA=(--threads 1)
			start_nfsx "$EXPORT" "$RUN/state-nfsx-1loop" "$RUN/nfsx-1loop.ports" taskset -c "$set_cpus"
			SERVE_EXTRA=()
			EXTRA_NFSX_PIDS+=("$SERVE_PID")
			add_system "nfsx-2cpu-1loop+libnfs" \
				"nfsx server on $cpu_words with one event loop (--threads 1), libnfs client" \
				libnfs "$(url_of "$RUN/nfsx-1loop.ports" "$EXPORT")" "$ALL" "$NFSX" "$SERVE_PID" \
				"$client_cpus"
		fi
		if "$GANESHA_SH" check >/dev/null 2>&1 &&
			started=$("$GANESHA_SH" start "$EXPORT" "$RUN/ganesha-$cpus" 2>>"$RUN/logs/ganesha.log"); then
			read -r gpid gport gmport <<<"$started"
			EXTRA_GANESHA_PIDS+=("$gpid")
			taskset -a -p -c "$set_cpus" "$gpid" >/dev/null
			add_system "ganesha-${cpus}cpu+libnfs" \
				"NFS-Ganesha 4.3 on $cpu_words (taskset, every thread; its default thread counts), libnfs client$([[ -n $client_cpus ]] && echo " on CPU $client_cpus")" \
				libnfs "nfs://127.0.0.1/vfs?version=3&nfsport=$gport&mountport=$gmport" "$ALL" \
				"$NFSX" "$gpid" "$client_cpus"
		fi
	done
else
add_system nfsx+nfsx "nfsx server, nfsx client library (the subject)" nfsx "$URL_NFSX" "$ALL" \
	"$NFSX" "$NFSX_PID"
# The libnfs driver gives every thread a context of its own, so one TCP connection per thread;
# the nfsx client shares one Client (nconnect=1 by default) between threads. The threaded
# cases run a second time with nconnect set to the case's thread count, so that both
# clients are also compared with as many connections (@NCONNECT@ is replaced per case).
# (Not in --randread: it runs none of those cases.)
[[ $MODE != randread ]] && add_system nfsx+nfsx-nc \
	"nfsx server, nfsx client library with nconnect = the case's thread count (as libnfs's connection per thread)" \
	nfsx "$URL_NFSX&nconnect=@NCONNECT@" "throughput randread-direct randwrite" "$NFSX" "$NFSX_PID"
[[ -n $URL_GANESHA ]] && add_system ganesha+nfsx \
	"NFS-Ganesha 4.3 (FSAL_VFS, same directory), nfsx client" nfsx "$URL_GANESHA" "$ALL" \
	"$NFSX" "$GANESHA_PID"
((HAVE_LIBNFS)) &&
	add_system nfsx+libnfs "nfsx server, libnfs 4.0 client (Debian)" libnfs "$URL_NFSX" "$ALL" \
		"$NFSX" "$NFSX_PID"
[[ -n $URL_GANESHA ]] && ((HAVE_LIBNFS)) &&
	add_system ganesha+libnfs "NFS-Ganesha 4.3, libnfs 4.0 client" libnfs "$URL_GANESHA" "$ALL" \
		"$NFSX" "$GANESHA_PID"
[[ -n $MNT ]] && add_system nfsx-mount \
	"POSIX calls on \`nfsx mount\` of the nfsx server (FUSE)" "path:$MNT" "" "$PATHCASES"
if [[ -n $BASE_NFSX ]]; then
	BASE_REV=$(git -C "$BASE_BUILD" rev-parse --short HEAD 2>/dev/null || basename "$(dirname "$BASE_BUILD")")
	add_system base+nfsx "baseline ($BASE_REV) nfsx client library, same nfsx server" nfsx \
		"$URL_NFSX" "$ALL" "$BASE_NFSX"
	[[ -n $BASE_MNT ]] && add_system base-mount \
		"POSIX calls on the baseline's ($BASE_REV) \`nfsx mount\` of the same server" \
		"path:$BASE_MNT" "" "$PATHCASES" "$BASE_NFSX"
fi
mkdir -p "$EXPORT/local"
chmod 1777 "$EXPORT/local"
add_system local "POSIX calls on the local filesystem (the export directory): no NFS" \
	"path:$EXPORT/local" "" "$PATHCASES"
fi

meta date "$DATE"
meta host "$HOST"
meta cpus "$(nproc)"
meta kernel "$(uname -sr)"
meta load_before "$(cut -d' ' -f1-3 /proc/loadavg)"
meta mode "$MODE"
meta repeat "$REPEAT"
meta command "bench/compare.sh$([[ $MODE != default ]] && echo " --$MODE")$( ((REPEAT > 1)) && echo " --repeat $REPEAT")$([[ -n $BASE_REV ]] && echo " --baseline DIR")"
[[ -n $BASE_REV ]] && meta baseline "$BASE_REV"
[[ $MODE == randread || $MODE == scaling ]] && meta sizes "random ${RR}" ||
	meta sizes "iozone ${IOZ_SIZE} files, records ${IOZ_RECORDS} (buffered: ${BUF_RECORDS}); throughput ${TP}; ${APPENDS} appends; random ${RR}; ${PING_OPS} pings"
meta plot "$DATE-$HOST.png"
for c in "${CASE_ORDER[@]}"; do meta "cmd:$c" "${CASES[$c]}"; done

# The most threads a case's arguments ask for (the default of 1 when they name none).
max_threads() {
	local t
	t=$(grep -oE -- '--threads [0-9,]+' <<<"$1" | grep -oE '[0-9]+' | sort -n | tail -1)
	echo "${t:-1}"
}

# Run every case for every system, REPEAT rounds (CASE.json, then CASE@2.json, ...).
for round in $(seq "$REPEAT"); do
	suffix=$([[ $round == 1 ]] || echo "@$round")
	# Odd rounds run the systems in the order listed, even rounds in reverse, so that none
	# always runs first (cold machine) or last (after the others warmed or loaded it).
	order=("${SYSTEMS[@]}")
	if ((round % 2 == 0)); then
		order=()
		for ((i = ${#SYSTEMS[@]} - 1; i >= 0; i--)); do order+=("${SYSTEMS[i]}"); done
	fi
	for sys in "${order[@]}"; do
		IFS='|' read -r id driver url cases bin spid ccpus <<<"$sys"
		mkdir -p "$RUN/$id"
		for c in $cases; do
			echo "== round $round/$REPEAT, $id: nfsx bench ${CASES[$c]}" >&2
			log=$RUN/logs/$id-$c$suffix.txt
			args=(${CASES[$c]} --driver "$driver" --json "$RUN/$id/$c$suffix.json" --label "$id")
			[[ -n $url ]] && args+=(--url "${url//@NCONNECT@/$(max_threads "${CASES[$c]}")}")
			[[ -n $spid ]] && args+=(--server-pid "$spid")
			wrap=()
			[[ -n $ccpus ]] && wrap=(taskset -c "$ccpus")
			if ! "${wrap[@]}" "$bin" bench "${args[@]}" </dev/null >"$log" 2>&1; then
				note "$id $c (round $round) failed: $(grep -m1 -E 'FAILED|nfsx bench:' "$log" || tail -1 "$log")"
			fi
		done
	done
done
meta load_after "$(cut -d' ' -f1-3 /proc/loadavg)"

SUFFIX=
[[ $MODE == randread || $MODE == scaling ]] && SUFFIX=-$MODE
OUT=$OUT_DIR/$DATE-$HOST$SUFFIX.md
PNG=$OUT_DIR/$DATE-$HOST.png
meta seconds "$(($(date +%s) - START))"
"$NFSX" bench report "$RUN" --out "$OUT" --plot-data "$RUN/latency" --missed "$RUN/missed.tsv"

# The plot: microseconds per call by record size, one line per system (seed 004's table).
if [[ $MODE == randread || $MODE == scaling ]]; then
	# Only some cases ran: the issue's targets (other cases) would all read "not measured".
	awk '/^## Targets/ {skip = 1; next} /^## / {skip = 0} !skip' "$OUT" >"$OUT.tmp" && mv "$OUT.tmp" "$OUT"
	sed -i '/^Missed targets are profiled/d' "$OUT"
elif command -v gnuplot >/dev/null; then
	gnuplot <<EOF 2>"$RUN/logs/gnuplot.log" || note "gnuplot failed: $(tail -1 "$RUN/logs/gnuplot.log")"
set terminal png size 1200,500
set termoption noenhanced
set output "$PNG"
set multiplot layout 1,2 title "iozone O_DIRECT, ${IOZ_SIZE} file: microseconds per call ($DATE, $HOST)"
set logscale xy
set xlabel "record size (KiB)"
set ylabel "us per call"
set key top left autotitle columnhead
set grid
set title "write"
plot for [i=2:*] "$RUN/latency-write.dat" using 1:i with linespoints
set title "read"
plot for [i=2:*] "$RUN/latency-read.dat" using 1:i with linespoints
unset multiplot
EOF
else
	note "gnuplot not installed: no plot"
fi

# Profiles of the missed targets: where the time goes, client and (our) server.
profile_tool() {
	if command -v perf >/dev/null && perf stat -e instructions true 2>&1 | grep -qE '^ +[0-9,]+ +instructions'; then
		echo perf
	elif command -v valgrind >/dev/null; then
		echo callgrind
	fi
}
if [[ -s $RUN/missed.tsv && $MODE != randread && $MODE != scaling ]]; then
	TOOL=$(profile_tool)
	{
		echo "## Profiles of missed targets"
		echo
		if [[ -z $TOOL ]]; then
			echo "No profiler here (perf with hardware counters, or valgrind): none taken."
		fi
	} >>"$OUT"
	n=0
	while IFS=$'\t' read -r -u 3 c id target && [[ -n $TOOL ]]; do
		n=$((n + 1))
		pdir=$RUN/profile-$n
		mkdir -p "$pdir/export"
		chmod 1777 "$pdir/export"
		driver=nfsx
		[[ $id == *+libnfs ]] && driver=libnfs
		# Our server gets its own instance under the profiler; Ganesha is not ours to profile.
		server_note="the client only (the server is NFS-Ganesha)"
		prof_url=$URL_GANESHA
		if [[ $id == nfsx+* ]]; then
			server_note="the client and the nfsx server, each its own process"
			PERF_PID=
			if [[ $TOOL == callgrind ]]; then
				start_nfsx "$pdir/export" "$pdir/state" "$pdir/ports" \
					valgrind --tool=callgrind --callgrind-out-file="$pdir/server.cg" || continue
			else
				start_nfsx "$pdir/export" "$pdir/state" "$pdir/ports" || continue
				perf record -g -p "$SERVE_PID" -o "$pdir/server.perf" >/dev/null 2>&1 &
				PERF_PID=$!
			fi
			PROF_SERVER=$SERVE_PID
			prof_url=$(url_of "$pdir/ports" "$pdir/export")
		fi
		[[ $id == *-nc ]] && prof_url+="&nconnect=$(max_threads "${PROFILE_CASES[$c]}")"
		args=(${PROFILE_CASES[$c]} --driver "$driver" --url "$prof_url" -q)
		echo "== profile $n: $id: nfsx bench ${args[*]}" >&2
		if [[ $TOOL == callgrind ]]; then
			valgrind --tool=callgrind --callgrind-out-file="$pdir/client.cg" "$NFSX" bench "${args[@]}" \
				</dev/null >"$pdir/client.txt" 2>&1 || true
		else
			perf record -g -o "$pdir/client.perf" -- "$NFSX" bench "${args[@]}" </dev/null >"$pdir/client.txt" 2>&1 || true
		fi
		if [[ $id == nfsx+* ]]; then
			[[ -n $PERF_PID ]] && { kill -INT "$PERF_PID"; wait "$PERF_PID" || true; }
			kill -INT "$PROF_SERVER" 2>/dev/null || true
			wait "$PROF_SERVER" 2>/dev/null || true
		fi
		{
			echo "### $n. $target"
			echo
			echo "System $id, \`nfsx bench ${PROFILE_CASES[$c]}\` (reduced size), profiled with $TOOL: $server_note."
			echo "Self cost per function, top 25$([[ $TOOL == callgrind ]] && echo ' (instructions executed, Ir)')."
			echo
			for side in client server; do
				if [[ $TOOL == callgrind && -s $pdir/$side.cg ]]; then
					echo "$side:"
					echo
					echo '```'
					callgrind_annotate --inclusive=no --auto=no "$pdir/$side.cg" 2>/dev/null |
						grep -E '^ *[0-9,]+ \( *[0-9.]+%\)' | head -26 |
						sed -E 's#  [^ ]*/([^/: ]+):#  \1:#; s# \[[^]]*/([^]/]+)\]$# [\1]#' | cut -c1-180 || true
					echo '```'
					echo
				elif [[ $TOOL == perf && -s $pdir/$side.perf ]]; then
					echo "$side:"
					echo
					echo '```'
					perf report -i "$pdir/$side.perf" --stdio --no-children --sort symbol 2>/dev/null |
						grep -E '^ +[0-9.]+%' | head -25 || true
					echo '```'
					echo
				fi
			done
		} >>"$OUT"
	done 3<"$RUN/missed.tsv"
fi
echo "compare.sh: wrote $OUT$([[ -f $PNG ]] && echo " and $PNG")" >&2
