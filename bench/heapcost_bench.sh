#!/bin/bash
# `make bench`, section heapcost (also alone: sudo bench/heapcost_bench.sh): what sampled heap
# profiling costs a real program, by mechanism.
#
#  steady   each workload behind a gate (it blocks reading its stdin; the profiler attaches with
#           -p meanwhile; the wall time runs from opening the gate to the workload's exit, as a
#           shell around it tells, the same for every variant),
#           HEAPCOST_ROUNDS rounds of every variant, the order rotated every round:
#             untraced       the workload alone;
#             preload_idle   started with our sampler preloaded (LD_PRELOAD), nobody listening:
#                            what the wrapper costs when no profiler is attached;
#             preload        the same, under `--heap --sample-bytes N -p PID`: the sampler fires
#                            its otel_memory probes for sampled allocations only;
#             preload_b      preload with another build of the sampler (HEAPCOST_LIB_B): an A/B
#                            of two samplers in one run (not in the default variants);
#             cmd            `--heap --sample-bytes N -- CMD`: the profiler starts the workload
#                            and preloads our sampler itself (what a user types; the workload
#                            under a timing shell, which writes the time of its exit);
#             sessions       the workload alone under `--heap --sample-bytes N -p PID`: the
#                            allocator probes as uprobe sessions (Linux 6.13), every malloc and
#                            free traps once, BPF samples, an unsampled call skips its return;
#             uprobes        the same with BPFTRACE_PROF_NO_UPROBE_SESSIONS=1 and _MULTI=1: an entry and a
#                            return uprobe per function (older kernels), every call traps twice;
#             floor_entry    bench/floor --entry-only -p PID: empty programs on the same entries
#                            and frees, no return probe (the floor sessions are measured to).
#           Workloads: Python (bench/py_workload.py), sqlite3 (the heap section's script) and a
#           PyTorch CPU training loop (bench/torch_train.py, Debian's python3-torch).
#  startup  `python3 -c 'import torch'` timed by itself (perf_counter around the import, so the
#           profiler's own start is outside the clock): untraced, `--heap --sample-bytes N --`
#           (the sampler preloaded), the same with --no-preload (uprobes), and exact `--heap --`.
#  wide     the Python and sqlite3 workloads started with our sampler preloaded, each in a
#           cgroup of its own beside a plain process mapping the same libc (sleep), under
#           `--cgroup CG --heap --sample-bytes N` (what a container that opted in gets):
#             untraced   nobody listening (steady's preload_idle, in the cgroup);
#             split      the default: once the workload (on its otel_memory probes) maps the
#                        libc, it is probed per process (the sleep on links of its own), so the
#                        workload never traps there (checked: heap_traps_otel 0, heap_procs_own);
#             filewide   BPFTRACE_PROF_NO_HEAP_SPLIT=1: the libc stays probed for every process
#                        and the workload traps on each call, BPF returning at once.
#           And what it costs the others: sqlite3 not preloaded (sqlite3_plain) beside a
#           preloaded sleep, on links of its own with K-1 plain sleeps on theirs (ownK: own1,
#           own2, own4 by default; each call runs every link on the function), against
#           filewide.
#
# Reported: medians, the spread (min-max) and the ratio of medians to untraced; each preload
# run checks that the process took the otel path (else it counts as failed).
# Environment: BENCH_ONLY (runs when unset or when it lists "heapcost"), HEAPCOST_ROUNDS (7),
# HEAPCOST_STARTUP_ROUNDS (5), HEAPCOST_SAMPLE (524288), HEAPCOST_TORCH_STEPS (100),
# HEAPCOST_WIDE_ROUNDS (5), HEAPCOST_CPU (steady's workloads pinned to it; default unpinned),
# HEAPCOST_LIB_B (preload_b's sampler), HEAPCOST_WIDE_PLAIN (sqlite3_plain's variants, default "untraced own1
# own2 own4 filewide"), HEAPCOST_ONLY (steady,startup,wide: the parts run; default all),
# HEAPCOST_WORKLOADS / HEAPCOST_VARIANTS (steady's workloads and variants, space-separated;
# default all, in the order above), HEAPCOST_STARTUP_VARIANTS (startup's, default "untraced
# preload uprobes exact").
# Writes bench/results/heapcost.md (runs: heapcost-runs.tsv), prints it.
set -u
cd "$(dirname "$0")/.." || exit 1

