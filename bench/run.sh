#!/bin/bash
# `make bench`: what bpftrace-prof costs the programs it profiles, side by side in one run.
#
#  heap   each workload untraced, under `bpftrace-prof --heap -p` with `--unwind dwarf` and
#         with `--unwind fp`, under the floor (the same probes with empty programs,
#         bench/floor.c; per function, and through uprobe_multi links as bpftrace-prof
#         attaches them), and under the peers when installed: the equivalent bpftrace script
#         and bcc's memleak-bpfcc.  Runs alternate (round-robin, the order rotated every
#         round), ROUNDS of each; medians are reported.
#  cost   on the microbenchmark, the floor again with one piece of our per-event work at a time
#         (target filter, pending-call map, stack walk, ring buffer) or an alternative
#         (raw-IP stacks, no return probes, uprobe_multi links, a uprobe session that skips the
#         return of 63 calls in 64); the same with posix_memalign, whose first instruction the
#         kernel single-steps: the session's entry there or on the first emulated one.
#  sample --sample-bytes on a large workload: traffic and consumer work saved, accuracy
#         against the exact run of the same round.
#  cpu    --cpu=99 and --cpu=999 on a CPU-bound workload.
#  pprof  build/bench/pprof_write: writing a 100k-stack profile.
#  tables build/bench/unwind_tables: rows, bytes, kernel memory and build time of the unwind
#         tables of libc, libstdc++, libsqlite3 and python3.11.
#  depth  bench/deep_stack.c at several depths under `--heap --unwind dwarf` and `--unwind fp`,
#         with kernel.bpf_stats_enabled=1: the heap return program's run_time_ns / run_cnt per
#         event at each depth, and its slope over the frames walked = ns per frame.
#
# Every workload is started first and blocks on its stdin (a "gate"); the tracer attaches to the
# waiting process (-p PID), and the wall time runs from opening the gate to the process's exit.
# So all tools see the same window, and none of their start-up or report time is counted.
#
# Writes bench/results/latest.md (the tables, the machine, the kernel) and
# bench/results/latest-runs.tsv (every run), and prints the tables.
# Environment: BENCH_ROUNDS (default 5); BENCH_ONLY=tables,heap,cost,sample,cpu,pprof,depth
# (default all); BENCH_DEPTHS (default "8 32 96"), BENCH_DEPTH_ROUNDS (default 3).
set -u
cd "$(dirname "$0")/.." || exit 1

ROUNDS=${BENCH_ROUNDS:-5}
ONLY=${BENCH_ONLY:-tables,heap,cost,sample,cpu,pprof,depth}
# BENCH_ONLY naming none of these sections (only python's): nothing here, latest.md kept.
case ",$ONLY," in
*,tables,* | *,heap,* | *,cost,* | *,sample,* | *,cpu,* | *,pprof,* | *,depth,*) ;;
*) exit 0 ;;
esac
DEPTHS=${BENCH_DEPTHS:-8 32 96}
DEPTH_ROUNDS=${BENCH_DEPTH_ROUNDS:-3}
DEPTH_PAIRS=20000 # per run: bpf_stats gives ns per event exactly; more pairs only add time
DEPTH_PROG=heap_return # the program that walks the stack at each allocation (bpf/heap.bpf.c)
# Unwind tables are built after attaching, off the event path: give them time to be in the
# kernel before the measured pairs, or the first ones are walked by frame pointer instead.
DEPTH_SETTLE=0.3
B=build/bench
PROF=${BENCH_PROF:-./bpftrace-prof} # BENCH_PROF: another build to measure
PY=/usr/bin/python3
RES=bench/results
TMP=$(mktemp -d /tmp/bpftrace-prof-bench.XXXXXX)
RUNS=$TMP/runs.tsv
SAMPLE_N=524288      # --sample-bytes of the sampling section (the documented default rate)
SAMPLE_N_FINE=65536  # and a finer one, for the trade-off

NAME=bench # read by bench/lib.sh
# die, say and gate_spawn; the workloads, the tools and their statistics are this script's own
# (its functions of the same names below replace lib.sh's).
# shellcheck source=bench/lib.sh
. bench/lib.sh

