#!/bin/bash
# `make bench`, section holds (also alone: sudo bench/holds_bench.sh): what the wide scopes'
# holds add to the processes they stop.
#
#  exit   HOLDS_BENCH_N runs of build/targets/short_lived (a process of a few ms: ten
#         allocations, exit) one after another in a cgroup, timed as a whole: untraced, under
#         `--cgroup --cpu --no-hold-exits` (probes and lifecycle tracepoints, no hold), with every
#         exit held (`--hold-rate 0`) and with the default rate (100 holds a second a cgroup).
#  exec   HOLDS_BENCH_EXECS copies of short_lived (distinct files: each one's first exec is
#         held, then its loader's startup), each run once: untraced, holds off, holds on.
# Variants alternate (the order rotated every round), HOLDS_BENCH_ROUNDS of each; medians of the
# wall time per process and what each variant adds to the untraced one.
#
# Environment: BENCH_ONLY (this section runs when unset or when it lists "holds"),
# HOLDS_BENCH_ROUNDS (5), HOLDS_BENCH_N (300), HOLDS_BENCH_EXECS (40).
# Writes bench/results/holds.md (every run: bench/results/holds-runs.tsv), prints it.
set -u
cd "$(dirname "$0")/.." || exit 1

if [ -n "${BENCH_ONLY:-}" ] && [[ ",$BENCH_ONLY," != *",holds,"* ]]; then
	exit 0
fi
ROUNDS=${HOLDS_BENCH_ROUNDS:-5}
N=${HOLDS_BENCH_N:-300}
EXECS=${HOLDS_BENCH_EXECS:-40}
PROF=./bpftrace-prof
RES=bench/results
TMP=$(mktemp -d /tmp/bpftrace-prof-holdsbench.XXXXXX)
RUNS=$TMP/runs.tsv
NAME=holds_bench
CG=""
# shellcheck source=bench/lib.sh
. bench/lib.sh

bench_prepare
trap 'bench_cleanup; [ -n "$CG" ] && rmdir "$CG" 2>/dev/null' EXIT
[ -x build/targets/short_lived ] || die "build/targets/short_lived is missing: make all"
root=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
[ -n "$root" ] || die "no cgroup2 mount"
CG=$root/bpftrace-prof-holdsbench.$$
mkdir "$CG" || die "cannot create $CG"
for ((i = 0; i < EXECS; i++)); do
	cp build/targets/short_lived "$TMP/short_$i" || die "cannot copy short_lived"
done

printf 'section\tvariant\tround\tprocesses\tseconds\texit_hold_fail\thold_rate_limited\thold_timeouts\n' >"$RUNS"

# One run of SECTION (exit | exec) under VARIANT (untraced | noholds | holds | rate).
run() { # SECTION VARIANT ROUND
	local s=$1 v=$2 r=$3 d=$TMP/$1.$2.$3 t0 t1 n args=()
	mkdir -p "$d"
	case $v in
	noholds) args=(--no-hold-exits) ;;
	holds) args=(--hold-rate 0) ;;
	rate) args=() ;;
	esac
	if [ "$v" != untraced ]; then
		"$PROF" -v --cgroup "$CG" --cpu -o "$d/out.pb.gz" --top 0 "${args[@]}" >"$d/log.out" 2>"$d/log" &
		TOOL_PID=$!
		wait_started "$d/log" || die "the profiler did not start: $(tail -3 "$d/log")"
	fi
	# Outside the clock: the shell moves itself into the cgroup, then the loop runs there.
	t0=$(date +%s.%N)
	# shellcheck disable=SC2016 # the loops are the child shell's
	if [ "$s" = exit ]; then
		n=$N
		setsid sh -c 'echo $$ >"$1/cgroup.procs" && i=0 && while [ $i -lt "$2" ]; do
			build/targets/short_lived >/dev/null; i=$((i + 1)); done' sh "$CG" "$N" </dev/null
	else
		n=$EXECS
		setsid sh -c 'echo $$ >"$1/cgroup.procs" && i=0 && while [ $i -lt "$2" ]; do
			"$3/short_$i" >/dev/null; i=$((i + 1)); done' sh "$CG" "$EXECS" "$TMP" </dev/null
	fi
	t1=$(date +%s.%N)
	if [ "$v" != untraced ]; then
		kill -INT "$TOOL_PID"
		stop_tool
	fi
	local fail=0 limited=0 timeouts=0
	if [ "$v" != untraced ]; then
		fail=$(counter "$d/out.pb.gz" exit_hold_fail)
		limited=$(counter "$d/out.pb.gz" hold_rate_limited)
		timeouts=$(counter "$d/out.pb.gz" hold_timeouts)
	fi
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$s" "$v" "$r" "$n" \
		"$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.6f", b - a }')" "$fail" "$limited" "$timeouts" >>"$RUNS"
}

wait_started() { # LOG
	local i
	for ((i = 0; i < 6000; i++)); do
		grep -q '^bpftrace-prof: profiling ' "$1" 2>/dev/null && return 0
		kill -0 "$TOOL_PID" 2>/dev/null || return 1
		sleep 0.01
	done
	return 1
}

exit_variants=(untraced noholds holds rate)
exec_variants=(untraced noholds holds)
for ((r = 0; r < ROUNDS; r++)); do
	say "round $((r + 1))/$ROUNDS"
	for ((k = 0; k < ${#exit_variants[@]}; k++)); do
		run exit "${exit_variants[(k + r) % ${#exit_variants[@]}]}" "$r"
	done
	for ((k = 0; k < ${#exec_variants[@]}; k++)); do
		run exec "${exec_variants[(k + r) % ${#exec_variants[@]}]}" "$r"
	done
done

mkdir -p "$RES"
cp "$RUNS" "$RES/holds-runs.tsv"
python3 - "$RUNS" "$REV" "$N" "$EXECS" "$ROUNDS" >"$RES/holds.md" <<'PY'
import csv, statistics, sys, platform, subprocess
runs, rev, n, execs, rounds = sys.argv[1:6]
rows = list(csv.DictReader(open(runs), delimiter="\t"))
def med(section, variant, field):
    v = [float(r[field]) / (float(r["processes"]) if field == "seconds" else 1)
         for r in rows if r["section"] == section and r["variant"] == variant]
    return statistics.median(v) if v else float("nan")
names = {"untraced": "untraced", "noholds": "--cgroup --cpu --no-hold-exits",
         "holds": "--cgroup --cpu --hold-rate 0 (every hold)",
         "rate": "--cgroup --cpu (default --hold-rate 100)"}
print(f"# Holds: what they add to the processes they stop\n")
print(f"Revision {rev}; kernel {platform.release()}; {subprocess.run(['nproc'], capture_output=True, text=True).stdout.strip()} cores; "
      f"medians of {rounds} rounds.\n")
for section, title, variants in (
        ("exit", f"Exit holds: {n} runs of one short program (ms per process)", ("untraced", "noholds", "holds", "rate")),
        ("exec", f"Exec and loader-startup holds: {execs} distinct copies, each run once (ms per process)", ("untraced", "noholds", "holds"))):
    base = med(section, "untraced", "seconds")
    print(f"## {title}\n")
    print("| variant | ms per process | added ms | hold_rate_limited | hold_timeouts |")
    print("|---|---:|---:|---:|---:|")
    for v in variants:
        t = med(section, v, "seconds")
        print(f"| {names[v]} | {t * 1000:.2f} | {(t - base) * 1000:+.2f} | "
              f"{med(section, v, 'hold_rate_limited'):.0f} | {med(section, v, 'hold_timeouts'):.0f} |")
    print()
PY
cat "$RES/holds.md"