if [ -n "${BENCH_ONLY:-}" ] && [[ ",$BENCH_ONLY," != *",heapcost,"* ]]; then
	exit 0
fi
ROUNDS=${HEAPCOST_ROUNDS:-7}
SROUNDS=${HEAPCOST_STARTUP_ROUNDS:-5}
WROUNDS=${HEAPCOST_WIDE_ROUNDS:-5}
N=${HEAPCOST_SAMPLE:-524288}
STEPS=${HEAPCOST_TORCH_STEPS:-100}
PROF=${BENCH_PROF:-./bpftrace-prof} # BENCH_PROF: another build to measure
FLOOR=build/bench/floor
LIB=$PWD/build/libbpftrace-prof-sampler.so
LIB_B=${HEAPCOST_LIB_B:-} # preload_b: another build of the sampler, for an A/B in one run
# HEAPCOST_CPU: the steady workloads run on this CPU alone (taskset), the profiler where it
# will.  On a VM whose vCPUs differ (ours: sqlite3 0.77 s on CPU 0, 0.52 s on CPU 1) unpinned
# rounds split into two modes and a median of 9 moves by 5 %.
PIN=()
[ -z "${HEAPCOST_CPU:-}" ] || PIN=(taskset -c "$HEAPCOST_CPU")
PY=/usr/bin/python3
RES=bench/results
TMP=$(mktemp -d /tmp/bpftrace-prof-heapcost.XXXXXX)
RUNS=$TMP/runs.tsv
NAME=heapcost_bench # read by bench/lib.sh
# shellcheck source=bench/lib.sh
. bench/lib.sh

bench_prepare
[ -f "$LIB" ] || die "$LIB is missing: make all"
[ -x "$FLOOR" ] || die "$FLOOR is missing: make bench"
{ cp "$FLOOR" "$TMP/floor" && FLOOR=$TMP/floor; } || die "cannot copy $FLOOR"
# The profiler measured is a copy (bench_prepare): its sampler is looked for beside it.
{ mkdir -p "$TMP/build" && cp "$LIB" "$TMP/build/"; } || die "cannot copy $LIB"
# sqlite3's script at 10x the heap section's rows: a run long enough for a ratio.
$PY bench/gen_sqlite.py 50000 >"$TMP/sqlite.sql" || die "cannot generate the sqlite3 script"
$PY -c 'import torch' 2>/dev/null || die "$PY cannot import torch: apt-get install python3-torch"
printf 'section\tworkload\tvariant\tround\tseconds\tok\n' >"$RUNS"

declare -A WCMD
WCMD[python3]="$PY bench/py_workload.py --gate 2"
WCMD[sqlite3]="sqlite3 :memory:"
WCMD[torch]="$PY bench/torch_train.py --gate $STEPS"

# The timing shell every steady variant runs its workload under: TIMED END CMD... runs CMD and
# writes the time of its exit to END.
# shellcheck disable=SC2016 # expanded by the inner bash
TIMED=(bash -c '"${@:2}"; s=$?; echo "$EPOCHREALTIME" >"$1"; exit $s' bash)

# Wait until the process DEPTH generations below ROOT (its first child, that one's first…)
# blocks on its gate: sets KID.  Dies when ROOT exits first; WHAT names the workload.
gate_wait_below() { # WHAT ROOT DEPTH
	local what=$1 root=$2 depth=$3 i d p
	for ((i = 0; i < 6000; i++)); do
		p=$root
		for ((d = 0; d < depth; d++)); do
			[ -z "$p" ] || p=$(pgrep -P "$p" | head -1)
		done
		if [ -n "$p" ] && gate_blocked "$p"; then
			KID=$p
			return 0
		fi
		kill -0 "$root" 2>/dev/null || die "$what exited before its gate: $(cat "$TMP/workload.err")"
		sleep 0.01
	done
	die "$what never reached its gate"
}