# Processes this script started and still running: stopped on exit, by pid; the BPF statistics
# switch back to what they were.
cleanup() {
	local p
	for p in ${TOOL_PID:-} ${TIME_PID:-} ${WPID:-}; do
		kill -TERM "$p" 2>/dev/null
	done
	[ -n "${STATS_WAS:-}" ] && sysctl -qw kernel.bpf_stats_enabled="$STATS_WAS"
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

[ "$(id -u)" -eq 0 ] || die "needs root for BPF: run 'sudo make bench'"
for f in $PROF $B/floor $B/malloc_micro $B/cxx_containers $B/cpu_spin $B/pprof_write \
	$B/unwind_tables $B/deep_stack $B/sqlite_bench.sql; do
	[ -e "$f" ] || die "$f is missing: run 'make bench' (it builds everything first)"
done
# Others may rebuild the tree while we run: measure copies of the binaries taken now.
if ! cp "$PROF" "$TMP/bpftrace-prof" || ! cp "$B/floor" "$TMP/floor"; then
	die "cannot copy the binaries"
fi
PROF=$TMP/bpftrace-prof
FLOOR=$TMP/floor
REV=$(git rev-parse --short HEAD 2>/dev/null)$(git diff --quiet HEAD -- user bpf include 2>/dev/null || echo "+local changes")
[ -x /usr/bin/time ] || die "/usr/bin/time is missing: apt-get install time"
command -v go >/dev/null || die "go (golang-go) is needed to read the profiles: scripts/install-deps.sh bench"
want() { [[ ",$ONLY," == *",$1,"* ]]; }

# --- peers -------------------------------------------------------------------------------
LIBC=$(ldconfig -p | awk '/libc\.so\.6 .*x86-64/ { print $NF; exit }')
[ -n "$LIBC" ] || LIBC=/lib/x86_64-linux-gnu/libc.so.6
HAVE_BPFTRACE=0 HAVE_MEMLEAK=0 MEMLEAK_WHY=""
command -v bpftrace >/dev/null && HAVE_BPFTRACE=1
# bcc compiles its programs against the running kernel's headers.  When the kernel is not
# Debian's (no /lib/modules/$(uname -r)/build), point bcc at Debian's linux-headers package:
# memleak's program only needs struct pt_regs and the BPF helpers, which those headers have.
if command -v memleak-bpfcc >/dev/null; then
	kdir=/lib/modules/$(uname -r)
	if [ ! -e "$kdir/build/include/linux/kconfig.h" ] && [ ! -e "$kdir/source/include/linux/kconfig.h" ]; then
		hdr=$(find /usr/src -maxdepth 1 -name 'linux-headers-*-amd64' 2>/dev/null | sort -V | tail -1)
		if [ -n "$hdr" ] && [ -d "${hdr%-amd64}-common" ]; then
			say "bcc: no headers for kernel $(uname -r); using $hdr (symlinks in $kdir)"
			mkdir -p "$kdir" && ln -sfn "$hdr" "$kdir/build" && ln -sfn "${hdr%-amd64}-common" "$kdir/source"
		fi
	fi
	if [ -e "$kdir/build/include/linux/kconfig.h" ] || [ -e "$kdir/source/include/linux/kconfig.h" ] ||
		[ -e /sys/kernel/kheaders.tar.xz ]; then
		HAVE_MEMLEAK=1
	else
		MEMLEAK_WHY="bcc finds no kernel headers (apt-get install linux-headers-amd64)"
	fi
else
	MEMLEAK_WHY="memleak-bpfcc not installed (bpfcc-tools)"
fi
[ $HAVE_BPFTRACE = 1 ] || say "bpftrace not installed: its column is skipped"
[ $HAVE_MEMLEAK = 1 ] || say "memleak-bpfcc skipped: $MEMLEAK_WHY"

# The bpftrace equivalent of our heap tracing: size per thread at entry, block -> size and
# bytes per user stack at return, forget the block at free.  Filtered by pid, as users write it
# (bpftrace's -p does not restrict uprobes to the process; it only ends when the process does).
bpftrace_script() { # PID
	cat <<EOF
uprobe:$LIBC:malloc /pid == $1/ { @size[tid] = arg0; }
uprobe:$LIBC:calloc /pid == $1/ { @size[tid] = arg0 * arg1; }
uprobe:$LIBC:realloc /pid == $1/ { delete(@live[arg0]); @size[tid] = arg1; }
uretprobe:$LIBC:malloc, uretprobe:$LIBC:calloc, uretprobe:$LIBC:realloc /pid == $1 && @size[tid]/ {
	@live[retval] = @size[tid];
	@bytes[ustack] = stats(@size[tid]);
	delete(@size[tid]);
}
uprobe:$LIBC:free /pid == $1/ { delete(@live[arg0]); }
BEGIN { printf("READY\n"); }
END { clear(@live); clear(@size); }
EOF
}

# --- workloads ---------------------------------------------------------------------------
declare -A WCMD WIN WOUT
WCMD[malloc_micro]="$B/malloc_micro --gate 200000"
WCMD[micro_500k]="$B/malloc_micro --gate 500000"
WCMD[aligned_100k]="$B/malloc_micro --gate --aligned 100000"
WCMD[cxx_containers]="$B/cxx_containers --gate 4"
WCMD[sqlite3]="sqlite3 :memory:"
WIN[sqlite3]=$B/sqlite_bench.sql # its gate is its script: sqlite3 blocks reading stdin
WCMD[python3]="$PY bench/py_workload.py --gate 2"
WCMD[mixed_1m]="$B/malloc_micro --gate --mixed 1000000"
WCMD[cpu_spin]="$B/cpu_spin --gate 100"
for depth in $DEPTHS; do
	WCMD[deep_$depth]="$B/deep_stack --gate $depth $DEPTH_PAIRS"
	WOUT[deep_$depth]=1 # it says "done" on stdout, then waits for its stdin to close
done

# Start workload NAME blocked on its gate; sets WPID and GATE (a write fd to its stdin).
# Its stdout goes to $TMP/workload.out when WOUT[NAME] is set.
start_workload() { # NAME
	local out=/dev/null
	[ -n "${WOUT[$1]:-}" ] && out=$TMP/workload.out
	# shellcheck disable=SC2086
	gate_spawn "workload $1" "$out" ${WCMD[$1]}
}

# Open the gate, wait for the workload's exit; sets WALL (seconds) and WRC.  A workload that
# says "done" (WOUT) is held there until the tool's program statistics are read (PROG_STATS).
open_gate() { # NAME
	local t0 t1 i
	t0=$EPOCHREALTIME
	if [ -n "${WIN[$1]:-}" ]; then cat "${WIN[$1]}" >&"$GATE"; else printf 'g\n' >&"$GATE"; fi
	if [ -n "${WOUT[$1]:-}" ]; then
		for ((i = 0; i < 60000; i++)); do
			grep -q '^done' "$TMP/workload.out" 2>/dev/null && break
			kill -0 "$WPID" 2>/dev/null || break
			sleep 0.01
		done
		[ -n "${TOOL_PID:-}" ] && PROG_STATS=$(prog_stats "$TOOL_PID" "$DEPTH_PROG")
	fi
	exec {GATE}>&-
	wait "$WPID"
	WRC=$?
	t1=$EPOCHREALTIME
	WPID=
	WALL=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.6f", b - a }')
}

# Wait until file F matches PATTERN (and TOOL_PID is alive); 0 when it did.
wait_log() { # FILE PATTERN SECONDS
	local i
	for ((i = 0; i < $3 * 100; i++)); do
		grep -q "$2" "$1" 2>/dev/null && return 0
		kill -0 "$TIME_PID" 2>/dev/null || return 1
		sleep 0.01
	done
	return 1
}

# Start the tool of VARIANT on $WPID under /usr/bin/time -v; wait until it is attached.
# Sets TIME_PID, TOOL_PID (the tool itself), READY_S; returns 1 when it did not start.
start_tool() { # VARIANT RUNDIR
	local v=$1 d=$2 t0 i
	local cmd=()
	TIME_PID="" TOOL_PID=""
	case $v in
	ours) cmd=("$PROF" -vv --heap -p "$WPID" -o "$d/out.pb.gz" --top 0) ;;
	ours_dwarf | ours_fp)
		cmd=("$PROF" -vv --heap --unwind "${v#ours_}" -p "$WPID" -o "$d/out.pb.gz" --top 0)
		;;
	sampled) cmd=("$PROF" -vv --heap --sample-bytes "$SAMPLE_N" -p "$WPID" -o "$d/out.pb.gz" --top 0) ;;
	sampled_fine) cmd=("$PROF" -vv --heap --sample-bytes "$SAMPLE_N_FINE" -p "$WPID" -o "$d/out.pb.gz" --top 0) ;;
	cpu99) cmd=("$PROF" -v --cpu=99 -p "$WPID" -o "$d/out.pb.gz" --top 0) ;;
	cpu999) cmd=("$PROF" -v --cpu=999 -p "$WPID" -o "$d/out.pb.gz" --top 0) ;;
	floor) cmd=("$FLOOR" -p "$WPID") ;;
	floor_filter) cmd=("$FLOOR" -p "$WPID" --filter) ;;
	floor_pending) cmd=("$FLOOR" -p "$WPID" --pending) ;;
	floor_stack) cmd=("$FLOOR" -p "$WPID" --stack) ;;
	floor_ringbuf) cmd=("$FLOOR" -p "$WPID" --ringbuf) ;;
	floor_all) cmd=("$FLOOR" -p "$WPID" --filter --pending --stack --ringbuf) ;;
	floor_entry) cmd=("$FLOOR" -p "$WPID" --entry-only) ;;
	floor_rawstack) cmd=("$FLOOR" -p "$WPID" --rawstack) ;;
	floor_multi) cmd=("$FLOOR" -p "$WPID" --multi) ;;
	floor_session) cmd=("$FLOOR" -p "$WPID" --session) ;;
	floor_session_first) cmd=("$FLOOR" -p "$WPID" --session --first-insn) ;;
	floor_entry_first) cmd=("$FLOOR" -p "$WPID" --entry-only --first-insn) ;;
	bpftrace)
		bpftrace_script "$WPID" >"$d/peer.bt"
		cmd=(bpftrace -p "$WPID" "$d/peer.bt")
		;;
	memleak) cmd=(env PYTHONUNBUFFERED=1 memleak-bpfcc -p "$WPID") ;;
	*) die "unknown variant $v" ;;
	esac
	t0=$EPOCHREALTIME
	# Without the gate's write end: sqlite3 must see its script end when we close ours.
	/usr/bin/time -v -o "$d/time.txt" "${cmd[@]}" >"$d/log" 2>&1 {GATE}>&- &
	TIME_PID=$!
	for ((i = 0; i < 100; i++)); do
		TOOL_PID=$(pgrep -P "$TIME_PID" | head -1)
		[ -n "$TOOL_PID" ] && break
		sleep 0.01
	done
	case $v in
	ours* | sampled* | cpu*) wait_log "$d/log" "^bpftrace-prof: profiling " 60 ;;
	floor*) wait_log "$d/log" "^READY" 60 ;;
	bpftrace) wait_log "$d/log" "^READY" 120 ;;
	memleak)
		# It says "Attaching" before attaching; it is attached once it sleeps between reports.
		wait_log "$d/log" "Attaching to pid" 300 &&
			for ((i = 0; i < 6000; i++)); do
				[[ "$(cat "/proc/$TOOL_PID/syscall" 2>/dev/null)" == "230 "* ]] && break
				kill -0 "$TOOL_PID" 2>/dev/null || return 1
				sleep 0.01
			done
		;;
	esac || return 1
	READY_S=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.3f", b - a }')
}