# Start workload NAME (with ENV... before it) blocked on its gate, a read of its stdin, under
# the timing shell (TIMED), as cmd_start does, so every variant is timed alike: sets WPID (the
# workload, what -p attaches to), WSH (the shell, waited for), GATE and END.  (Timed by the
# shell's wait instead, the -p variants counted the exit of a process whose pages carried
# probes, which -- CMD's timing shell did not: about 2 % of sqlite3's 0.5 s.)
gate_start() { # NAME ENV...
	local name=$1
	shift
	END=$TMP/end
	rm -f "$END"
	# shellcheck disable=SC2086
	gate_fork "$TMP/workload.out" "${PIN[@]}" "${TIMED[@]}" "$END" env "$@" ${WCMD[$name]}
	WSH=$WPID
	gate_wait_below "$name" "$WSH" 1
	WPID=$KID
}

# Open the gate (sqlite3's is its script), wait for the exit: sets SECS; 1 on failure.  (Not in
# a $(…): the workload is this shell's child.)  END: the file a timing shell writes the
# workload's exit time to (gate_start, cmd_start); without it, the time the wait ends (wide).
gate_run() { # NAME [END]
	local t0 rc end=${2:-}
	t0=$EPOCHREALTIME
	if [ "$1" = sqlite3 ]; then cat "$TMP/sqlite.sql" >&"$GATE"; else printf 'g\n' >&"$GATE"; fi
	exec {GATE}>&-
	wait "${WSH:-$WPID}"
	rc=$?
	WPID=""
	WSH=""
	if [ -n "$end" ]; then
		[ -s "$end" ] || return 1
		SECS=$(awk -v a="$t0" -v b="$(cat "$end")" 'BEGIN { printf "%.6f", b - a }')
	else
		SECS=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.6f", b - a }')
	fi
	return $rc
}

# bench/floor on the workload (ARGS: its options), until the workload exits: sets TOOL_PID.
start_floor() { # LOG ARGS...
	local log=$1
	shift
	start_bg_tool "$log" '^READY' "the floor" "$FLOOR" -p "$WPID" "$@"
}

# `--heap --sample-bytes N -- bash -c 'CMD; time of exit'`, stdin the gate: the profiler starts
# the workload and preloads our sampler; sets WPID (the profiler), GATE and END (the file the
# exit time goes to).  The workload is the shell's child: ready when it blocks on the gate.
cmd_start() { # NAME DIR
	local name=$1 d=$2
	END=$d/end
	WSH="" # the profiler (WPID) is waited for
	# shellcheck disable=SC2086
	gate_fork "$TMP/workload.out" "$PROF" -v --heap --sample-bytes "$N" -o "$d/out.pb.gz" --top 0 \
		-- "${PIN[@]}" "${TIMED[@]}" "$END" ${WCMD[$name]}
	gate_wait_below "$name under -- CMD" "$WPID" 2
}

# The process took the otel_memory path (the profile's counter says so) and its sampler fired:
# one that took itself for bypassed samples nothing (Debian's python3 until 2026-12-02, so the
# sampler's rows for Python and torch before then timed a sampler that sampled nothing).
took_otel() { # PROFILE
	[ "$(counter "$1" heap_procs_otel)" -ge 1 ] && [ "$(samples "$1")" -ge 1 ]
}

steady_one() { # NAME VARIANT ROUND
	local name=$1 v=$2 r=$3 d=$TMP/$1.$2.$3 s ok=1
	local envs=()
	SECS=0
	mkdir -p "$d"
	case $v in
	preload_idle | preload) envs=(LD_PRELOAD="$LIB" BPFTRACE_PROF_SAMPLE_BYTES="$N") ;;
	preload_b) envs=(LD_PRELOAD="$LIB_B" BPFTRACE_PROF_SAMPLE_BYTES="$N") ;;
	esac
	if [ "$v" = cmd ]; then
		cmd_start "$name" "$d"
		gate_run "$name" "$END" || { say "$name failed under $v: $(tail -2 "$TMP/workload.err")"; ok=0; }
	else
		gate_start "$name" "${envs[@]}"
	fi
	case $v in
	preload | preload_b | sessions) start_tool "$d/log" --heap --sample-bytes "$N" -o "$d/out.pb.gz" --top 0 ;;
	uprobes) BPFTRACE_PROF_NO_UPROBE_SESSIONS=1 BPFTRACE_PROF_NO_UPROBE_MULTI=1 start_tool "$d/log" --heap --sample-bytes "$N" \
		-o "$d/out.pb.gz" --top 0 ;;
	floor_entry) start_floor "$d/log" --entry-only ;;
	esac
	[ "$v" = cmd ] || gate_run "$name" "$END" || { say "$name failed under $v: $(tail -2 "$TMP/workload.err")"; ok=0; }
	s=$SECS
	stop_tool
	if [[ "$v" == preload || "$v" == preload_b || "$v" == cmd ]] && ! took_otel "$d/out.pb.gz"; then
		say "$name under $v did not take the otel_memory path, or sampled nothing"
		ok=0
	fi
	# each mechanism checked by its counter: sessions in use, or not
	if [ "$v" = sessions ] && [ "$(counter "$d/out.pb.gz" heap_session_files)" -lt 1 ]; then
		say "$name under sessions took no session link"
		ok=0
	fi
	if [ "$v" = uprobes ] && [ "$(counter "$d/out.pb.gz" heap_session_files)" != 0 ]; then
		say "$name under uprobes took a session link"
		ok=0
	fi
	printf 'steady\t%s\t%s\t%s\t%s\t%s\n' "$name" "$v" "$r" "$s" "$ok" >>"$RUNS"
	printf '  steady  %-8s %-13s round %s: %8.3f s%s\n' "$name" "$v" "$r" "$s" \
		"$([ "$ok" = 1 ] || echo "  (FAILED)")" >&2
	rm -rf "$d"
}

IMPORT="import time; t = time.perf_counter(); import torch; print('S %.6f' % (time.perf_counter() - t))"

startup_one() { # VARIANT ROUND
	local v=$1 r=$2 d=$TMP/startup.$1.$2 s ok=1
	mkdir -p "$d"
	case $v in
	untraced) $PY -c "$IMPORT" >"$d/out" 2>"$d/log" ;;
	preload) "$PROF" --heap --sample-bytes "$N" -o "$d/p.pb.gz" --top 0 -- $PY -c "$IMPORT" >"$d/out" 2>"$d/log" ;;
	uprobes) "$PROF" --heap --sample-bytes "$N" --no-preload -o "$d/p.pb.gz" --top 0 -- $PY -c "$IMPORT" >"$d/out" 2>"$d/log" ;;
	exact) "$PROF" --heap -o "$d/p.pb.gz" --top 0 -- $PY -c "$IMPORT" >"$d/out" 2>"$d/log" ;;
	esac
	s=$(sed -n 's/^S //p' "$d/out")
	[ -n "$s" ] || { say "startup under $v: no time ($(tail -2 "$d/log"))"; ok=0; s=0; }
	if [ "$v" = preload ] && [ "$ok" = 1 ] && ! took_otel "$d/p.pb.gz"; then
		say "import torch under preload did not take the otel_memory path, or sampled nothing"
		ok=0
	fi
	printf 'startup\timport_torch\t%s\t%s\t%s\t%s\n' "$v" "$r" "$s" "$ok" >>"$RUNS"
	printf '  startup import torch %-9s round %s: %8.3f s%s\n' "$v" "$r" "$s" \
		"$([ "$ok" = 1 ] || echo "  (FAILED)")" >&2
	rm -rf "$d"
}

CGROOT=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
[ -n "$CGROOT" ] || die "no cgroup2 mount"

# A process of cgroup CG in the background (ENV... CMD...): its pid appended to SIDE.
side_start() { # CG ENV...
	local cg=$1
	shift
	# shellcheck disable=SC2016 # expanded by the inner sh
	sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec env "$@"' sh "$cg" "$@" &
	SIDE+=($!)
}