# After the workload's exit: let the tool finish (memleak never does by itself), reap it.
stop_tool() { # VARIANT
	local i
	[ -n "$TIME_PID" ] || return 0
	[ "$1" = memleak ] && kill -TERM "$TOOL_PID" 2>/dev/null
	for ((i = 0; i < 12000; i++)); do
		kill -0 "$TIME_PID" 2>/dev/null || break
		[ $i = 6000 ] && { say "$1 still running 60 s after the workload: SIGINT"; kill -INT "$TOOL_PID"; }
		sleep 0.01
	done
	kill -0 "$TIME_PID" 2>/dev/null && kill -KILL "$TOOL_PID" 2>/dev/null
	wait "$TIME_PID" 2>/dev/null
	TIME_PID="" TOOL_PID=""
}

# run_time_ns and run_cnt of the program NAME among those process PID holds (its fds' prog_id:
# other engineers' profilers on this machine load programs of the same name).
prog_stats() { # PID NAME
	local ids
	ids=$(sed -n 's/^prog_id:[[:space:]]*//p' /proc/"$1"/fdinfo/* 2>/dev/null | sort -u | paste -sd,)
	[ -n "$ids" ] || return 0
	bpftool -j prog show 2>/dev/null | $PY -c '
import json, sys
ids = {int(x) for x in sys.argv[1].split(",")}
# NAME, or NAME_multi where the files are on uprobe_multi links: the one that ran most
best = max((p for p in json.load(sys.stdin) if p["id"] in ids and
            p.get("name") in (sys.argv[2], sys.argv[2] + "_multi")),
           key=lambda p: p.get("run_cnt", 0), default=None)
if best:
    print(best.get("run_time_ns", 0), best.get("run_cnt", 0))' "$ids" "$2"
}

# Frames of the heaviest stack (by allocations) in a heap profile, and the unwinder's counters
# from the profile's comments: "FRAMES CUT FP_FRAMES" (CUT: stacks the unwinder ended early,
# whatever the reason; FP_FRAMES: frames it walked by frame pointer instead).
profile_frames() { # FILE
	go tool pprof -symbolize=none -traces -sample_index=alloc_objects "$1" 2>/dev/null | awk '
		function flush() { if (n > 0 && v > best) { best = v; frames = n }; n = 0 }
		# the stop reasons only (the other unwind_* lines are table statistics)
		/^unwind_(no_mapping|no_table_yet|no_table_never|unsupported|read_fault|cfa_stuck|depth|fp_frames)=[0-9]/ {
			split($1, kv, "=")
			if (kv[1] == "unwind_fp_frames") fp += kv[2]; else cut += kv[2]
			next
		}
		/^-+\+-+$/ { flush(); next }
		n == 0 && /^ +[a-z_]+:  / { next } # labels, before the frames
		n == 0 && /^ +[0-9][0-9.]* +[^ ]/ { v = $1 + 0; n = 1; next }
		n > 0 && /^ +[^ ]/ { n++ }
		END { flush(); printf "%d %d %d\n", frames, cut, fp }'
}

time_field() { # FILE "Label"
	sed -n "s/^[[:space:]]*$2: *//p" "$1" 2>/dev/null | head -1
}

# Sum of one sample index over a profile (go tool pprof is the independent decoder).
pprof_total() { # FILE INDEX
	go tool pprof -symbolize=none -top -nodecount=1 -unit=B -sample_index="$2" "$1" 2>/dev/null |
		sed -n 's/.* of \([0-9.]*\)B* total.*/\1/p' | head -1
}

# Uprobes attached by anyone when we are attached to nothing: another profiler running on the
# machine (another session's `-- CMD` run probes every process's libc) slows our workloads.
foreign_uprobes() {
	bpftool perf list 2>/dev/null | grep -c uprobe
}

printf 'section\tworkload\tvariant\tround\twall_s\tready_s\trss_kb\tcpu_s\tvctx\tevents\tringbuf_full\tdropped\tallocs\tprobes\tforeign\tprog_ns\tprog_cnt\tframes\tcut\tfp_frames\tok\n' >"$RUNS"

# One measured run: workload NAME under VARIANT; appends a line to $RUNS.
run_one() { # SECTION NAME VARIANT ROUND
	local sec=$1 name=$2 v=$3 r=$4 d ok=1 rss=0 cpu=0 vctx=0 events="" rbf="" dropped="" allocs="" probes="" foreign
	local prog_ns="" prog_cnt="" frames="" cut="" fp_frames=""
	d=$TMP/run.$sec.$name.$v.$r
	mkdir -p "$d"
	foreign=$(foreign_uprobes)
	READY_S=0 TIME_PID="" TOOL_PID="" PROG_STATS=""
	start_workload "$name"
	if [ "$v" != untraced ] && ! start_tool "$v" "$d"; then
		say "$v did not start on $name (round $r):"
		tail -5 "$d/log" >&2
		stop_tool "$v"
		ok=0
	fi
	[ "$sec" = depth ] && [ "$ok" = 1 ] && sleep "$DEPTH_SETTLE"
	open_gate "$name"
	stop_tool "$v"
	[ "$WRC" = 0 ] || { say "$name exited with $WRC under $v"; ok=0; }
	if [ -s "$d/time.txt" ]; then
		rss=$(time_field "$d/time.txt" "Maximum resident set size (kbytes)")
		cpu=$(awk -v u="$(time_field "$d/time.txt" "User time (seconds)")" \
			-v s="$(time_field "$d/time.txt" "System time (seconds)")" 'BEGIN { print u + s }')
		vctx=$(time_field "$d/time.txt" "Voluntary context switches")
	fi
	case $v in
	ours* | sampled*)
		read -r events rbf dropped < <(sed -n 's/.*events: \([0-9]*\) in .*dropped \([0-9]*\) (ringbuf_full \([0-9]*\)).*/\1 \3 \2/p' "$d/log" | tail -1)
		allocs=$(pprof_total "$d/out.pb.gz" alloc_objects)
		probes=$(grep -c "probing [^ ]* at " "$d/log") # one line per function
		[ "$sec" = sample ] && cp "$d/out.pb.gz" "$TMP/sample.$v.$r.pb.gz"
		if [ "$sec" = depth ]; then
			read -r prog_ns prog_cnt <<<"$PROG_STATS"
			read -r frames cut fp_frames < <(profile_frames "$d/out.pb.gz")
			# Statistics off during the run (someone else switched them): no figure.
			[ "${prog_cnt:-0}" -ge "$DEPTH_PAIRS" ] || { say "no BPF statistics for $name/$v"; ok=0; }
		fi
		;;
	cpu*)
		allocs=$(pprof_total "$d/out.pb.gz" samples) # cpu samples taken
		;;
	floor*)
		events=$(sed -n 's/^floor: events //p' "$d/log")
		probes=$(sed -n 's/^floor: probed \([0-9]*\) functions/\1/p' "$d/log")
		[[ $v == *ringbuf* || $v == floor_all ]] || events=""
		;;
	esac
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' \
		"$sec" "$name" "$v" "$r" "$WALL" "$READY_S" "${rss:-0}" "${cpu:-0}" "${vctx:-0}" "$events" \
		"$rbf" "$dropped" "$allocs" "$probes" "$foreign" "$prog_ns" "$prog_cnt" "$frames" "$cut" \
		"$fp_frames" "$ok" >>"$RUNS"
	printf '  %-7s %-15s %-15s round %s: %8.3f s%s\n' "$sec" "$name" "$v" "$r" "$WALL" \
		"$([ "$ok" = 1 ] || echo "  (FAILED)")" >&2
	rm -rf "$d"
}