# NAME: python3 or sqlite3 preloaded (the opted-in workload) beside a plain sleep, or sqlite3_plain
# (not preloaded) beside a preloaded sleep (which splits the libc) and K-1 plain sleeps (VARIANT
# ownK: the plain workload is one of K processes on links of their own; every call in the libc
# runs them all).
wide_one() { # NAME VARIANT ROUND
	local name=$1 v=$2 r=$3 d=$TMP/wide.$1.$2.$3 s ok=1 cg traps own k i wenv=() args
	mkdir -p "$d"
	cg=$CGROOT/bpftrace-prof-heapcost.$$.$r
	mkdir "$cg" || die "cannot create cgroup $cg"
	SIDE=()
	if [ "$name" = sqlite3_plain ]; then
		side_start "$cg" LD_PRELOAD="$LIB" BPFTRACE_PROF_SAMPLE_BYTES="$N" sleep 600
		k=1
		[[ "$v" == own* ]] && k=${v#own}
		for ((i = 1; i < k; i++)); do side_start "$cg" sleep 600; done
	else
		side_start "$cg" sleep 600
		wenv=(LD_PRELOAD="$LIB" BPFTRACE_PROF_SAMPLE_BYTES="$N")
	fi
	sleep 0.2 # the side processes exec'd
	# shellcheck disable=SC2016,SC2086
	gate_spawn "$name" "$TMP/workload.out" sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' \
		sh "$cg" env "${wenv[@]}" ${WCMD[${name%_plain}]}
	args=(-v --cgroup "$cg" --heap --sample-bytes "$N" -o "$d/out.pb.gz" --top 0)
	case $v in
	split | own*) start_bg_tool "$d/log" '^bpftrace-prof: profiling ' "the profiler" \
		"$PROF" "${args[@]}" ;;
	filewide) start_bg_tool "$d/log" '^bpftrace-prof: profiling ' "the profiler" \
		env BPFTRACE_PROF_NO_HEAP_SPLIT=1 "$PROF" "${args[@]}" ;;
	esac
	gate_run "${name%_plain}" || { say "$name failed under wide $v: $(tail -2 "$TMP/workload.err")"; ok=0; }
	s=$SECS
	if [ -n "${TOOL_PID:-}" ]; then
		kill -INT "$TOOL_PID"
		stop_tool
		traps=$(counter "$d/out.pb.gz" heap_traps_otel)
		own=$(counter "$d/out.pb.gz" heap_procs_own)
		# each variant checked by its counters
		if ! took_otel "$d/out.pb.gz"; then
			say "$name under wide $v: no process took the otel_memory path, or none sampled"
			ok=0
		elif [ "$v" = filewide ] && [ "$own" != 0 ]; then
			say "$name under wide filewide: heap_procs_own $own"
			ok=0
		elif [ "$v" != filewide ] && { [ "$own" -lt 1 ] || [ "$traps" != 0 ]; }; then
			say "$name under wide $v: heap_traps_otel $traps, heap_procs_own $own"
			ok=0
		fi
	fi
	kill "${SIDE[@]}" 2>/dev/null
	wait "${SIDE[@]}" 2>/dev/null
	rmdir "$cg" 2>/dev/null
	printf 'wide\t%s\t%s\t%s\t%s\t%s\n' "$name" "$v" "$r" "$s" "$ok" >>"$RUNS"
	printf '  wide    %-13s %-9s round %s: %8.3f s%s\n' "$name" "$v" "$r" "$s" \
		"$([ "$ok" = 1 ] || echo "  (FAILED)")" >&2
	rm -rf "$d"
}

read -r -a variants <<<"${HEAPCOST_VARIANTS:-untraced preload_idle preload cmd sessions uprobes floor_entry}"
read -r -a workloads <<<"${HEAPCOST_WORKLOADS:-python3 sqlite3 torch}"
for v in "${variants[@]}"; do
	[[ " untraced preload_idle preload preload_b cmd sessions uprobes floor_entry " == *" $v "* ]] ||
		die "HEAPCOST_VARIANTS: no variant '$v'"
	[ "$v" != preload_b ] || [ -f "${HEAPCOST_LIB_B:-}" ] ||
		die "HEAPCOST_VARIANTS: preload_b needs HEAPCOST_LIB_B, another build of the sampler"