# ROUNDS (or NROUNDS) rounds over the variants, the order rotated by one every round.
rounds() { # SECTION NAME VARIANT...
	local sec=$1 name=$2 r i n
	shift 2
	local vs=("$@")
	n=${#vs[@]}
	for ((r = 1; r <= ${NROUNDS:-$ROUNDS}; r++)); do
		for ((i = 0; i < n; i++)); do
			run_one "$sec" "$name" "${vs[$(((i + r - 1) % n))]}" "$r"
		done
	done
}

peers=()
[ $HAVE_BPFTRACE = 1 ] && peers+=(bpftrace)
[ $HAVE_MEMLEAK = 1 ] && peers+=(memleak)

LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
START=$(date +%s)
say "results in $RES/latest.md; $ROUNDS rounds; peers: ${peers[*]:-none}"
: >"$TMP/tables.txt"
if want tables; then
	# Best of 10 builds each; exit status 1 when a file is missing or refused (its line is absent).
	# PyTorch's libtorch_cpu (120 MB, python3-torch) stands for the big libraries (issue 28).
	tables=(/lib/x86_64-linux-gnu/libc.so.6 /usr/lib/x86_64-linux-gnu/libstdc++.so.6
		/usr/lib/x86_64-linux-gnu/libsqlite3.so.0 /usr/bin/python3.11)
	for f in /usr/lib/x86_64-linux-gnu/libtorch_cpu.so.*; do
		[ -f "$f" ] && tables+=("$f")
	done
	# A generated file of 5 M rows (tests/targets/gen_big_cfi.py) stands for the 450 MB ones.
	tables+=(build/targets/big_cfi.elf)
	$B/unwind_tables -n 10 "${tables[@]}" >"$TMP/tables.txt" || say "unwind_tables: some files failed (see above)"
	cat "$TMP/tables.txt" >&2
fi
if want heap; then
	# floor_multi: the floor through the uprobe_multi links bpftrace-prof itself attaches with
	# where the kernel takes them (a failed run where it does not: left out, the floor stays).
	heap_variants=(untraced ours_dwarf ours_fp floor floor_multi "${peers[@]}")
	rounds heap malloc_micro "${heap_variants[@]}"
	rounds heap cxx_containers "${heap_variants[@]}"
	rounds heap sqlite3 "${heap_variants[@]}"
	rounds heap python3 "${heap_variants[@]}"
fi
if want cost; then
	rounds cost micro_500k untraced floor floor_entry floor_filter floor_pending floor_stack \
		floor_rawstack floor_ringbuf floor_all ours floor_multi floor_session
	rounds cost aligned_100k untraced floor floor_entry floor_entry_first floor_session \
		floor_session_first
fi
if want sample; then
	rounds sample mixed_1m untraced ours sampled sampled_fine
	# Per-function values of every sampled and exact profile, for the accuracy table.
	for f in "$TMP"/sample.*.pb.gz; do
		[ -e "$f" ] || continue
		base=${f##*/sample.}
		v=${base%%.*}
		r=${base#*.}
		r=${r%%.*}
		for idx in alloc_objects alloc_space inuse_space; do
			go tool pprof -symbolize=none -top -nodefraction=0 -nodecount=100000 -unit=B \
				-sample_index=$idx "$f" 2>/dev/null |
				awk -v v="$v" -v r="$r" -v idx="$idx" '
					/ of .* total/ { t = $0; sub(/.* of /, "", t); sub(/B? total.*/, "", t); print v "\t" r "\t" idx "\tTOTAL\t" t }
					$6 ~ /_objs$/ { x = $1; sub(/B$/, "", x); print v "\t" r "\t" idx "\t" $6 "\t" x }'
		done
	done >"$TMP/sample_funcs.tsv"
fi
if want cpu; then
	rounds cpu cpu_spin untraced cpu99 cpu999
fi
if want depth; then
	STATS_WAS=$(sysctl -n kernel.bpf_stats_enabled) || die "cannot read kernel.bpf_stats_enabled"
	sysctl -qw kernel.bpf_stats_enabled=1 || die "cannot enable kernel.bpf_stats_enabled"
	for depth in $DEPTHS; do
		NROUNDS=$DEPTH_ROUNDS rounds depth "deep_$depth" ours_dwarf ours_fp
	done
	sysctl -qw kernel.bpf_stats_enabled="$STATS_WAS"
	STATS_WAS=""
fi
PPROF_LINE=""
if want pprof; then
	PPROF_LINE=$($B/pprof_write 2>&1 | tail -1)
	say "$PPROF_LINE"
fi
LOAD_END=$(cut -d' ' -f1-3 /proc/loadavg)

# --- report ------------------------------------------------------------------------------
mkdir -p "$RES"
{
	echo "date=$(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "kernel=$(uname -r)"
	echo "rev=$REV"
	echo "cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
	echo "nproc=$(nproc)"
	echo "mem=$(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo)"
	# shellcheck disable=SC1091 # the host's file, not ours
	echo "os=$(. /etc/os-release && echo "$PRETTY_NAME")"
	echo "glibc=$(ldd --version | head -1 | awk '{ print $NF }')"
	echo "bpftrace=$(bpftrace --version 2>/dev/null | awk '{ print $2 }')"
	echo "bcc=$(dpkg-query -W -f='${Version}' bpfcc-tools 2>/dev/null)"
	echo "memleak_why=$MEMLEAK_WHY"
	echo "rounds=$ROUNDS"
	echo "load_start=$LOAD_START"
	echo "load_end=$LOAD_END"
	echo "minutes=$(( ($(date +%s) - START + 30) / 60 ))"
	echo "sample_n=$SAMPLE_N"
	echo "sample_n_fine=$SAMPLE_N_FINE"
	echo "pprof_write=$PPROF_LINE"
	echo "depth_pairs=$DEPTH_PAIRS"
	echo "depth_rounds=$DEPTH_ROUNDS"
} >"$TMP/meta.txt"
$PY bench/summarize.py "$TMP/meta.txt" "$RUNS" "$TMP/sample_funcs.tsv" "$TMP/tables.txt" >"$TMP/latest.md" ||
	die "summarizing failed; runs kept in $RES/latest-runs.tsv"
cp "$RUNS" "$RES/latest-runs.tsv"
cp "$TMP/latest.md" "$RES/latest.md"
cat "$RES/latest.md"