done
want_part() { [ -z "${HEAPCOST_ONLY:-}" ] || [[ ",$HEAPCOST_ONLY," == *",$1,"* ]]; }
want_part steady || ROUNDS=0
want_part startup || SROUNDS=0
want_part wide || WROUNDS=0
for name in "${workloads[@]}"; do
	[ -n "${WCMD[$name]:-}" ] || die "HEAPCOST_WORKLOADS: no workload '$name' (python3 sqlite3 torch)"
	for ((r = 0; r < ROUNDS; r++)); do
		for ((k = 0; k < ${#variants[@]}; k++)); do
			steady_one "$name" "${variants[(k + r) % ${#variants[@]}]}" "$r"
		done
	done
done
read -r -a svariants <<<"${HEAPCOST_STARTUP_VARIANTS:-untraced preload uprobes exact}"
for ((r = 0; r < SROUNDS; r++)); do
	for ((k = 0; k < ${#svariants[@]}; k++)); do
		startup_one "${svariants[(k + r) % ${#svariants[@]}]}" "$r"
	done
done
for name in python3 sqlite3 sqlite3_plain; do
	wvariants=(untraced split filewide)
	[ "$name" = sqlite3_plain ] && read -ra wvariants <<<"${HEAPCOST_WIDE_PLAIN:-untraced own1 own2 own4 filewide}"
	for ((r = 0; r < WROUNDS; r++)); do
		for ((k = 0; k < ${#wvariants[@]}; k++)); do
			wide_one "$name" "${wvariants[(k + r) % ${#wvariants[@]}]}" "$r"
		done
	done
done

mkdir -p "$RES"
cp "$RUNS" "$RES/heapcost-runs.tsv"
$PY - "$RUNS" "$REV" "$N" "$ROUNDS" "$SROUNDS" "$WROUNDS" "${HEAPCOST_CPU:-}" >"$RES/heapcost.md" <<'PY'
import csv, statistics, sys, platform, subprocess
runs, rev, n, rounds, srounds, wrounds, pin = sys.argv[1:8]
rows = list(csv.DictReader(open(runs), delimiter="\t"))
def vals(sec, w, v):
    return [float(r["seconds"]) for r in rows
            if r["section"] == sec and r["workload"] == w and r["variant"] == v and r["ok"] == "1"]
cpu = ""
for line in open("/proc/cpuinfo"):
    if line.startswith("model name"):
        cpu = line.split(":", 1)[1].strip()
        break
names = {"untraced": "untraced", "preload_idle": "sampler preloaded, no profiler",
         "preload": f"sampler preloaded, `--heap --sample-bytes {n} -p`",
         "preload_b": f"HEAPCOST_LIB_B's sampler preloaded, `--heap --sample-bytes {n} -p`",
         "cmd": f"`--heap --sample-bytes {n} -- CMD` (the profiler preloads the sampler)",
         "sessions": f"allocator probes as uprobe sessions, `--heap --sample-bytes {n} -p`",
         "uprobes": f"allocator uprobes (entry + return), `--heap --sample-bytes {n} -p`",
         "floor_entry": "floor: empty programs on the entries and frees, no return probe",
         "exact": "exact `--heap --` (uprobes, every allocation)"}
snames = {"untraced": "untraced", "preload": f"`--heap --sample-bytes {n} --` (our sampler preloaded)",
          "uprobes": f"`--heap --sample-bytes {n} --no-preload --` (allocator probes as sessions)",
          "exact": "exact `--heap --` (uprobes, every allocation)"}
print("# Heap profiling cost by mechanism\n")
print(f"Revision {rev}; kernel {platform.release()}; {cpu}; "
      f"{subprocess.run(['nproc'], capture_output=True, text=True).stdout.strip()} cores. "
      f"Medians of {rounds} alternated rounds (startup: {srounds}; wide: {wrounds}); "
      "spread = min-max; "
      + (f"steady's workloads pinned to CPU {pin} (HEAPCOST_CPU); " if pin else "") +
      "ratio = median / untraced median. Failed runs (a workload error, or a preload run that "
      "did not take the otel_memory path or sampled nothing) are left out and counted.\n")
def table(sec, workloads, variants, names):
    # paired: the median over rounds of the run's time over the same round's untraced run
    # (the rounds alternate the variants: a slow spell of the host touches both)
    print("| workload | variant | median s | spread s | ratio | paired ratio | runs (failed) |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for w in workloads:
        base = vals(sec, w, "untraced")
        b = statistics.median(base) if base else float("nan")
        by_round = {r["round"]: float(r["seconds"]) for r in rows if r["section"] == sec
                    and r["workload"] == w and r["variant"] == "untraced" and r["ok"] == "1"}
        for v in variants:
            x = vals(sec, w, v)
            failed = sum(1 for r in rows if r["section"] == sec and r["workload"] == w
                         and r["variant"] == v and r["ok"] != "1")
            if not x and not failed:
                continue  # not run (HEAPCOST_VARIANTS)
            if not x:
                print(f"| {w} | {names[v]} | - | - | - | - | 0 ({failed}) |")
                continue
            m = statistics.median(x)
            paired = [float(r["seconds"]) / by_round[r["round"]] for r in rows
                      if r["section"] == sec and r["workload"] == w and r["variant"] == v
                      and r["ok"] == "1" and by_round.get(r["round"])]
            pr = f"{statistics.median(paired):.3f}x" if paired else "-"
            print(f"| {w} | {names[v]} | {m:.3f} | {min(x):.3f}-{max(x):.3f} | "
                  f"{m / b:.3f}x | {pr} | {len(x)} ({failed}) |")
if int(rounds):
    print("## Steady state (wall from the gate to the exit)\n")
    table("steady", ("python3", "sqlite3", "torch"),
          ("untraced", "preload_idle", "preload", "preload_b", "cmd", "sessions", "uprobes",
           "floor_entry"), names)
    print("\nSessions against the entry-probes-only floor (issue 27's goal: within 10 %):\n")
    print("| workload | sessions ÷ floor_entry | uprobes ÷ floor_entry |")
    print("|---|---:|---:|")
    for w in ("python3", "sqlite3", "torch"):
        f = vals("steady", w, "floor_entry")
        s = vals("steady", w, "sessions")
        u = vals("steady", w, "uprobes")
        if f and s and u:
            fm = statistics.median(f)
            print(f"| {w} | {statistics.median(s) / fm:.3f}x | {statistics.median(u) / fm:.3f}x |")
if int(srounds):
    print("\n## Start-up: `python3 -c 'import torch'` (the import alone)\n")
    table("startup", ("import_torch",), ("untraced", "preload", "uprobes", "exact"), snames)
wnames = {"untraced": "no profiler",
          "split": f"`--cgroup --heap --sample-bytes {n}`: libc probed per process (default)",
          "own1": f"`--cgroup --heap --sample-bytes {n}`: libc probed per process, the workload alone on links of its own",
          "filewide": "the same, libc probed for every process (`BPFTRACE_PROF_NO_HEAP_SPLIT=1`)"}
if int(wrounds):
    print(f"\n## Wide scope ({wrounds} rounds): an opted-in workload (our sampler preloaded) beside "
          "a plain process in one cgroup\n")
    table("wide", ("python3", "sqlite3"), ("untraced", "split", "filewide"), wnames)
    print("\nA plain workload (sqlite3, not preloaded) in a cgroup where a preloaded process "
          "splits the libc: it is then on links of its own, beside K-1 plain sleeps on theirs "
          "(ownK); every call runs each link, and from two on its return probe stays armed:\n")
    own = sorted({r["variant"] for r in rows if r["section"] == "wide"
                  and r["variant"].startswith("own")}, key=lambda v: int(v[3:]))
    for v in own:
        k = int(v[3:])
        wnames.setdefault(v, f"the same, {k} processes on links of their own")
    table("wide", ("sqlite3_plain",), ["untraced"] + own + ["filewide"], wnames)
PY
cat "$RES/heapcost.md"
